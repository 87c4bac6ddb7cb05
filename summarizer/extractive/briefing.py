"""The offline summarizer: a briefing an agent can carry on from, built only from lines of its input.

It is the default `summarize(prompt) -> str` callable (no model, no network, deterministic). The prompt is read
back into entries (summarizer.extractive.entries): requests, tool calls, tool output, the assistant's notes and
earlier summaries. A PentAGI summary is written as a briefing under fixed titles (summarizer.extractive.sections):
*Task and current goal* (the original task in short, the latest ask verbatim, the current plan step), *Done*
(one line per action: the call, shortened, and its outcome), *Findings* (typed credentials and hashes, the
agent's conclusions, result lines), *Negative results and dead ends* (failed actions and the agent's own "no X
found"), *Open leads / next steps* (from its last plan), then the identifiers no line above quotes, ranked by
use and noise classes dropped (summarizer.extractive.ranking), in at most IDENTIFIER_SHARE_MAX of the budget (issue
23: a list of bare identifiers never crowds out the findings). A compaction prompt that asks for Markdown
headings gets those headings, in its order, filled from the same groups.

Lines are ranked by what they carry and by what the agent referred to afterwards (a later note or call quoting
a value from the line), not by position; they are chosen by priority until `budget_bytes` (UTF-8) is used and
printed in their original order. An earlier summary in the input is merged, not nested: its titles route its
lines into the new sections, its goal becomes the original task, and the newest ask and step move the goal on.

Compaction checkpoints are audited (summarizer.compact.audit), so for them: the size the prompt states ("... (N
characters).") replaces `budget_bytes`; the newest user request is always restated under the goal heading;
identifiers a retry names come first, then the new messages' identifiers, then an earlier checkpoint's (noise
last, on one line, since the audit still counts them); payload-sized ones (over the audit's 200 chars) are
skipped; and the audited identifiers may take all the budget the goal line leaves (the names the audit does not
check, only what is left of the share).
"""
from __future__ import annotations

from collections.abc import Callable

from summarizer.extractive.collect import REQUEST_CAP_BYTES, REQUEST_MIN_BYTES, Collector, Item
from summarizer.extractive.entries import parse_prompt, requested_budget_chars, requested_headings
from summarizer.extractive.facts import byte_size, clip
from summarizer.extractive.ranking import listed_identifiers, prompt_identifiers
from summarizer.extractive.sections import (
    BRIEFING_ORDER,
    BRIEFING_TITLES,
    IDENTIFIERS_LABEL,
    NOISE_LABEL,
    heading_group,
)
from summarizer.identifiers import is_case_insensitive_id, missing_identifiers
from summarizer.passes.summarize import INLINE_MARK

__all__ = ["extractive_summarize", "make_extractive", "prompt_identifiers", "DEFAULT_BUDGET_BYTES"]

DEFAULT_BUDGET_BYTES = 8192
IDENTIFIER_SHARE_MAX = 0.3            # identifiers may take at most this share of a PentAGI summary
PAYLOAD_SHARE_MAX = 0.40               # ... and payload-sized runs (ticket blobs, base64) at most this share
_IDS_SLACK_BYTES = 32                 # the "Identifiers: " label and separators
EMPTY_SECTION = "None."
ALL_QUOTED = "All quoted above."


class _Quotes:
    """Which listed identifiers each item quotes: a chosen line that quotes one takes it off the identifier
    list, so the line costs only what it adds (a Done line naming a host and a path may cost nothing)."""

    def __init__(self, items: list[Item], ids: list[str], separator_bytes: int) -> None:
        folded = [(i, is_case_insensitive_id(i)) for i in ids]
        self.by_item: list[list[str]] = []
        for item in items:
            text, upper = item.text, item.text.upper()
            self.by_item.append([i for i, fold in folded if (i.upper() in upper if fold else i in text)])
        self.covered: set[str] = set()
        self.separator = separator_bytes
        self.saved = 0  # listing bytes the chosen lines were credited with

    def saving(self, index: int) -> int:
        return sum(byte_size(i) + self.separator for i in self.by_item[index] if i not in self.covered)

    def take(self, index: int) -> None:
        self.saved += self.saving(index)
        self.covered.update(self.by_item[index])


def _select(items: list[Item], budget: int, chosen: set[int], header_cost: Callable[[str, set[str]], int],
            quotes: _Quotes) -> int:
    """Greedy by priority (ties: earlier first); returns the bytes still free."""
    groups = {items[i].group for i in chosen}
    for index in sorted(range(len(items)), key=lambda i: (-items[i].priority, items[i].order)):
        if index in chosen:
            continue
        item = items[index]
        cost = byte_size(item.text) + 1 + header_cost(item.group, groups) - quotes.saving(index)
        if cost <= budget:
            chosen.add(index)
            groups.add(item.group)
            quotes.take(index)
            budget -= cost
    return budget


