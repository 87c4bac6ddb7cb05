"""The deterministic tail of a compaction summary: tool failures, files read and modified, recent turns.

OpenClaw's "safeguard" compaction appends sections that no summarizer writes (acceptance facts 39-42), so they
survive whatever the model does with the body: the tool calls that failed (with status and exit code), the files
the agent read and the files it modified, and optionally the most recent turns quoted verbatim. Mapped onto our
OpenAI-format messages:
  - a tool result is a failure when it carries `is_error`/`isError`, or `details` with status failed/error or a
    non-zero `exitCode` (the details are read here only; they never reach a summarizer, fact 3);
  - reads and writes come from the assistants' tool calls: file tools by name with a path-like argument
    (read_file, write_file, edit, apply_patch, str_replace_based_edit_tool ...) and shell commands in a
    terminal call (cat / head / tail / sed -n read; sed -i, tee, touch and `>` redirections modify).
The body is capped at 16,000 characters with a visible marker, and the suffix is kept whole at the end (its
tail when the suffix alone is over the cap).
"""
from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from summarizer.compact.truncate import tool_result_text

__all__ = [
    "ToolFailure", "FileOperations", "collect_tool_failures", "format_tool_failures_section",
    "compute_file_operations", "compute_file_lists", "format_file_operations", "cap_compaction_summary",
    "cap_preserving_suffix", "append_summary_section", "assemble_suffix", "resolve_recent_turns_preserve",
    "resolve_quality_guard_max_retries", "split_preserved_recent_turns", "format_preserved_turns_section",
    "MAX_TOOL_FAILURES", "MAX_TOOL_FAILURE_CHARS", "MAX_COMPACTION_SUMMARY_CHARS", "MAX_FILE_OPS_SECTION_CHARS",
    "MAX_FILE_OPS_LIST_CHARS", "SUMMARY_TRUNCATED_MARKER", "TOOL_FAILURES_HEADING", "PRESERVED_TURNS_HEADING",
    "DEFAULT_RECENT_TURNS_PRESERVE", "MAX_RECENT_TURNS_PRESERVE", "DEFAULT_QUALITY_GUARD_MAX_RETRIES",
    "MAX_QUALITY_GUARD_MAX_RETRIES", "MAX_RECENT_TURN_TEXT_CHARS",
]

Message = dict[str, Any]
MAX_TOOL_FAILURES = 8
MAX_TOOL_FAILURE_CHARS = 240
MAX_COMPACTION_SUMMARY_CHARS = 16_000
MAX_FILE_OPS_SECTION_CHARS = 2_000
MAX_FILE_OPS_LIST_CHARS = 900
SUMMARY_TRUNCATED_MARKER = "\n\n[Compaction summary truncated to fit budget]"
TOOL_FAILURES_HEADING = "## Tool Failures"
PRESERVED_TURNS_HEADING = "## Recent turns preserved verbatim"
DEFAULT_RECENT_TURNS_PRESERVE = 3
MAX_RECENT_TURNS_PRESERVE = 12
DEFAULT_QUALITY_GUARD_MAX_RETRIES = 1
MAX_QUALITY_GUARD_MAX_RETRIES = 3
MAX_RECENT_TURN_TEXT_CHARS = 600

_FAILED_STATUSES = frozenset({"failed", "error", "errored"})
_READ_TOOLS = frozenset({"read", "read_file", "readfile", "file_read", "view_file", "open_file", "get_file",
                         "cat_file"})
_WRITE_TOOLS = frozenset({"write", "write_file", "writefile", "file_write", "create_file", "save_file"})
_EDIT_TOOLS = frozenset({"edit", "edit_file", "apply_patch", "patch", "str_replace", "replace_in_file", "multi_edit",
                         "multiedit"})
_EDITOR_TOOLS = frozenset({"str_replace_based_edit_tool", "str_replace_editor", "text_editor"})
_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "paths", "files")
_SHELL_KEYS = ("command", "cmd", "input", "script")
_SHELL_READERS = frozenset({"cat", "head", "tail", "less", "more", "nl", "strings", "xxd", "hexdump", "wc"})
_SHELL_WRITERS = frozenset({"tee", "touch"})
_COMMAND_SPLIT_RE = re.compile(r"\|\||&&|[;|\n]")
_REDIRECT_RE = re.compile(r"(?<![0-9&<])>>?\s*([^\s;&|<>]+)")
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "-"})


