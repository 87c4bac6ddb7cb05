"""Reading a summary prompt back into entries for the extractive summarizer.

Three layouts are understood: PentAGI's csum prompt (`<tasks>` + `<messages>` with `<content>`, `<tool_call>`,
`<tool_call_response>` parts, see summarizer.passes.prompts), the compaction prompt (rules, `<previous_summary>`
blocks and a `<conversation>` of `[role]` blocks, see summarizer.compact.prompt), and anything else, which
is treated as one block of tool output. Earlier summaries (execute_task_and_return_summary results,
`**summarized content:**` text, `<previous_summary>` and `<summary>` blocks) become "summary" entries. The
compaction prompt's own rules are read too: its size rule (`requested_budget_chars`), the identifiers a retry
names (`named_identifiers`) and the quoted `<latest_user_request>`, which becomes the newest task.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["Entry", "parse_prompt", "requested_headings", "outside_text", "requested_budget_chars",
           "named_identifiers", "SUMMARY_TOOL", "SUMMARY_PREFIX", "PREVIOUS_SUMMARY"]

SUMMARY_TOOL = "execute_task_and_return_summary"
SUMMARY_PREFIX = "**summarized content:**"
PREVIOUS_SUMMARY = "previous"  # Entry.name of an earlier checkpoint given to be re-distilled


@dataclass(frozen=True)
class Entry:
    """One piece of the input: kind is task | system | ai | call | result | summary."""

    kind: str
    text: str
    name: str = ""


_INSTRUCTIONS_RE = re.compile(r"<instructions>.*?</instructions>", re.DOTALL)
# Block tags count only on a line of their own: the compaction rules mention "<conversation>" in prose.
_TASK_RE = re.compile(r'^<task id="\d+">\n(.*?)^</task>$', re.DOTALL | re.MULTILINE)
_MESSAGE_SPLIT_RE = re.compile(r'^<message id="\d+" role="(\w+)">\n', re.MULTILINE)
_PART_RE = re.compile(r'^<(content|tool_call|tool_call_response)(?: name="([^"]*)")? part="\d+">\n(.*?)\n</\1>$',
                      re.DOTALL | re.MULTILINE)
_BLOCK_RES = {
    "previous": re.compile(r"^<previous_summary>\n(.*?)\n</previous_summary>$", re.DOTALL | re.MULTILINE),
    "summary": re.compile(r"^<summary>\n(.*?)\n</summary>$", re.DOTALL | re.MULTILINE),
    "conversation": re.compile(r"^<conversation>\n(.*)\n</conversation>$", re.DOTALL | re.MULTILINE),
    "messages": re.compile(r"^<messages>\n(.*)^</messages>", re.DOTALL | re.MULTILINE),
    "tasks": re.compile(r"^<tasks>\n(.*?)^</tasks>$", re.DOTALL | re.MULTILINE),
    "focus": re.compile(r"^<operator_focus>\n.*?\n</operator_focus>$", re.DOTALL | re.MULTILINE),
    "ask": re.compile(r"^<latest_user_request>\n(.*?)\n</latest_user_request>$", re.DOTALL | re.MULTILINE),
}
# The size rule of summarizer.compact.prompt.budget_sentence and the retry list of missing_identifiers_block.
_BUDGET_RE = re.compile(r"^Keep the checkpoint under about \d+ words \((\d+) characters\)\.$", re.MULTILINE)
_NAMED_RE = re.compile(r"^(?:Your previous attempt dropped these identifiers; include each of them exactly as "
                       r"written|Include each of these identifiers exactly as written):\n((?:- .*(?:\n|$))+)",
                       re.MULTILINE)
_ROLE_HEADER_RE = re.compile(r"^\[(system|user|assistant|tool result: [^\]\n]*|assistant calls [^\]\n]*)\]$",
                             re.MULTILINE)
_HEADING_LINE_RE = re.compile(r"^(#{2,3} [^\n]+?)\s*$", re.MULTILINE)
_INLINE_HEADING_RE = re.compile(r"heading (#{2,3} [A-Za-z][\w &/()-]*[\w)])")


# Each block opens with its tag on a line of its own: a prompt without the tag cannot hold the block, and a
# substring test is far cheaper than a multi-line scan of a prompt of many kilobytes (most prompts hold 2 of 7).
_BLOCK_OPENERS = {key: pattern.pattern[1:pattern.pattern.index(">") + 1] for key, pattern in _BLOCK_RES.items()}


def _blocks(key: str, text: str) -> list[re.Match[str]]:
    """The `key` blocks of `text`, in order."""
    return list(_BLOCK_RES[key].finditer(text)) if _BLOCK_OPENERS[key] in text else []


def _first_block(key: str, text: str) -> re.Match[str] | None:
    return _BLOCK_RES[key].search(text) if _BLOCK_OPENERS[key] in text else None


def _without_block(key: str, text: str) -> str:
    return _BLOCK_RES[key].sub("", text) if _BLOCK_OPENERS[key] in text else text


def _strip_blocks(text: str) -> str:
    for key in _BLOCK_RES:
        text = _without_block(key, text)
    return text


@functools.lru_cache(maxsize=4)
def outside_text(prompt: str) -> str:
    """The prompt's own text (instructions excluded): rules, operator focus, identifiers named for a retry.
    Remembered for the last few prompts: one summary reads it three times (size rule, named identifiers,
    the identifier ranking)."""
    return _strip_blocks(_INSTRUCTIONS_RE.sub("", prompt))


def requested_budget_chars(prompt: str) -> int | None:
    """The character budget a compaction prompt states (outside the quoted history), or None."""
    match = _BUDGET_RE.search(outside_text(prompt))
    return int(match.group(1)) if match else None


def named_identifiers(prompt: str) -> list[str]:
    """The identifiers a retry prompt names as dropped by the previous attempt, in order."""
    found = [line[2:].strip() for m in _NAMED_RE.finditer(outside_text(prompt)) for line in m.group(1).splitlines()]
    return list(dict.fromkeys(f for f in found if f))


def requested_headings(prompt: str) -> list[str]:
    """Markdown headings the prompt asks for (outside the quoted history), in order; [] for none."""
    outside = _strip_blocks(prompt)
    found = _HEADING_LINE_RE.findall(outside) + _INLINE_HEADING_RE.findall(outside)
    return list(dict.fromkeys(h.strip() for h in found))


def _summary_entries(text: str) -> list[Entry]:
    return [Entry("summary", text.strip())] if text.strip() else []


def _user_entries(text: str) -> list[Entry]:
    """A user text that carries a compaction summary becomes that summary plus whatever follows it."""
    match = _first_block("summary", text)
    if match is None:
        return [Entry("task", text.strip())] if text.strip() else []
    rest = text[match.end():].strip()
    return _summary_entries(match.group(1)) + ([Entry("task", rest)] if rest else [])


def _ai_text_entries(text: str) -> list[Entry]:
    if text.startswith(SUMMARY_PREFIX):
        return _summary_entries(text[len(SUMMARY_PREFIX):])
    return [Entry("ai", text.strip())] if text.strip() else []


def _pentagi_messages(block: str) -> list[Entry]:
    entries: list[Entry] = []
    pieces = _MESSAGE_SPLIT_RE.split(block)
    for role, body in zip(pieces[1::2], pieces[2::2], strict=False):
        for tag, name, text in _PART_RE.findall(body):
            if tag == "tool_call_response":
                entries += _summary_entries(text) if name == SUMMARY_TOOL else [Entry("result", text, name)]
            elif tag == "tool_call":
                entries += [] if name == SUMMARY_TOOL else [Entry("call", text, name)]
            elif role == "human":
                entries += _user_entries(text)
            else:
                entries += _ai_text_entries(text)
    return entries


def _conversation(block: str) -> list[Entry]:
    entries: list[Entry] = []
    headers = list(_ROLE_HEADER_RE.finditer(block))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(block)
        body, label = block[header.end():end].strip("\n"), header.group(1)
        if label == "system":
            entries.append(Entry("system", body))
        elif label == "user":
            entries += _user_entries(body)
        elif label == "assistant":
            entries += _ai_text_entries(body)
        elif label.startswith("assistant calls "):
            name = label[len("assistant calls "):]
            entries += [] if name == SUMMARY_TOOL else [Entry("call", body, name)]
        else:
            name = label[len("tool result: "):]
            entries += _summary_entries(body) if name == SUMMARY_TOOL else [Entry("result", body, name)]
    if not headers and block.strip():
        entries.append(Entry("result", block, "text"))
    return entries


def parse_prompt(prompt: str) -> list[Entry]:
    """Entries of a summary prompt in reading order; instructions and operator text are not content."""
    entries: list[Entry] = []
    previous = _blocks("previous", prompt)
    for match in previous:
        entries += [Entry("summary", text, PREVIOUS_SUMMARY) for text in [match.group(1).strip()] if text]
    entries += [e for m in _TASK_RE.finditer(prompt) for e in _user_entries(m.group(1))]
    messages = _first_block("messages", prompt)
    if messages:
        entries += _pentagi_messages(messages.group(1))
    conversations = _blocks("conversation", prompt)
    for match in conversations:
        entries += _conversation(match.group(1))
    history_free = prompt
    for key in ("previous", "conversation", "messages"):  # a quoted history cannot forge the request block
        history_free = _without_block(key, history_free)
    asks = _blocks("ask", history_free)
    structured = messages or conversations or "<tasks>" in prompt or previous or asks
    if not structured:
        rest = _INSTRUCTIONS_RE.sub("", prompt).strip()
        entries += _user_entries(rest) if _first_block("summary", rest) else _conversation(rest)
    # The quoted latest request comes last so it counts as the newest ask (summarizer.compact.prompt.latest_ask_block).
    entries += [Entry("task", m.group(1).strip()) for m in asks[-1:] if m.group(1).strip()]
    return [_printable(e) if e.kind == "result" else e for e in entries]


# Control characters other than tab, line ends and ESC (ANSI colours are text), C1 controls and U+FFFD: text
# has almost none, a binary dump decoded as text is a quarter of them.
_BINARY_CHAR_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")
_BINARY_SHARE = 0.10
_STRINGS_RE = re.compile(r"[ -~]{6,}")  # what `strings` prints: runs of 6+ printable ASCII characters
_STRINGS_MAX = 400


def _printable(entry: Entry) -> Entry:
    """A binary-looking tool result read as `strings` would (issue 23: a dump costs seconds per 100 KB and
    carries nothing but its printable runs), with a note of its size; any other entry as it is."""
    sample = entry.text[:65_536]
    if len(sample) < 256 or len(_BINARY_CHAR_RE.findall(sample)) < _BINARY_SHARE * len(sample):
        return entry
    runs = _STRINGS_RE.findall(entry.text)
    note = f"[binary-looking output, {len(entry.text):,} characters; its printable strings follow]"
    return Entry(entry.kind, "\n".join([note, *runs[:_STRINGS_MAX]]), entry.name)
