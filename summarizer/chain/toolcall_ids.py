"""Tool-call id templates (PentAGI's `tool_call_id_template`): generate, validate, detect.

A template is literal text plus `{r:N:charset}` (N random characters) and `{f}` (the function name).
Providers reject ids that do not look like their own, so summary calls and normalized chains use the
template of the provider that will read the chain.
"""
from __future__ import annotations

import hashlib
import random
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_ID_TEMPLATE", "ANTHROPIC_ID_TEMPLATE", "CHARSETS", "IdTemplate", "parse_id_template",
    "generate_id", "id_matches", "detect_id_template", "content_rng",
]

DEFAULT_ID_TEMPLATE = "call_{r:24:x}"
ANTHROPIC_ID_TEMPLATE = "toolu_{r:24:b}"
_ALNUM = string.ascii_letters + string.digits
CHARSETS = {
    "d": string.digits, "digit": string.digits,
    "l": string.ascii_lowercase, "lower": string.ascii_lowercase,
    "u": string.ascii_uppercase, "upper": string.ascii_uppercase,
    "a": string.ascii_letters, "alpha": string.ascii_letters,
    "x": _ALNUM, "alnum": _ALNUM,  # x is alphanumeric, NOT hex (PentAGI's choice)
    "h": "0123456789abcdef", "hex": "0123456789abcdef",
    "H": "0123456789ABCDEF", "HEX": "0123456789ABCDEF",
    "b": string.digits + string.ascii_uppercase + string.ascii_lowercase,
    "base62": string.digits + string.ascii_uppercase + string.ascii_lowercase,
}
_TOKEN = re.compile(r"\{r:(\d+):([A-Za-z0-9]+)\}|\{f\}")
_RNG = random.SystemRandom()


@dataclass(frozen=True)
class IdTemplate:
    """A parsed template: a tuple of ("lit", text) | ("rand", (length, charset)) | ("func", None)."""

    source: str
    tokens: tuple[tuple[str, Any], ...]

    def generate(self, function_name: str = "", rng: random.Random | None = None) -> str:
        rng = rng or _RNG
        out = []
        for kind, value in self.tokens:
            if kind == "lit":
                out.append(value)
            elif kind == "func":
                out.append(function_name)
            else:
                length, chars = value
                out.append("".join(rng.choice(chars) for _ in range(length)))
        return "".join(out)

    def matches(self, call_id: str, function_name: str | None = None) -> bool:
        pattern = []
        for kind, value in self.tokens:
            if kind == "lit":
                pattern.append(re.escape(value))
            elif kind == "func":
                pattern.append(re.escape(function_name) if function_name is not None else ".+?")
            else:
                length, chars = value
                pattern.append(f"[{re.escape(chars)}]{{{length}}}")
        return re.fullmatch("".join(pattern), call_id) is not None


def parse_id_template(template: str) -> IdTemplate:
    """Parse a template; an unknown charset or a zero length is a ValueError."""
    if not isinstance(template, str) or not template:
        raise ValueError("tool-call id template must be a non-empty string")
    tokens: list[tuple[str, Any]] = []
    pos = 0
    for m in _TOKEN.finditer(template):
        if m.start() > pos:
            tokens.append(("lit", template[pos:m.start()]))
        if m.group(0) == "{f}":
            tokens.append(("func", None))
        else:
            length, charset = int(m.group(1)), m.group(2)
            if charset not in CHARSETS:
                raise ValueError(f"unknown charset {charset!r} in tool-call id template {template!r}")
            if length <= 0:
                raise ValueError(f"random run length must be positive in {template!r}")
            tokens.append(("rand", (length, CHARSETS[charset])))
        pos = m.end()
    if pos < len(template):
        tokens.append(("lit", template[pos:]))
    return IdTemplate(template, tuple(tokens))


def content_rng(*parts: str) -> random.Random:
    """A generator seeded from `parts`: ids derived from content make the same chain give byte-identical views
    (and token counts) on every run, which a system-random id cannot."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(digest, "big"))


def generate_id(template: str, function_name: str = "", rng: random.Random | None = None) -> str:
    return parse_id_template(template).generate(function_name, rng)


def id_matches(call_id: str, template: str, function_name: str | None = None) -> bool:
    return parse_id_template(template).matches(call_id, function_name)


def detect_id_template(messages: Iterable[dict[str, Any]]) -> str:
    """Resolution 2: the newest tool-call id decides; `toolu_…` means Anthropic's form, else OpenAI's."""
    last = None
    for msg in messages:
        for call in msg.get("tool_calls") or ():
            last = call.get("id") or last
    if last is not None and last.startswith("toolu_"):
        return ANTHROPIC_ID_TEMPLATE
    return DEFAULT_ID_TEMPLATE
