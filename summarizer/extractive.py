"""The offline summarizer: picks the most informative lines of the input, never writes new prose.

It is the default `summarize(prompt) -> str` callable (no model, no network, deterministic). The prompt is read
back into entries (summarizer.extractive_input): the requests, tool calls, tool output, the assistant's notes
and earlier summaries. Each line gets a priority from what it carries: findings (credentials, hashes, flags),
opaque identifiers, result words ("open", "found", "success", errors, versions). Earlier summaries rank high, so
their content rolls forward. Lines are chosen by priority until `budget_bytes` (UTF-8) is used, then printed in
their original order under fixed headings; every identifier not already quoted in a chosen line is listed at
the end, so the identifier audit passes whenever the budget can hold them. When the prompt asks for Markdown
headings (the compaction checkpoint), those headings are produced, in the prompt's order.

Compaction checkpoints are audited (summarizer.audit), so for them: the size the prompt states ("... (N
characters).") replaces `budget_bytes`; the newest user request (the quoted `<latest_user_request>`, else the
last user message) is always restated under the goal heading; identifiers a retry names come first, then the
new messages' identifiers, then an earlier checkpoint's; payload-sized ones (over the audit's 200 chars) are
skipped; and the identifier list may take all the budget the goal line leaves.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from summarizer.audit import MAX_ENFORCED_IDENTIFIER_CHARS
from summarizer.extractive_input import (
    PREVIOUS_SUMMARY,
    Entry,
    named_identifiers,
    outside_text,
    parse_prompt,
    requested_budget_chars,
    requested_headings,
)
from summarizer.identifiers import extract_findings, extract_identifiers, is_case_insensitive_id, missing_identifiers

__all__ = ["extractive_summarize", "make_extractive", "DEFAULT_BUDGET_BYTES"]

DEFAULT_BUDGET_BYTES = 8192
LINE_CAP_BYTES = 400                  # one quoted line never costs more than this
REQUEST_CAP_BYTES = 600               # the gist of a user request
REQUEST_MIN_BYTES = 160               # ... never cut shorter than this, however tight the budget
LATEST_ASK_PRIORITY = 1_000           # above any line score: the audit fails a checkpoint without the newest ask
ARGUMENT_CAP_BYTES = 300
IDENTIFIER_SHARE_MAX = 0.6            # identifiers may take at most this share of the budget
ZERO_SCORE_LINES_KEPT = 5             # plain lines (nothing found in them) kept per block, beyond that only signal
_IDS_SLACK_BYTES = 32                 # the "Identifiers: " label and separators
EMPTY_SECTION = "None."
_ELLIPSIS = "…"

_STRONG_RE = re.compile(r"\b(?:open|found|success\w*|succeeded|valid|pwn3d|password|credentials?|cracked|flag|"
                        r"vulnerab\w+|exploit\w*|admin\w*|root|shell|uid=\d+|authenticated|logged in|dumped|"
                        r"hash(?:es)?|"
                        r"secret|token|granted|discovered|confirmed|result)\b|\[\+\]|CVE-", re.IGNORECASE)
_ERROR_RE = re.compile(r"\b(?:error|failed|failure|denied|refused|time[d ]?out|not found|invalid|unable|cannot|"
                       r"can't|exception|traceback|forbidden|unauthori[sz]ed|status_[a-z_]+)\b|\[-\]|\[!\]",
                       re.IGNORECASE)
_VERSION_RE = re.compile(r"\bversion\b|\bv\d+\.\d+|\b[A-Za-z][\w-]+/\d+\.\d+", re.IGNORECASE)
_CONSTRAINT_RE = re.compile(r"\b(?:must|never|do not|don't|only|avoid|ignore|scope|not allowed|forbidden|rule|"
                            r"should not|prefer\w*)\b", re.IGNORECASE)
_DECISION_RE = re.compile(r"\b(?:decid\w+|chose|choose|instead|because|plan\w*|switch\w*|focus\w*|will|going to|"
                          r"let me|i'll|approach|strategy|conclu\w+)\b", re.IGNORECASE)
_NEXT_RE = re.compile(r"\b(?:next|todo|then|remaining|need to|should|will|let me|i'll|continue)\b", re.IGNORECASE)
_NOISE_RE = re.compile(r"^[\W_]*$")
_SPACES_RE = re.compile(r"\s+")
_ARG_KEYS = ("command", "cmd", "input", "query", "url", "path", "file", "target", "host", "code", "question",
             "message", "text", "name")

# Group keys, and the heading keywords that select them when the prompt asks for Markdown headings.
_GROUP_TITLES = {"earlier": "Earlier summaries:", "goal": "Requests:", "done": "Actions and results:",
                 "notes": "Assistant notes:", "critical": "Findings:"}
_HEADING_GROUPS = [("identifier", "ids"), ("goal", "goal"), ("original request", "goal"), ("ask", "goal"),
                   ("constraint", "constraints"), ("rule", "constraints"), ("in progress", "current"),
                   ("blocked", "blocked"), ("done", "done"), ("early progress", "done"), ("progress", "done"),
                   ("decision", "decisions"), ("next", "next"), ("todo", "next"), ("critical", "critical"),
                   ("context", "critical")]


@dataclass(frozen=True)
class _Item:
    group: str
    order: int
    priority: int
    text: str


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _clip(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes (on a character boundary), marked with an ellipsis."""
    if _size(text) <= limit:
        return text
    room = max(limit - _size(_ELLIPSIS), 0)
    return text.encode("utf-8")[:room].decode("utf-8", "ignore") + (_ELLIPSIS if limit >= _size(_ELLIPSIS) else "")