def _identifier_lines(ids: list[str], budget: int, bullet: bool) -> str:
    """As many identifiers as fit in `budget` bytes, then an honest count of the ones left out."""
    separator = "\n" if bullet else ", "
    entries = [f"- {identifier}" if bullet else identifier for identifier in ids]
    if byte_size(separator.join(entries)) <= budget:
        return separator.join(entries)  # all of them: no room needs holding back for the omission note
    shown: list[str] = []
    used = 0
    for position, identifier in enumerate(ids):
        entry = f"- {identifier}" if bullet else identifier
        cost = byte_size(entry) + (byte_size(separator) if shown else 0)
        last = position == len(ids) - 1
        note_room = 0 if last else byte_size(f"(+{len(ids)} more identifiers omitted for space)") + byte_size(separator)
        if used + cost + note_room > budget:
            shown.append(f"(+{len(ids) - position} more identifiers omitted for space)")
            break
        shown.append(entry)
        used += cost
    return separator.join(shown)


# Checkpoint sections the prompt did not ask for: where their lines go instead. None = dropped: a rule of the
# task, a plan or a decision under "Context for the kept suffix" (a split turn's prefix) would read as a finding
# once that checkpoint is merged again, and outlive every later merge.
_FALLBACK_GROUPS = {"blocked": "done", "current": None, "constraints": None, "decisions": None,
                    "next": None, "goal": "critical", "done": "critical", "earlier": "critical"}
# Groups the briefing has no title for: where their lines go (None = dropped; plain decisions are prose).
_BRIEFING_FALLBACK = {"constraints": "goal", "current": "goal", "decisions": None}


class _Layout:
    """Where groups go: the briefing's fixed titles (PentAGI summaries) or the headings a checkpoint asks for."""

    def __init__(self, headings: list[str]) -> None:
        self.headings = headings
        self.by_group: dict[str, str] = {}
        for heading in headings:
            group = heading_group(heading)
            current = self.by_group.get(group or "")
            # the most specific heading wins: "### Done" over "## Progress"
            if group and (current is None or _level(heading) > _level(current)):
                self.by_group[group] = heading
        self.ids_heading = self.by_group.get("ids")

    def title(self, group: str) -> str | None:
        if not self.headings:
            group = group if group in BRIEFING_TITLES else (_BRIEFING_FALLBACK.get(group, "critical") or "")
            return BRIEFING_TITLES.get(group)
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
        return 0 if group in used else byte_size(self.title(group) or "") + 2

    def skeleton_bytes(self) -> int:
        return sum(byte_size(h) + byte_size(EMPTY_SECTION) + 3 for h in self.headings)

    def render(self, items: list[Item], ids_text: str) -> str:
        sections: dict[str, list[str]] = {}
        for item in sorted(items, key=lambda it: it.order):
            sections.setdefault(self.title(item.group) or "", []).append(item.text)
        if not self.headings:
            titles = [BRIEFING_TITLES[group] for group in BRIEFING_ORDER]
            blocks = [f"{title}\n" + "\n".join(sections[title]) for title in titles if sections.get(title)]
            return "\n\n".join(blocks + ([f"{IDENTIFIERS_LABEL} {ids_text}"] if ids_text else []))
        if ids_text:
            target = self.ids_heading or self.title("critical") or self.headings[-1]
            sections.setdefault(target, []).append(ids_text if self.ids_heading else f"{IDENTIFIERS_LABEL} {ids_text}")
        blocks = []
        for index, heading in enumerate(self.headings):
            following = self.headings[index + 1] if index + 1 < len(self.headings) else None
            opens_subsections = following is not None and _level(following) > _level(heading)
            empty = ALL_QUOTED if heading == self.ids_heading else EMPTY_SECTION
            body = "\n".join(sections.get(heading, [])) or ("" if opens_subsections else empty)
            blocks.append(f"{heading}\n{body}" if body else heading)
        return "\n\n".join(blocks)


def _level(heading: str) -> int:
    return len(heading) - len(heading.lstrip("#"))


def _goal_bytes(items: list[Item]) -> int:
    """What the newest request costs: it is chosen before the identifiers take the rest of the budget."""
    goals = [it for it in items if it.group == "goal"]
    return max((byte_size(it.text) + 1 for it in goals if it.priority == max(g.priority for g in goals)), default=0)


