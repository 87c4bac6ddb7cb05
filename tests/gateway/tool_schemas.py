"""Twenty tool schemas shaped like a pentest agent's (our own wording): descriptions, enums, nested objects,
arrays and optional fields, about 5,000 tokens as a provider renders them. What real agents send; the fit
must make room for them."""
from __future__ import annotations

from typing import Any


def _param(kind: str, description: str, **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


_COMMON = {
    "message": _param("string", "A short note for the operator explaining why this step is taken now and what "
                                "result is expected, written in the language of the task."),
    "timeout_seconds": _param("integer", "Hard limit for the step; the step is stopped and reported as timed "
                                         "out when it is reached. Use larger values for full scans."),
}

_SPECS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("terminal", "Run a shell command inside the isolated attack container and return its standard output and "
     "standard error. Commands run in a persistent working directory; long-running commands should be given "
     "a timeout. Never run interactive programs that wait for input.",
     {"input": _param("string", "The exact command line to execute, including arguments and redirections."),
      "cwd": _param("string", "Working directory for the command; defaults to the task's directory."),
      "detach": _param("boolean", "Start the command in the background and return at once.")}, ["input"]),
    ("file_read", "Read a text file from the container's file system and return its content with line numbers. "
     "Large files are returned in pages; ask for the next page with the offset parameter.",
     {"path": _param("string", "Absolute path of the file to read."),
      "offset": _param("integer", "First line to return, counting from 1."),
      "limit": _param("integer", "Maximum number of lines to return.")}, ["path"]),
    ("file_write", "Create or overwrite a text file in the container, for scripts, payloads, notes or "
     "configuration. Parent directories are created when missing.",
     {"path": _param("string", "Absolute path of the file to write."),
      "content": _param("string", "The complete new content of the file."),
      "mode": _param("string", "How to write the file.", enum=["overwrite", "append", "create_only"])},
     ["path", "content"]),
    ("port_scan", "Scan a host or network range for open TCP or UDP ports and identify the services behind "
     "them. Results list the port, protocol, state, service name and version banner when known.",
     {"target": _param("string", "Host name, IP address or CIDR range to scan."),
      "ports": _param("string", "Port list or ranges, for example 22,80,443 or 1-1024."),
      "protocol": _param("string", "Transport protocol to scan.", enum=["tcp", "udp", "both"]),
      "intensity": _param("integer", "Scan intensity from 0 (polite) to 5 (insane)."),
      "service_detection": _param("boolean", "Probe open ports to identify service versions.")}, ["target"]),
    ("http_request", "Send an HTTP request to a web application and return the status, headers and body. "
     "Useful to probe endpoints, replay captured requests and test input handling.",
     {"url": _param("string", "Full URL including scheme, host, path and query string."),
      "method": _param("string", "HTTP method.", enum=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD",
                                                       "OPTIONS"]),
      "headers": {"type": "object", "description": "Request headers as name/value pairs.",
                  "properties": {"name": _param("string", "Header name."),
                                 "value": _param("string", "Header value.")}},
      "body": _param("string", "Request body, sent as given."),
      "follow_redirects": _param("boolean", "Follow 3xx responses up to ten times.")}, ["url", "method"]),
    ("dir_bruteforce", "Discover hidden paths on a web server by requesting names from a word list and "
     "reporting those that do not answer 404.",
     {"base_url": _param("string", "URL under which paths are tried."),
      "wordlist": _param("string", "Word list to use.", enum=["common", "medium", "large", "api"]),
      "extensions": {"type": "array", "description": "File extensions appended to every word.",
                     "items": _param("string", "An extension without the dot.")},
      "threads": _param("integer", "Parallel requests.")}, ["base_url"]),
    ("sql_injection_test", "Test a request parameter for SQL injection with boolean, error, time and "
     "union based techniques, and report the database type and injectable parameters found.",
     {"url": _param("string", "Target URL with the parameter to test."),
      "parameter": _param("string", "Name of the parameter to test."),
      "technique": _param("string", "Techniques to use.", enum=["boolean", "error", "time", "union", "all"]),
      "level": _param("integer", "Test depth from 1 to 5."),
      "dump": _param("boolean", "Extract table names once an injection is confirmed.")}, ["url", "parameter"]),
    ("password_attack", "Try credentials against a network service (ssh, ftp, http forms, smb) from user and "
     "password lists, stopping at the first valid pair unless told otherwise.",
     {"service": _param("string", "Service to attack.", enum=["ssh", "ftp", "http-form", "smb", "rdp", "mysql"]),
      "target": _param("string", "Host and optional port."),
      "users": {"type": "array", "items": _param("string", "A user name."), "description": "User names to try."},
      "password_list": _param("string", "Password list name or path."),
      "stop_on_success": _param("boolean", "Stop at the first valid credential.")}, ["service", "target"]),
    ("exploit_search", "Search the local exploit database for public exploits matching a product and "
     "version, returning titles, identifiers, platforms and paths of the exploit code.",
     {"query": _param("string", "Product name and version, for example 'vsftpd 2.3.4'."),
      "platform": _param("string", "Restrict to a platform such as linux, windows or php."),
      "type": _param("string", "Kind of exploit.", enum=["remote", "local", "webapps", "dos", "any"])},
     ["query"]),
    ("web_search", "Search the public web for documentation, advisories and write-ups, returning titles, "
     "links and short extracts of the best results.",
     {"query": _param("string", "The search query."),
      "max_results": _param("integer", "Number of results to return, at most 10.")}, ["query"]),
    ("browser", "Open a page in a headless browser, run its scripts, and return the rendered text, the links "
     "and a screenshot reference, for applications that need JavaScript.",
     {"url": _param("string", "Page to open."),
      "action": _param("string", "What to return.", enum=["markdown", "html", "links", "screenshot"]),
      "wait_for": _param("string", "CSS selector to wait for before reading the page.")}, ["url", "action"]),
    ("memory_store", "Store a finding, credential or observation in the long-term memory of the flow so that "
     "other agents and later steps can retrieve it.",
     {"text": _param("string", "The fact to remember, self-contained."),
      "tags": {"type": "array", "items": _param("string", "A tag."), "description": "Tags to find it again."},
      "importance": _param("string", "How important it is.", enum=["low", "medium", "high", "critical"])},
     ["text"]),
    ("memory_search", "Search the long-term memory of the flow for stored findings related to a question.",
     {"question": _param("string", "What you want to know."),
      "tags": {"type": "array", "items": _param("string", "A tag."), "description": "Only entries with these."},
      "limit": _param("integer", "Maximum number of entries.")}, ["question"]),
    ("report_finding", "Record a confirmed vulnerability for the final report with its severity, evidence and "
     "remediation advice.",
     {"title": _param("string", "Short title of the vulnerability."),
      "severity": _param("string", "Severity rating.", enum=["info", "low", "medium", "high", "critical"]),
      "cvss": _param("number", "CVSS base score when known."),
      "evidence": _param("string", "Commands, requests and outputs proving the issue."),
      "remediation": _param("string", "How to fix it."),
      "affected": {"type": "array", "description": "Affected assets.", "items": {
          "type": "object", "properties": {"host": _param("string", "Host or URL."),
                                           "port": _param("integer", "Port when relevant.")}}}},
     ["title", "severity", "evidence"]),
    ("delegate_pentester", "Hand a focused penetration-testing subtask to the pentester agent and wait for "
     "its result. Describe the goal, the scope and what is already known.",
     {"question": _param("string", "The subtask, with scope and known facts."),
      "context": _param("string", "Relevant findings so far.")}, ["question"]),
    ("delegate_coder", "Ask the coder agent to write or fix a script or exploit and return its path and usage.",
     {"question": _param("string", "What the code must do, inputs and outputs."),
      "language": _param("string", "Preferred language.", enum=["python", "bash", "go", "c", "javascript"])},
     ["question"]),
    ("delegate_searcher", "Ask the searcher agent to research a topic on the web and in memory and return a "
     "summary with sources.",
     {"question": _param("string", "The research question."),
      "depth": _param("string", "How thorough.", enum=["quick", "normal", "deep"])}, ["question"]),
    ("install_package", "Install a tool or library in the attack container with the system package manager "
     "or pip, and report the installed version.",
     {"name": _param("string", "Package name."),
      "manager": _param("string", "Package manager.", enum=["apt", "pip", "gem", "go", "npm"]),
      "version": _param("string", "Version constraint, when one is needed.")}, ["name", "manager"]),
    ("ask_user", "Ask the operator a question when the task is ambiguous or an action needs approval; the "
     "flow waits for the answer.",
     {"question": _param("string", "The question, with the options you see."),
      "options": {"type": "array", "items": _param("string", "An option."), "description": "Suggested answers."}},
     ["question"]),
    ("done", "Finish the current subtask and report its result to the agent that delegated it.",
     {"success": _param("boolean", "Whether the subtask reached its goal."),
      "result": _param("string", "The result in detail: what was done, found and left open."),
      "next_steps": {"type": "array", "items": _param("string", "A step."), "description": "Suggested next."}},
     ["success", "result"]),
]


def tool_schemas() -> list[dict[str, Any]]:
    """The twenty tools in the Chat Completions shape, each with the common `message` and timeout fields."""
    return [{"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {**props, **_COMMON}, "required": required,
                       "additionalProperties": False}}} for name, description, props, required in _SPECS]