def _squash(line: str) -> str:
    return _SPACES_RE.sub(" ", line).strip()


def _score(line: str) -> int:
    score = 20 if extract_findings(line) else 0
    score += 10 if extract_identifiers(line, limit=1) else 0
    score += 15 if _STRONG_RE.search(line) else 0
    score += 12 if _ERROR_RE.search(line) else 0
    return score + (5 if _VERSION_RE.search(line) else 0)


def _lines(text: str) -> list[str]:
    return [s for s in (_squash(line) for line in text.splitlines()) if s and not _NOISE_RE.match(s)]


def _ranked(lines: Iterable[str], base: int, decay: int = 2) -> list[tuple[int, int, str]]:
    """(index, priority, line): the k-th best line of one block loses k*decay so one block cannot crowd out others."""
    scored = [(i, _score(line), line) for i, line in enumerate(lines)]
    ranked = sorted(scored, key=lambda item: (-item[1], item[0]))
    return [(i, base + score - decay * rank, line) for rank, (i, score, line) in enumerate(ranked)]


def _signal(ranked: list[tuple[int, int, str]], base: int) -> list[tuple[int, int, str]]:
    """Drop plain lines past the first few of a block: a summary is not a copy, even when the budget allows."""
    plain = sorted(i for i, priority, line in ranked if not _score(line))[ZERO_SCORE_LINES_KEPT:]
    dropped = set(plain)
    return [item for item in ranked if item[0] not in dropped]


def _call_text(entry: Entry) -> str:
    try:
        args = json.loads(entry.text)
    except ValueError:
        args = entry.text
    if isinstance(args, dict):
        key = next((k for k in _ARG_KEYS if isinstance(args.get(k), str) and args[k].strip()), None)
        shown = args[key] if key else ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        shown = str(args)
    return f"- {entry.name or 'tool'}: {_clip(_squash(shown), ARGUMENT_CAP_BYTES)}"