# ------------------------------------------------------------------------------------------ tool failures

@dataclass(frozen=True)
class ToolFailure:
    tool_call_id: str
    tool_name: str
    summary: str
    meta: str | None = None


def _details(message: Message) -> dict[str, Any]:
    details = message.get("details")
    return details if isinstance(details, dict) else {}


def _exit_code(details: dict[str, Any]) -> int | None:
    code = details.get("exitCode", details.get("exit_code"))
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _is_failure(message: Message) -> bool:
    if message.get("role") != "tool":
        return False
    if message.get("is_error") is True or message.get("isError") is True:
        return True
    details = _details(message)
    status = details.get("status")
    code = _exit_code(details)
    return (isinstance(status, str) and status.lower() in _FAILED_STATUSES) or bool(code)


def _failure_meta(details: dict[str, Any]) -> str | None:
    status, code = details.get("status"), _exit_code(details)
    parts = [f"status={status}" if isinstance(status, str) and status else "",
             f"exitCode={code}" if code is not None else ""]
    return " ".join(p for p in parts if p) or None


def _call_names(messages: Iterable[Message]) -> dict[str, str]:
    return {str(c.get("id", "")): str((c.get("function") or {}).get("name") or "tool")
            for m in messages for c in m.get("tool_calls") or [] if isinstance(c, dict)}


def collect_tool_failures(messages: Sequence[Message]) -> list[ToolFailure]:
    """Failed tool results in order, one per tool_call_id (the first wins), texts whitespace-normalised and
    capped at MAX_TOOL_FAILURE_CHARS (fact 39)."""
    names = _call_names(messages)
    failures: list[ToolFailure] = []
    seen: set[str] = set()
    for message in messages:
        call_id = str(message.get("tool_call_id") or "")
        if not _is_failure(message) or not call_id or call_id in seen:
            continue
        seen.add(call_id)
        name = message.get("name") if isinstance(message.get("name"), str) and message["name"].strip() else None
        meta = _failure_meta(_details(message))
        text = " ".join(tool_result_text(message.get("content")).split())
        text = text or ("failed" if meta else "failed (no output)")
        if len(text) > MAX_TOOL_FAILURE_CHARS:
            text = text[:MAX_TOOL_FAILURE_CHARS - 3] + "..."
        failures.append(ToolFailure(call_id, name or names.get(call_id, "tool"), text, meta))
    return failures


def format_tool_failures_section(failures: Sequence[ToolFailure]) -> str:
    """`\\n\\n## Tool Failures` with one line per failure (at most 8, then "...and N more"); "" for none."""
    if not failures:
        return ""
    lines = [f"- {f.tool_name}{f' ({f.meta})' if f.meta else ''}: {f.summary}" for f in failures[:MAX_TOOL_FAILURES]]
    if len(failures) > MAX_TOOL_FAILURES:
        lines.append(f"- ...and {len(failures) - MAX_TOOL_FAILURES} more")
    return f"\n\n{TOOL_FAILURES_HEADING}\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------ files

@dataclass
class FileOperations:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    raw = (call.get("function") or {}).get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _is_path(token: str) -> bool:
    token = token.strip()
    if not token or token.startswith("-") or "://" in token or token in _NOT_FILES or any(c.isspace() for c in token):
        return False
    return "/" in token or bool(re.fullmatch(r"[\w.~+@%-]*\.[A-Za-z0-9]{1,8}", token))


def _argument_paths(args: dict[str, Any]) -> list[str]:
    values: list[Any] = []
    for key in _PATH_KEYS:
        value = args.get(key)
        values += value if isinstance(value, list) else [value]
    return [v.strip() for v in values if isinstance(v, str) and _is_path(v)]


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, posix=True)
    except ValueError:  # an unbalanced quote: plain split is good enough to find paths
        return command.split()


