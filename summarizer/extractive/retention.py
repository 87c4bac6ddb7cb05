"""The retention score of a compaction: which findings and identifiers of the replaced messages the new view
still carries (issue 23 item 5).

The things counted are what the offline summarizer and the ledger keep (the same detection: findings of
`summarizer.identifiers.extract_findings`, opaque identifiers minus tool noise, host/domain/user/CA names). The
score is kept / counted (1.0 when nothing was counted); `lost` lists what is gone, secrets (credentials,
hashes, passwords) first, so a page can flag a compaction that lost one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from summarizer.chain.messages import content_text
from summarizer.extractive.facts import is_noise_class
from summarizer.identifiers import extract_findings, extract_identifiers, extract_names, missing_identifiers

__all__ = ["Retention", "retention_of", "SECRET_KINDS"]

SECRET_KINDS = ("credential", "hash", "password")
_LOST_SHOWN = 50  # at most this many lost items are stored: the score counts them all


@dataclass(frozen=True)
class Retention:
    score: float
    counted: int
    kept: int
    lost: list[dict[str, str]] = field(default_factory=list)

    @property
    def lost_secret(self) -> bool:
        return any(item["kind"] in SECRET_KINDS for item in self.lost)

    def as_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 4), "counted": self.counted, "kept": self.kept,
                "lost": self.lost[:_LOST_SHOWN], "lost_secret": self.lost_secret}


def _text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        parts.append(content_text(message))
        parts.extend(str(c.get("function", {}).get("arguments", "")) for c in message.get("tool_calls") or ())
    return "\n".join(parts)


def _counted(text: str) -> list[tuple[str, str]]:
    """(kind, value) of everything worth carrying in `text`, findings first, each value once."""
    items: dict[str, str] = {}
    for finding in extract_findings(text):
        items.setdefault(finding.value.rstrip("…"), finding.kind)
    for identifier in extract_identifiers(text):
        if not is_noise_class(identifier) and len(identifier) <= 200:
            items.setdefault(identifier, "identifier")
    for name in extract_names(text):
        items.setdefault(name, "name")
    return [(kind, value) for value, kind in items.items()]


def retention_of(replaced: list[dict[str, Any]], view: list[dict[str, Any]]) -> Retention:
    """How much of what `replaced` held the new `view` still carries."""
    counted = _counted(_text(replaced))
    if not counted:
        return Retention(1.0, 0, 0)
    view_text = _text(view)
    gone = set(missing_identifiers([value for _, value in counted], view_text))
    lost = [{"kind": kind, "value": value} for kind, value in counted if value in gone]
    lost.sort(key=lambda item: item["kind"] not in SECRET_KINDS)  # stable: secrets first, text order kept
    kept = len(counted) - len(lost)
    return Retention(kept / len(counted), len(counted), kept, lost)