class _Collector:
    """Turns entries into prioritized items; `structured` routes them to the checkpoint's sections."""

    def __init__(self, structured: bool, request_cap: int = REQUEST_CAP_BYTES) -> None:
        self.structured = structured
        self.request_cap = request_cap
        self.items: list[_Item] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.order = 0

    def add(self, group: str, priority: int, text: str) -> None:
        text = _clip(text, LINE_CAP_BYTES)
        known = self.seen.get((group, text))
        if known is not None:  # tools repeat themselves (the same banner on every host); once is enough,
            item = self.items[known]  # at the highest priority it was seen with (the newest ask repeats one)
            self.items[known] = _Item(item.group, item.order, max(item.priority, priority), item.text)
            return
        self.seen[(group, text)] = len(self.items)
        self.order += 1
        self.items.append(_Item(group, self.order, priority, text))

    def collect(self, entries: list[Entry]) -> list[_Item]:
        tasks = [e for e in entries if e.kind == "task"]
        last_ai = max((i for i, e in enumerate(entries) if e.kind == "ai"), default=-1)
        last_call = max((i for i, e in enumerate(entries) if e.kind == "call"), default=-1)
        for index, entry in enumerate(entries):
            handler = getattr(self, f"_{entry.kind}")
            handler(entry, latest=(entry is (tasks[-1] if tasks else None)) or index in (last_ai, last_call))
        for finding in extract_findings("\n".join(e.text for e in entries)):
            self.add("critical", 90, f"- {finding.kind}: {finding.value}")
        return self.items

    def _task(self, entry: Entry, latest: bool) -> None:
        gist = _clip(_squash(entry.text), self.request_cap)
        self.add("goal", LATEST_ASK_PRIORITY if latest else 85, f"- {gist}")
        if self.structured:
            for _, priority, line in _ranked((s for s in _lines(entry.text) if _CONSTRAINT_RE.search(s)), 45):
                self.add("constraints", priority, f"- {line}")

    def _system(self, entry: Entry, latest: bool) -> None:
        lines = [s for s in _lines(entry.text) if _CONSTRAINT_RE.search(s)] if self.structured else []
        for _, priority, line in sorted(_ranked(lines, 40)):
            self.add("constraints", priority, f"- {line}")

    def _summary(self, entry: Entry, latest: bool) -> None:
        group = "earlier" if not self.structured else "critical"
        for _, priority, line in sorted(_ranked(_lines(entry.text), 70, decay=0)):
            if line.startswith("#"):
                group = _heading_group(line) or group if self.structured else group
                continue
            self.add("critical" if group == "ids" else group, priority, line)

    def _call(self, entry: Entry, latest: bool) -> None:
        text = _call_text(entry)
        self.add("done", 50 + (10 if extract_identifiers(text, limit=1) else 0), text)
        if latest and self.structured:
            self.add("current", 80, text)

    def _result(self, entry: Entry, latest: bool) -> None:
        for index, priority, line in sorted(_signal(_ranked(_lines(entry.text), 25), 25)):
            first_line_bonus = 5 if index == 0 else 0
            blocked = self.structured and _ERROR_RE.search(line) and not _STRONG_RE.search(line)
            self.add("blocked" if blocked else "done", priority + first_line_bonus, f"  > {line}")

    def _ai(self, entry: Entry, latest: bool) -> None:
        for index, priority, line in sorted(_signal(_ranked(_lines(entry.text), 25), 25)):
            if not self.structured:
                self.add("notes", priority + (10 if latest else 0), f"- {line}")
            elif latest and (index == 0 or _NEXT_RE.search(line)):
                self.add("next", 75 + priority // 10, f"- {line}")
            elif _DECISION_RE.search(line) or _score(line):
                self.add("decisions", priority, f"- {line}")


def _heading_group(heading: str) -> str | None:
    low = heading.lstrip("#").strip().lower()
    return next((group for keyword, group in _HEADING_GROUPS if keyword in low), None)


def _select(items: list[_Item], budget: int, chosen: set[int], header_cost: Callable[[str, set[str]], int]) -> int:
    """Greedy by priority (ties: earlier first); returns the bytes still free."""
    groups = {items[i].group for i in chosen}
    for index in sorted(range(len(items)), key=lambda i: (-items[i].priority, items[i].order)):
        if index in chosen:
            continue
        item = items[index]
        cost = _size(item.text) + 1 + header_cost(item.group, groups)
        if cost <= budget:
            chosen.add(index)
            groups.add(item.group)
            budget -= cost
    return budget


def _identifier_lines(ids: list[str], budget: int, bullet: bool) -> str:
    """As many identifiers as fit in `budget` bytes, then an honest count of the ones left out."""
    separator = "\n" if bullet else ", "
    entries = [f"- {identifier}" if bullet else identifier for identifier in ids]
    if _size(separator.join(entries)) <= budget:
        return separator.join(entries)  # all of them: no room needs holding back for the omission note
    shown: list[str] = []
    used = 0
    for position, identifier in enumerate(ids):
        entry = f"- {identifier}" if bullet else identifier
        cost = _size(entry) + (_size(separator) if shown else 0)
        last = position == len(ids) - 1
        note_room = 0 if last else _size(f"(+{len(ids)} more identifiers omitted for space)") + _size(separator)
        if used + cost + note_room > budget:
            shown.append(f"(+{len(ids) - position} more identifiers omitted for space)")
            break
        shown.append(entry)
        used += cost
    return separator.join(shown)


# Checkpoint sections the prompt did not ask for: where their lines go instead (None = dropped).
_FALLBACK_GROUPS = {"blocked": "done", "current": None, "constraints": "critical", "decisions": "critical",
                    "next": "critical", "goal": "critical", "done": "critical", "earlier": "critical"}


class _Layout:
    """Where groups go: fixed titles (PentAGI summaries) or the headings the prompt asked for (checkpoints)."""

    def __init__(self, headings: list[str]) -> None:
        self.headings = headings
        self.by_group: dict[str, str] = {}
        for heading in headings:
            group = _heading_group(heading)
            current = self.by_group.get(group or "")
            # the most specific heading wins: "### Done" over "## Progress"
            if group and (current is None or _level(heading) > _level(current)):
                self.by_group[group] = heading
        self.ids_heading = self.by_group.get("ids")

    def title(self, group: str) -> str | None:
        if not self.headings:
            return _GROUP_TITLES.get(group, "Notes:")
        seen = set()
        while group not in self.by_group and group not in seen:
            seen.add(group)
            fallback = _FALLBACK_GROUPS.get(group, "critical")
            if fallback is None:
                return None
            group = fallback
        return self.by_group.get(group) or self.headings[-1]

    def header_cost(self, group: str, used: set[str]) -> int:
        if self.headings:
            return 0  # headings are always printed; their bytes are reserved up front
        return 0 if group in used else _size(self.title(group) or "") + 2

    def skeleton_bytes(self) -> int:
        return sum(_size(h) + _size(EMPTY_SECTION) + 3 for h in self.headings)

    def render(self, items: list[_Item], ids_text: str) -> str:
        sections: dict[str, list[str]] = {}
        for item in sorted(items, key=lambda it: it.order):
            sections.setdefault(self.title(item.group) or "", []).append(item.text)
        if not self.headings:
            blocks = [f"{title}\n" + "\n".join(lines) for title, lines in sections.items()]
            return "\n\n".join(blocks + ([f"Identifiers: {ids_text}"] if ids_text else []))
        if ids_text:
            target = self.ids_heading or self.title("critical") or self.headings[-1]
            sections.setdefault(target, []).append(ids_text if self.ids_heading else f"Identifiers: {ids_text}")
        blocks = []
        for index, heading in enumerate(self.headings):
            following = self.headings[index + 1] if index + 1 < len(self.headings) else None
            opens_subsections = following is not None and _level(following) > _level(heading)
            body = "\n".join(sections.get(heading, [])) or ("" if opens_subsections else EMPTY_SECTION)
            blocks.append(f"{heading}\n{body}" if body else heading)
        return "\n\n".join(blocks)


def _level(heading: str) -> int:
    return len(heading) - len(heading.lstrip("#"))


def _identifiers(prompt: str, entries: list[Entry], *, checkpoint: bool) -> list[str]:
    """The identifiers to list: the ones a retry names first, then the input's. Payload-sized runs (over
    MAX_ENFORCED_IDENTIFIER_CHARS: Kerberos tickets, base64 dumps) are not enforced by the audit and no
    checkpoint budget holds them, so a checkpoint skips them; a PentAGI summary lists them last."""
    # What the audit checks (the new messages) before what only rolls forward (an earlier checkpoint's list).
    ordered = [e for e in entries if e.name != PREVIOUS_SUMMARY] + [e for e in entries if e.name == PREVIOUS_SUMMARY]
    source = "\n".join(e.text for e in ordered) + "\n" + outside_text(prompt)
    unique: dict[str, str] = {}
    for identifier in named_identifiers(prompt) + extract_identifiers(source):
        unique.setdefault(identifier.upper() if is_case_insensitive_id(identifier) else identifier, identifier)
    short = [i for i in unique.values() if len(i) <= MAX_ENFORCED_IDENTIFIER_CHARS]
    return short if checkpoint else short + [i for i in unique.values() if len(i) > MAX_ENFORCED_IDENTIFIER_CHARS]


def _goal_bytes(items: list[_Item]) -> int:
    """What the newest request costs: it is chosen before the identifiers take the rest of the budget."""
    goals = [it for it in items if it.group == "goal"]
    return max((_size(it.text) + 1 for it in goals if it.priority == max(g.priority for g in goals)), default=0)


def extractive_summarize(prompt: str, *, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> str:
    """A deterministic extractive summary of a summary prompt, at most `budget_bytes` UTF-8 bytes.

    A compaction prompt that states its size ("... (N characters).") is held to that size instead: the caller
    computed it from the room left in the model's window.
    """
    prompt = prompt or ""
    budget_bytes = requested_budget_chars(prompt) or budget_bytes
    layout = _Layout(requested_headings(prompt))
    entries = parse_prompt(prompt)
    request_cap = min(REQUEST_CAP_BYTES, max(REQUEST_MIN_BYTES, budget_bytes // 8))
    collector = _Collector(structured=bool(layout.headings), request_cap=request_cap)
    items = [it for it in collector.collect(entries) if layout.title(it.group)]
    ids = _identifiers(prompt, entries, checkpoint=bool(layout.headings))
    bullet = layout.ids_heading is not None
    fixed = layout.skeleton_bytes() + _IDS_SLACK_BYTES
    # A checkpoint is audited for its identifiers: they may take everything but the newest request's line.
    # PentAGI summaries are not audited, so there identifiers keep to a share and the lines get the rest.
    share = budget_bytes - fixed - _goal_bytes(items) if layout.headings else int(budget_bytes * IDENTIFIER_SHARE_MAX)
    reserve = max(min(_size(_identifier_lines(ids, budget_bytes, bullet)), share), 0)
    chosen: set[int] = set()
    free = _select(items, budget_bytes - fixed - reserve, chosen, layout.header_cost) + reserve
    picked = [items[i] for i in chosen]
    missing = missing_identifiers(ids, "\n".join(it.text for it in picked))
    # Under its own heading the full list reads better ("None." would look like there were none); elsewhere
    # only the identifiers no chosen line quotes are listed.
    listed = ids if bullet and _size(_identifier_lines(ids, free, bullet)) <= free else missing
    ids_text = _identifier_lines(listed, free, bullet) if listed else ""
    if free - _size(ids_text) > 0:
        _select(items, free - _size(ids_text), chosen, layout.header_cost)
        picked = [items[i] for i in chosen]
    text = layout.render(picked, ids_text) if (picked or ids_text or layout.headings) else "No content to summarize."
    return _clip(text, budget_bytes)


def make_extractive(budget_bytes: int = DEFAULT_BUDGET_BYTES) -> Callable[[str], str]:
    """A `summarize(prompt) -> str` callable with a fixed byte budget."""
    if budget_bytes <= 0:
        raise ValueError("budget_bytes must be positive")

    def summarize(prompt: str) -> str:
        return extractive_summarize(prompt, budget_bytes=budget_bytes)

    summarize.__name__ = f"extractive_{budget_bytes}"
    return summarize
