"""Deterministic fake summarizers and chain builders for the compaction tests (no model, no network)."""
from __future__ import annotations

import re

from summarizer.compact.prompt import REQUIRED_HEADINGS
from summarizer.identifiers import extract_identifiers
from tests.fakes import tool_call

_USER_BLOCK = re.compile(r"\[user\]\n(.*?)(?:\n\n\[|\n</conversation>|$)", re.DOTALL)
_RULES_END = "Output only the checkpoint, no preamble."
_GOAL = re.compile(r"## Goal\n(.*?)\n## ", re.DOTALL)


class Checkpoint:
    """A well-behaved summarizer: structured, keeps every identifier and the latest ask; records prompts."""

    def __init__(self, drop_identifiers: bool = False, fail: Exception | None = None, text: str | None = None):
        self.prompts: list[str] = []
        self.drop_identifiers, self.fail, self.text = drop_identifiers, fail, text

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail is not None:
            raise self.fail
        if self.text is not None:
            return self.text
        body = prompt.split(_RULES_END, 1)[-1]
        ids = [] if self.drop_identifiers else extract_identifiers(body)
        asks = _USER_BLOCK.findall(body)
        # A merge prompt has no user messages, only earlier checkpoints: carry their goals forward.
        ask = asks[-1][:300] if asks else " ".join(g for g in _GOAL.findall(body) if g != "Continue.")
        sections = {h: "None." for h in REQUIRED_HEADINGS}
        sections["## Goal"] = ask or "Continue."
        sections["## Critical context"] = "\n".join(ids) or "None."
        return "\n".join(f"{h}\n{v}" for h, v in sections.items())

    @property
    def calls(self) -> int:
        return len(self.prompts)


WORDS = ("scan", "host", "port", "service", "enumerate", "credential", "share", "domain", "kerberos", "ticket",
         "hash", "crack", "exploit", "payload", "shell", "privilege", "escalate", "report", "finding", "target")


def words(n_words: int, seed: int = 0) -> str:
    return " ".join(WORDS[(seed + i * 7) % len(WORDS)] for i in range(n_words))


def call(cid: str, name: str = "terminal", args: str = '{"cmd": "nmap -sV 10.0.0.5"}') -> dict:
    return tool_call(cid, name, args)


def tool_turn(cid: str, result_words: int, seed: int = 0) -> list[dict]:
    return [{"role": "assistant", "content": None, "tool_calls": [call(cid)]},
            {"role": "tool", "tool_call_id": cid, "content": words(result_words, seed)}]


def chain(turns: int = 6, rounds: int = 4, result_words: int = 600, system_words: int = 200) -> list[dict]:
    """system + `turns` user turns, each with `rounds` tool rounds and a closing answer."""
    out = [{"role": "system", "content": "You are a pentest agent. " + words(system_words)}]
    for t in range(turns):
        out.append({"role": "user", "content": f"Task {t}: check host 10.0.{t}.5 and report. " + words(30, t)})
        for r in range(rounds):
            out.extend(tool_turn(f"call_{t}_{r}", result_words, seed=t * 31 + r))
        out.append({"role": "assistant", "content": f"Turn {t} done: " + words(40, t)})
    return out
