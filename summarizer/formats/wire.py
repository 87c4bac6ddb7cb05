"""What the two wire formats (anthropic.py, responses.py) share: the extension key, data URLs and the block merge.

A wire request maps onto our canonical messages; whatever has no counterpart there (thinking signatures,
cache_control, citations, documents, item ids, unknown blocks or items) rides along in one extension key of
the message (`"anthropic"` or `"responses"`), which the app stores verbatim in `Message.extra`. An importer
attaches the extension only when exporting the bare message would not give the original back, so plain
messages stay plain. An exporter rebuilds the wire shape from the canonical fields, using the extension's
original blocks as a template: a block whose canonical counterpart is unchanged goes back verbatim, a changed
one is rebuilt, blocks without a counterpart go back as they were, and parts the engine added are appended.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from summarizer.formats.common import FormatError

__all__ = ["data_url", "split_data_url", "extension", "with_extension", "merge_blocks", "require_str",
           "bare", "IssuedCalls"]

Block = dict[str, Any]
Part = dict[str, Any]


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


def split_data_url(url: str) -> tuple[str, str] | None:
    """(media type, base64 data) of a `data:...;base64,...` URL, None for any other URL."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    media_type, data = url[5:].split(";base64,", 1)
    return media_type, data


def extension(msg: dict[str, Any], key: str) -> dict[str, Any]:
    """The message's extension under `key` ({} when it has none or it is not an object)."""
    value = msg.get(key)
    return value if isinstance(value, dict) else {}


def with_extension(msg: dict[str, Any], key: str, ext: dict[str, Any]) -> dict[str, Any]:
    """`msg` with `ext` under `key` (nothing added for an empty extension)."""
    if ext:
        msg[key] = ext
    return msg


def bare(msg: dict[str, Any], key: str) -> dict[str, Any]:
    """`msg` without its extension: what the engine may have changed is compared on this."""
    return {k: v for k, v in msg.items() if k != key}


def require_str(value: Any, what: str, index: int, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        raise FormatError(f"{what} must be a {'non-empty ' if not empty else ''}string", index=index)
    return value


def merge_blocks(template: list[Block], current: list[Part], to_part: Callable[[Block], Part | None],
                 from_part: Callable[[Part, Block | None], Block]) -> list[Block]:
    """Blocks for `current` parts, reusing the template's block wherever its part is unchanged.

    `to_part(block)` is the block's canonical part (None: the block has no counterpart and is kept as it
    is); `from_part(part, like)` builds a block for a part, taking what the part cannot carry from `like`.
    Template blocks whose part is gone are dropped; parts beyond the template are appended.
    """
    parts = list(current)
    out: list[Block] = []
    for block in template:
        mapped = to_part(block)
        if mapped is None:
            out.append(block)
        elif parts:
            part = parts.pop(0)
            out.append(block if part == mapped else from_part(part, block))
    return out + [from_part(part, None) for part in parts]


class IssuedCalls:
    """The tool-call ids a request has issued so far: a result must answer one of them."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def issue(self, call_id: str) -> None:
        self.ids.add(call_id)

    def check(self, call_id: str, what: str, index: int) -> None:
        if call_id not in self.ids:
            raise FormatError(f"{what} {call_id!r} answers a call that was never issued", index=index)