def _shell_operations(command: str, ops: FileOperations) -> None:
    for path in _REDIRECT_RE.findall(command):
        if _is_path(path):
            ops.written.add(path)
    for part in _COMMAND_SPLIT_RE.split(_REDIRECT_RE.sub(" ", command)):
        words = _words(part)
        if not words:
            continue
        name, args = words[0].rsplit("/", 1)[-1], words[1:]
        if name == "sudo" and args:
            name, args = args[0].rsplit("/", 1)[-1], args[1:]
        operands = [a for a in args if not a.startswith("-")]
        if name == "sed":
            in_place = any(a == "-i" or (a.startswith("-i") and not a.startswith("--")) or a.startswith("--in-place")
                           for a in args)
            files = [a for a in (operands[1:] if "-e" not in args else operands) if _is_path(a)]
            (ops.edited if in_place else ops.read).update(files)
        elif name in _SHELL_READERS:
            ops.read.update(a for a in operands if _is_path(a))
        elif name in _SHELL_WRITERS:
            ops.written.update(a for a in operands if _is_path(a))


def _call_operations(name: str, args: dict[str, Any], ops: FileOperations) -> None:
    low = name.lower()
    paths = _argument_paths(args)
    if low in _READ_TOOLS:
        ops.read.update(paths)
    elif low in _WRITE_TOOLS:
        ops.written.update(paths)
    elif low in _EDIT_TOOLS:
        ops.edited.update(paths)
    elif low in _EDITOR_TOOLS:
        command = str(args.get("command", ""))
        target = ops.read if command == "view" else ops.written if command == "create" else ops.edited
        target.update(paths)
    for key in _SHELL_KEYS:
        if isinstance(args.get(key), str):
            _shell_operations(args[key], ops)
            break


def compute_file_operations(messages: Sequence[Message]) -> FileOperations:
    """Files read, written and edited by the assistants' tool calls (file tools and shell commands)."""
    ops = FileOperations()
    for message in messages:
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                _call_operations(str((call.get("function") or {}).get("name") or ""), _arguments(call), ops)
    return ops


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """(read files that were not modified, modified files), each sorted."""
    modified = ops.edited | ops.written
    return sorted(ops.read - modified), sorted(modified)


def _bounded_file_list(tag: str, files: Sequence[str], max_chars: int) -> str:
    if not files or max_chars <= 0:
        return ""
    open_tag, close_tag = f"<{tag}>\n", f"\n</{tag}>"
    lines: list[str] = []
    used = len(open_tag) + len(close_tag)
    for index, path in enumerate(files):
        line = f"{path}\n"
        remaining = len(files) - index - 1
        overflow_line = f"...and {remaining} more\n" if remaining else ""
        if used + len(line) + len(overflow_line) > max_chars:
            overflow = f"...and {len(files) - index} more\n"
            if used + len(overflow) <= max_chars:
                lines.append(overflow)
            break
        lines.append(line)
        used += len(line)
    return f"{open_tag}{''.join(lines)}{close_tag}" if lines else ""


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """`<read-files>` and `<modified-files>` lists, each within 900 chars with "...and N more", the whole
    section within 2,000 chars (fact 40); "" when there are none."""
    sections = [s for s in (_bounded_file_list("read-files", read_files, MAX_FILE_OPS_LIST_CHARS),
                            _bounded_file_list("modified-files", modified_files, MAX_FILE_OPS_LIST_CHARS)) if s]
    return cap_compaction_summary("\n\n" + "\n\n".join(sections), MAX_FILE_OPS_SECTION_CHARS) if sections else ""


# ------------------------------------------------------------------------------------------ caps (fact 41)

def cap_compaction_summary(summary: str, max_chars: int = MAX_COMPACTION_SUMMARY_CHARS) -> str:
    """`summary` cut to `max_chars` with the truncation marker; a budget too small for the marker keeps a
    plain prefix (no partial marker)."""
    if max_chars <= 0 or len(summary) <= max_chars:
        return summary
    room = max_chars - len(SUMMARY_TRUNCATED_MARKER)
    return summary[:max_chars] if room <= 0 else summary[:room] + SUMMARY_TRUNCATED_MARKER


def cap_preserving_suffix(body: str, suffix: str, max_chars: int = MAX_COMPACTION_SUMMARY_CHARS) -> str:
    """Body + suffix within `max_chars`: the body is cut first; a suffix over the cap keeps its tail (the
    diagnostic sections at the end matter more than the quoted turns at its start)."""
    if not suffix:
        return cap_compaction_summary(body, max_chars)
    if max_chars <= 0:
        return cap_compaction_summary(body + suffix, max_chars)
    if len(suffix) >= max_chars:
        return suffix[-max_chars:]
    return cap_compaction_summary(body, max_chars - len(suffix)) + suffix