def _checkpoint_ids(ids: list[str], noise: list[str], names: set[str], share: int, room: int,
                    bullet: bool) -> tuple[list[str], int]:
    """(ids to list, room for the list) in a checkpoint: it is audited for its identifiers, so they may take
    everything but the newest request's line; the names the audit does not check only what is left of `share`."""
    audited = [i for i in ids if i not in names]
    need = byte_size(_listing(audited, noise, room, bullet))
    extra = _fitting([i for i in ids if i in names], share - need, bullet)
    listed = audited + extra
    return listed, min(room, byte_size(_listing(listed, noise, room, bullet)))


def _fitting(ids: list[str], room: int, bullet: bool) -> list[str]:
    """The longest prefix of `ids` whose listing takes at most `room` bytes."""
    used, separator = 0, 3 if bullet else 2
    for count, identifier in enumerate(ids):
        used += byte_size(identifier) + separator
        if used > room:
            return ids[:count]
    return ids


def _listing(ids: list[str], noise: list[str], budget: int, bullet: bool) -> str:
    """The identifier list; in a checkpoint the noise follows on one line, as far as the budget allows."""
    text = _identifier_lines(ids, budget, bullet) if ids else ""
    room = budget - byte_size(text) - 1 - byte_size(NOISE_LABEL)
    if noise and room > 0 and "omitted for space" not in text:
        line = NOISE_LABEL + _identifier_lines(noise, room, bullet=False)
        text = f"{text}\n{line}" if text else line
    return text


def _with_spare(ids_text: str, spare: list[str], room: int, bullet: bool) -> str:
    """The identifier list plus the spare payloads that fit whole in `room` bytes, smallest first."""
    separator = "\n- " if bullet else ", "
    added = []
    for payload in spare:
        cost = byte_size(payload) + byte_size(separator)
        if cost > room:
            break
        added.append(payload)
        room -= cost
    if not added:
        return ids_text
    tail = separator.join(added)
    return f"{ids_text}{separator}{tail}" if ids_text else (f"- {tail}" if bullet else tail)


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
    collector = Collector(entries, structured=bool(layout.headings), request_cap=request_cap)
    items = [it for it in collector.collect() if layout.title(it.group)]
    ids, noise, spare, names = listed_identifiers(prompt, entries, checkpoint=bool(layout.headings),
                                                  payload_room=int(budget_bytes * PAYLOAD_SHARE_MAX))
    bullet = layout.ids_heading is not None
    fixed = layout.skeleton_bytes() + _IDS_SLACK_BYTES
    share = int(budget_bytes * IDENTIFIER_SHARE_MAX)
    if layout.headings:
        ids, share = _checkpoint_ids(ids, noise, names, share, budget_bytes - fixed - _goal_bytes(items), bullet)
    listing = byte_size(_listing(ids, noise, budget_bytes, bullet))
    reserve = max(min(listing, share), 0)
    # Lines may count on the listing bytes their identifiers free, for the identifiers the reserve holds (the
    # best-ranked ones: summarizer.extractive.ranking).
    quotes = _Quotes(items, _fitting(ids, reserve, bullet), 3 if bullet else 2)
    chosen: set[int] = set()
    free = _select(items, budget_bytes - fixed - reserve, chosen, layout.header_cost, quotes) + reserve - quotes.saved
    picked = [items[i] for i in chosen]
    quoted = "\n".join(it.text for it in picked)
    # Never more than the share on the list (a checkpoint's share holds every identifier its audit checks).
    room = min(free, share)
    ids_text = _listing(missing_identifiers(ids, quoted), missing_identifiers(noise, quoted), room, bullet)
    rest = free - byte_size(ids_text)
    if rest > 0:
        rest = _select(items, rest, chosen, layout.header_cost, _Quotes(items, [], 0))
        picked = [items[i] for i in chosen]
    spare_room = min(rest, share - byte_size(ids_text))
    ids_text = _with_spare(ids_text, spare, spare_room, bullet)
    text = layout.render(picked, ids_text) if (picked or ids_text or layout.headings) else "No content to summarize."
    return clip(text, budget_bytes)


def make_extractive(budget_bytes: int = DEFAULT_BUDGET_BYTES) -> Callable[[str], str]:
    """A `summarize(prompt) -> str` callable with a fixed byte budget, marked to run a batch's prompts in the
    caller's thread (pure CPU: threads would only add their cost; summarizer.passes.summarize.INLINE_MARK)."""
    if budget_bytes <= 0:
        raise ValueError("budget_bytes must be positive")

    def summarize(prompt: str) -> str:
        return extractive_summarize(prompt, budget_bytes=budget_bytes)

    summarize.__name__ = f"extractive_{budget_bytes}"
    setattr(summarize, INLINE_MARK, True)  # noqa: B010 - a marker on a function object
    return summarize
