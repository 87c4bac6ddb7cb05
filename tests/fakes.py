"""Test doubles and message builders shared by every test package (one definition each).

`FakeSummarizer` stands in for the model behind `summarize(prompt) -> str`; `tool_call` builds one OpenAI tool
call; `free_port` finds a TCP port for a server a test starts.
"""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["FakeSummarizer", "tool_call", "free_port"]


class FakeSummarizer:
    """summarize(prompt) -> text, recording every prompt (thread-safe); raises RuntimeError when told to fail.

    `reply` is the fixed text, or a function (call number, prompt) -> text for replies that depend on the
    prompt. `fail=True` raises "LLM unavailable"; a string raises with that message.
    """

    def __init__(self, reply: str | Callable[[int, str], str] = "Summarized content", *,
                 fail: bool | str = False) -> None:
        self.reply, self.fail = reply, fail
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            number = len(self.prompts)
        if self.fail:
            raise RuntimeError(self.fail if isinstance(self.fail, str) else "LLM unavailable")
        return self.reply(number, prompt) if callable(self.reply) else self.reply

    @property
    def calls(self) -> int:
        return len(self.prompts)


def tool_call(call_id: str, name: str = "terminal", arguments: str | dict[str, Any] = "{}") -> dict[str, Any]:
    """One tool call of an assistant message; dict arguments are JSON-encoded."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": encoded}}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
