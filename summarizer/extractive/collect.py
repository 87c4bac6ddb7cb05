"""The offline summarizer's reading: entries of a summary prompt turned into prioritized briefing lines.

Groups: goal, constraints, done, current, blocked, decisions, next, critical (summarizer.extractive.briefing lays them
out). A tool result is paired with its call (same name, first come) and becomes one Done line, "call → outcome",
plus its few most telling lines; a failed action goes to blocked. The agent's own lines are sorted by what
they say: a dead end ("no X found") to blocked, a plan in its last note to next, a conclusion to critical.
A line whose value the agent used later (summarizer.extractive.facts.reference_terms; a value the task itself
names does not count) ranks higher. Findings first (issue 23): the agent's conclusions and newest plan outrank
every action line, an action is worth what its outcome says (not the credentials its command repeats), and an
earlier checkpoint's dead ends filed under its progress are read back as dead ends.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from summarizer.extractive.entries import Entry
from summarizer.extractive.facts import (
    ELLIPSIS,
    clip,
    is_constraint,
    is_decision,
    is_error,
    is_negative,
    is_plan,
    is_strong,
    reference_terms,
    reports_success,
    score,
    squash,
    terms_of,
    typed_findings,
)
from summarizer.extractive.sections import (
    ASK_LABEL,
    NOT_A_TITLE,
    STEP_LABEL,
    TASK_LABEL,
    is_identifier_list,
    title_group,
)
from summarizer.identifiers import extract_identifiers

__all__ = ["Item", "Collector", "REQUEST_CAP_BYTES", "REQUEST_MIN_BYTES", "LATEST_ASK_PRIORITY"]

LINE_CAP_BYTES = 400                  # one quoted line never costs more than this
COMMAND_CAP_BYTES = 160               # the call half of a Done line
OUTCOME_CAP_BYTES = 140               # ... and its outcome half
REQUEST_CAP_BYTES = 600               # the gist of a user request
REQUEST_MIN_BYTES = 160               # ... never cut shorter than this, however tight the budget
LATEST_ASK_PRIORITY = 1_000           # above any line score: the audit fails a checkpoint without the newest ask
STEP_PRIORITY = 900                   # the current plan step: what the agent was about to do
AGENT_CONCLUSION_PRIORITY = 85       # "No WinRM for any account", "sansa.stark cracked!": above raw output
# An action line ("call → outcome"), however telling its outcome, ranks below the agent's conclusions and its
# newest plan: what the agent concluded from its actions outlives the action log (issue 23, findings first).
ACTION_PRIORITY_MAX = AGENT_CONCLUSION_PRIORITY - 1
# An earlier summary's lines, by section: conclusions and dead ends outlive the action log, which outlives
# the raw output lines quoted under it.
_MERGED_PRIORITY = {"critical": 85, "blocked": 85, "constraints": 80, "next": 70, "decisions": 60, "done": 55,
                    "current": 50}
_MERGED_DETAIL_PRIORITY = 35
_PLAN_LEAD_RE = re.compile(r"^(?:now,? )?(?:let me|let's|i'll|i will|i need to|next,? i|now proceeding)\b", re.I)
# A lead that announces what the agent found: "Key findings:", "Results so far:", "What we know:", "Confirmed:".
_REPORT_LEAD_RE = re.compile(r"\b(?:findings?|results?|found|discovered|learned|confirmed|summary|observations?|"
                             r"facts?|status|takeaways?|what (?:we|i) (?:know|have))\s*(?:so far\s*)?:$", re.I)
PLANNED, REPORTED = "planned", "reported"
EMPHASIS_BONUS = 15                   # a sentence the agent wrote in bold
REFERENCED_BONUS = 15                 # the agent quoted something of this line afterwards
RESULT_DETAIL_LINES = 6               # output lines quoted under one action, at most
_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)\]`*][.!?])\s+(?=[A-Z*`(\[])")
_LIST_MARK_RE = re.compile(r"^(?:[-*•]\s+|\d{1,2}[.)]\s+)+")
_EMPTY_MARKERS = {"none.", "none captured.", "none", "n/a"}  # what an empty section of a summary says
_PAIRING_CHARS = 2_000                # the head of a result that is compared with the pending calls
ACTION_ARROW = " → "                  # between the call and the outcome of a Done line
_ACTION_HEAD_RE = re.compile(r"^- [\w.-]+(?::| output$)")
_ARG_KEYS = ("command", "cmd", "input", "query", "url", "path", "file", "target", "host", "code", "question",
             "message", "text", "name")


@dataclass(frozen=True)
class Item:
    """One candidate line of the summary: its group, reading order and priority."""

    group: str
    order: int
    priority: int
    text: str


def _lines(text: str) -> list[str]:
    return [s for s in (squash(line) for line in text.splitlines()) if s and any(c.isalnum() for c in s)]


def _sentences(text: str) -> list[tuple[str, str]]:
    """The agent's prose one sentence at a time ("No X found. Y worked." says two things), split only after
    a full stop, never at a colon: "password: x" stays one piece. Each comes with the kind of list it is an
    item of: PLANNED when its plan announced the list ("Let me:" then "1. Crack the hash": a step it meant to
    take, not a finding), REPORTED when it announced what it found ("Key findings:" then "- HOST has
    unconstrained delegation": its own conclusions), else ""."""
    out: list[tuple[str, str]] = []
    listing = ""
    for line in _lines(text):
        item = bool(_LIST_MARK_RE.match(line))
        listing = listing if item else ""
        for piece in _SENTENCE_END_RE.split(_LIST_MARK_RE.sub("", line)):  # "1. Crack it" is one piece
            if not any(c.isalnum() for c in piece):
                continue
            if piece.endswith(":"):
                listing = PLANNED if _PLAN_LEAD_RE.match(piece) else REPORTED if _REPORT_LEAD_RE.search(piece) else ""
                if len(piece.split()) < 5:
                    continue  # "Let me:" and "Found critical information:" only announce the list that follows
            out.append((piece, listing if item else ""))
    return out


def _pairing_terms(call: Entry) -> frozenset[str]:
    """What a call's output is likely to repeat: its values, and the program it ran ("curl: (22) ...")."""
    shown = _call_text(call).split(": ", 1)[-1]
    program = shown.split(" ", 1)[0].rsplit("/", 1)[-1]
    return terms_of(shown) | ({program} if len(program) >= 3 else frozenset())


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
    return f"- {entry.name or 'tool'}: {clip(squash(shown), COMMAND_CAP_BYTES)}"


def _outcome(lines: list[str], scores: list[int]) -> tuple[str, bool]:
    """(what an action gave, whether it failed): the error line of a failure, else its most telling line (the first
    of the best `scores`, each line's `score`, which the caller computes once for this and for the details)."""
    if not lines:
        return "no output", False
    succeeded = any(reports_success(line) for line in lines)
    errors = [line for line in lines if is_error(line) and not reports_success(line)]
    if errors and not succeeded:
        return errors[0], True
    edges = lines[:2] + lines[-2:]
    negative = next((line for line in edges if is_negative(line)), None)
    if negative is not None and not succeeded:
        return negative, True
    return lines[max(range(len(lines)), key=scores.__getitem__)], False


def _action_outcome(line: str) -> str | None:
    """The outcome half of a Done line ("- tool: command → outcome"), None for any other line."""
    if not line.startswith("- ") or ACTION_ARROW not in line:
        return None
    head, outcome = line.split(ACTION_ARROW, 1)
    return outcome if _ACTION_HEAD_RE.match(head) else None


def _prose_group(line: str) -> str:
    """Where an earlier summary's prose line under its progress heading belongs: a dead end the agent stated,
    a finding, or progress after all."""
    line = _LIST_MARK_RE.sub("", line)
    if is_negative(line):
        return "blocked"
    return "critical" if typed_findings(line) or is_strong(line) else "done"


def _without_cut_copies(items: list[Item]) -> list[Item]:
    """Items minus the copies of a line that an earlier summary (or a cap) cut short with an ellipsis: the
    same hash quoted at three lengths costs three lines and says one thing. The fuller line stays, at the
    highest priority any copy had."""
    stems = sorted(range(len(items)), key=lambda i: items[i].text.rstrip(ELLIPSIS))
    dropped: dict[int, int] = {}  # cut copy -> the fuller line that replaces it
    for before, after in zip(stems, stems[1:], strict=False):
        short = items[before].text
        if short.endswith(ELLIPSIS) and items[after].text.startswith(short.rstrip(ELLIPSIS)):
            dropped[before] = after
    best = {i: items[i].priority for i in range(len(items))}
    for copy, fuller in dropped.items():
        while fuller in dropped:
            fuller = dropped[fuller]
        best[fuller] = max(best[fuller], best[copy])
    return [Item(it.group, it.order, best[i], it.text) for i, it in enumerate(items) if i not in dropped]


class Collector:
    """Turns entries into prioritized items of the briefing's groups."""

    def __init__(self, entries: list[Entry], structured: bool, request_cap: int = REQUEST_CAP_BYTES) -> None:
        self.entries, self.structured, self.request_cap = entries, structured, request_cap
        self.items: list[Item] = []
        self.seen: dict[tuple[str, str], int] = {}
        self.order = 0
        # A value the task itself names (the target's address, the account it hands over) is in every later
        # call: quoting it says nothing about a line, so only the agent's own later references count.
        given = set().union(*(terms_of(e.text) for e in entries if e.kind == "task"))
        refs = reference_terms((i, e.text) for i, e in enumerate(entries) if e.kind in ("ai", "call"))
        self.refs = {term: last for term, last in refs.items() if term not in given}
        self.pending: list[tuple[int, Entry, str]] = []
        self.old_task: str | None = None
        self.old_asks: list[str] = []
        self.step: str | None = None
        self.old_step: str | None = None
        self.old_next: set[int] = set()  # an earlier summary's next steps: superseded by a newer plan
        self.last_ai = max((i for i, e in enumerate(entries) if e.kind == "ai"), default=-1)

    def add(self, group: str, priority: int, text: str) -> int:
        text = clip(text, LINE_CAP_BYTES)
        known = self.seen.get((group, text))
        if known is not None:  # tools repeat themselves (the same banner on every host); once is enough,
            item = self.items[known]  # at the highest priority it was seen with (the newest ask repeats one)
            self.items[known] = Item(item.group, item.order, max(item.priority, priority), item.text)
            return known
        self.seen[(group, text)] = len(self.items)
        self.order += 1
        self.items.append(Item(group, self.order, priority, text))
        return len(self.items) - 1

    def referenced(self, line: str, position: int) -> bool:
        """True when the agent used one of this line's values after `position` (a note or a call quoting it)."""
        return any(self.refs.get(term, -1) > position for term in terms_of(line))

    def collect(self) -> list[Item]:
        self.step = self._current_step()
        for position, entry in enumerate(self.entries):
            getattr(self, f"_{entry.kind}")(entry, position)
        self._flush_pending()  # calls whose result is not part of this span
        for line in typed_findings("\n".join(e.text for e in self.entries)):
            self.add("critical", 90, line)
        self._goal()
        return _without_cut_copies(self._current_plan())

    def _current_plan(self) -> list[Item]:
        """The items, minus an earlier summary's next steps when a newer note planned again: the open leads
        are the agent's latest plan, not every plan it ever made."""
        fresh = any(it.group == "next" and i not in self.old_next for i, it in enumerate(self.items))
        return [it for i, it in enumerate(self.items) if not (fresh and i in self.old_next)]

    def _goal(self) -> None:
        """Task in short, the newest ask verbatim, the current step: the goal moves with the agent."""
        tasks = [e.text.strip() for e in self.entries if e.kind == "task"]
        original = self.old_task or (squash(tasks[0]) if tasks else None)
        asks = self.old_asks + [squash(t) for t in tasks if squash(t) != original]
        if original:
            self.add("goal", 95 if asks else LATEST_ASK_PRIORITY, TASK_LABEL + clip(original, self.request_cap))
        for index, ask in enumerate(asks):
            newest = index == len(asks) - 1
            self.add("goal", LATEST_ASK_PRIORITY if newest else 60, ASK_LABEL + clip(ask, self.request_cap))
        if self.step:
            self.add("current" if self.structured else "goal", STEP_PRIORITY, STEP_LABEL + self.step)

    def _current_step(self) -> str | None:
        last_summary = max((i for i, e in enumerate(self.entries) if e.kind == "summary"), default=-1)
        if not any(e.kind in ("ai", "call") for e in self.entries[last_summary + 1:]):
            return self._summary_step()
        last_ai = max((i for i, e in enumerate(self.entries) if e.kind == "ai"), default=-1)
        last_call = max((i for i, e in enumerate(self.entries) if e.kind == "call"), default=-1)
        if last_call > last_ai:
            return _call_text(self.entries[last_call])[2:]
        if last_ai >= 0:
            lines = [line for line, _ in _sentences(self.entries[last_ai].text)]
            return next((line for line in reversed(lines) if is_plan(line)), lines[-1] if lines else None)
        return None

    def _summary_step(self) -> str | None:
        """The step an earlier summary recorded, when nothing newer happened (read before the main pass)."""
        for entry in self.entries:
            if entry.kind == "summary":
                for line in _lines(entry.text):
                    if line.startswith(STEP_LABEL.strip()):
                        self.old_step = line[len(STEP_LABEL):].strip() or self.old_step
        return self.old_step

    def _task(self, entry: Entry, position: int) -> None:
        if self.structured:
            for line in _lines(entry.text):
                if is_constraint(line):
                    self.add("constraints", 45 + score(line), f"- {line}")

    def _system(self, entry: Entry, position: int) -> None:
        if self.structured:
            for line in _lines(entry.text):
                if is_constraint(line):
                    self.add("constraints", 40 + score(line), f"- {line}")

    def _summary(self, entry: Entry, position: int) -> None:
        """An earlier summary merges into the new groups: its titles say where each line goes."""
        group = "critical"
        for line in _lines(entry.text):
            opened = title_group(line)
            if opened != NOT_A_TITLE:
                group = opened or group
                continue
            if group == "ids" or is_identifier_list(line) or line.lower().removeprefix("- ") in _EMPTY_MARKERS:
                continue  # its identifiers are read again from the text; the list itself is not content
            if self._goal_line(line, group):
                continue
            detail = line.startswith("> ")
            text = f"  {line}" if detail else (line if line.startswith("- ") else f"- {line}")
            outcome = None if detail else _action_outcome(text)
            said = line if outcome is None else outcome  # an action is worth what it found, not what it ran
            # a checkpoint files the agent's conclusions under its progress: they go back where they belong
            sink = _prose_group(line) if group == "done" and outcome is None and not detail else group
            bonus = REFERENCED_BONUS if self.referenced(said, position) else 0
            bonus += EMPHASIS_BONUS if "**" in line else 0  # the agent called it out when it was written
            base = _MERGED_DETAIL_PRIORITY if detail else _MERGED_PRIORITY.get(sink, 70)
            priority = base + min(score(said), 30) + bonus
            index = self.add(sink, priority if outcome is None else min(priority, ACTION_PRIORITY_MAX), text)
            if sink == "next":
                self.old_next.add(index)

    def _goal_line(self, line: str, group: str) -> bool:
        for label, sink in ((TASK_LABEL, "task"), (ASK_LABEL, "ask"), (STEP_LABEL, "step")):
            if line.startswith(label.strip()):
                self._remember(sink, line[len(label):] if line.startswith(label) else line)
                return True
        if group == "goal":  # an older layout's request line, or a checkpoint's goal text
            self._remember("task" if self.old_task is None else "ask", line.removeprefix("- "))
            return True
        return False

    def _remember(self, sink: str, text: str) -> None:
        if sink == "task" and self.old_task is None:
            self.old_task = text.strip()
        elif sink in ("task", "ask") and text.strip() not in self.old_asks + [self.old_task]:
            self.old_asks.append(text.strip())
        elif sink == "step":
            self.old_step = text.strip()  # the current step until a newer call or note supersedes it

    def _call(self, entry: Entry, position: int) -> None:
        if position and self.entries[position - 1].kind not in ("call", "ai"):
            self._flush_pending()  # a new batch of calls: the old ones were answered outside this span
        self.pending.append((position, entry, _call_text(entry)))

    def _flush_pending(self) -> None:
        for _, _, text in self.pending:
            self.add("done", 50, text)
        self.pending = []

    def _take_call(self, result: Entry) -> tuple[int, Entry, str] | None:
        """The pending call this result answers. The prompt layouts carry no call ids and parallel calls are
        answered in any order, so the call sharing most values with the output wins (first call on a tie)."""
        if not self.pending:
            return None
        head = result.text[:_PAIRING_CHARS]
        same_name = [i for i, (_, call, _) in enumerate(self.pending) if call.name == result.name] or [0]
        overlap = [(sum(term in head for term in _pairing_terms(self.pending[i][1])), -i) for i in same_name]
        return self.pending.pop(-max(overlap)[1])

    def _result(self, entry: Entry, position: int) -> None:
        lines = _lines(entry.text)
        scores = [score(line) for line in lines]
        outcome, failed = _outcome(lines, scores)
        call = self._take_call(entry)
        head = call[2] if call else f"- {entry.name or 'tool'} output"
        group = "blocked" if failed else "done"
        referenced = self.referenced(outcome, position)
        priority = 50 + (10 if extract_identifiers(head, limit=1) else 0) + (REFERENCED_BONUS if referenced else 0)
        self.add(group, min(priority + (10 if failed else 0), ACTION_PRIORITY_MAX),
                 f"{clip(head, COMMAND_CAP_BYTES + 20)}{ACTION_ARROW}{clip(outcome, OUTCOME_CAP_BYTES)}")
        details = []
        for index, line in enumerate(lines):
            if line == outcome:
                continue
            value = scores[index] + (REFERENCED_BONUS if self.referenced(line, position) else 0)
            if value:
                details.append((value, index, line))
        for rank, (value, _, line) in enumerate(sorted(details, key=lambda d: (-d[0], d[1]))[:RESULT_DETAIL_LINES]):
            self.add(group, 25 + value - 2 * rank, f"  > {line}")

    def _ai(self, entry: Entry, position: int) -> None:
        self._flush_pending()
        latest = position == self.last_ai
        for line, listing in _sentences(entry.text):
            planned = listing == PLANNED
            if latest and line == self.step:
                continue  # already the goal's current step
            value = score(line) + (REFERENCED_BONUS if self.referenced(line, position) else 0)
            value += EMPHASIS_BONUS if _emphasised(line, value) else 0  # the agent itself called this out
            if latest and (planned or is_plan(line)) and not is_negative(line):
                self.add("next", AGENT_CONCLUSION_PRIORITY + value // 10, f"- {line}")
            elif is_negative(line) or (is_error(line) and not reports_success(line)):
                # the agent's own conclusions are what a successor needs most: a dead end, or a failure it saw
                self.add("blocked", AGENT_CONCLUSION_PRIORITY + value, f"- {line}")
            elif (planned or _PLAN_LEAD_RE.match(line)) and not typed_findings(line):
                self.add("decisions", 35 + value, f"- {line}")  # an intent of its time, not a finding
            elif listing == REPORTED or value >= 15 or (value and is_strong(line)):
                self.add("critical", AGENT_CONCLUSION_PRIORITY + value, f"- {line}")
            elif is_decision(line):
                self.add("decisions", 35 + value, f"- {line}")


def _emphasised(line: str, value: int) -> bool:
    """The agent called the sentence out: in bold, or exclaimed about something it names ("HOST has X!";
    a bare "Excellent!" carries nothing to keep)."""
    return "**" in line or (value > 0 and line.rstrip("`*_)").endswith("!") and not _PLAN_LEAD_RE.match(line))