def append_summary_section(summary: str, section: str) -> str:
    if not section:
        return summary
    return section.lstrip() if not summary.strip() else summary + section


def assemble_suffix(sections: Iterable[str]) -> str:
    """The sections joined, always starting with a blank line so the suffix never runs into the body."""
    suffix = ""
    for section in sections:
        suffix = append_summary_section(suffix, section or "")
    return suffix if not suffix or suffix[0].isspace() else "\n\n" + suffix


# ------------------------------------------------------------------------------------------ recent turns (fact 42)

def _clamped(value: Any, default: int, maximum: int) -> int:
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else default
    if number != number or number in (float("inf"), float("-inf")):  # NaN / infinities fall back to the default
        number = default
    return min(maximum, max(0, int(number // 1)))


def resolve_recent_turns_preserve(value: Any) -> int:
    """Turns to quote verbatim: unset → 3, negative → 0, at most 12."""
    return _clamped(value, DEFAULT_RECENT_TURNS_PRESERVE, MAX_RECENT_TURNS_PRESERVE)


def resolve_quality_guard_max_retries(value: Any) -> int:
    """Audit retries: unset → 1, negative → 0, at most 3."""
    return _clamped(value, DEFAULT_QUALITY_GUARD_MAX_RETRIES, MAX_QUALITY_GUARD_MAX_RETRIES)


def _preserved_indexes(messages: Sequence[Message], turns: int) -> set[int]:
    talk = [i for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]
    users = [i for i in talk if messages[i].get("role") == "user"]
    if len(users) >= turns:
        return {i for i in talk if i >= users[-turns]}
    kept = set(users)  # fewer user turns than asked: every user message plus the newest ones, 2 per turn
    for index in reversed(talk):
        if len(kept) >= turns * 2:
            break
        kept.add(index)
    return kept


def split_preserved_recent_turns(messages: Sequence[Message], recent_turns: int
                                 ) -> tuple[list[Message], list[Message]]:
    """(messages to summarize, messages quoted verbatim) for the newest `recent_turns` user turns (clamped
    0..12). The results of a preserved assistant's tool calls are preserved with it; a summarizable tool
    result whose call is not summarizable is dropped from the summarizer's input (no orphans)."""
    turns = _clamped(recent_turns, 0, MAX_RECENT_TURNS_PRESERVE)
    if turns <= 0 or not any(m.get("role") in ("user", "assistant") for m in messages):
        return list(messages), []
    kept = _preserved_indexes(messages, turns)
    call_ids = {str(c.get("id")) for i in kept for c in messages[i].get("tool_calls") or [] if isinstance(c, dict)}
    start = min(kept)
    kept |= {i for i in range(start, len(messages)) if messages[i].get("role") == "tool"
             and str(messages[i].get("tool_call_id")) in call_ids}
    rest = [m for i, m in enumerate(messages) if i not in kept]
    rest_calls = {str(c.get("id")) for m in rest for c in m.get("tool_calls") or [] if isinstance(c, dict)}
    rest = [m for m in rest if m.get("role") != "tool" or str(m.get("tool_call_id")) in rest_calls]
    return rest, [m for i, m in enumerate(messages) if i in kept]


def format_preserved_turns_section(messages: Sequence[Message]) -> str:
    """`\\n\\n## Recent turns preserved verbatim` with one line per message (600 chars each); "" for none."""
    names = _call_names(messages)
    lines = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            label = f"Tool result ({message.get('name') or names.get(str(message.get('tool_call_id')), 'tool')})"
        elif role in ("user", "assistant"):
            label = "User" if role == "user" else "Assistant"
        else:
            continue
        text = tool_result_text(message.get("content")).strip()
        if text:
            trimmed = text if len(text) <= MAX_RECENT_TURN_TEXT_CHARS else text[:MAX_RECENT_TURN_TEXT_CHARS] + "..."
            lines.append(f"- {label}: {trimmed}")
    return f"\n\n{PRESERVED_TURNS_HEADING}\n" + "\n".join(lines) if lines else ""
