"""Where a window cut may fall, and how a history is split into chunks without breaking tool pairs.

Theory (compaction.md §3.2 b, acceptance facts 18-32). Walking back from the newest message we sum tokens;
where the sum reaches the keep budget we move *forward* to the first valid cut point, so the kept tail never
exceeds the budget. A tool result is never a valid cut point (it would lose its call); a user or assistant
message is. Cutting at an assistant that is not the start of a turn splits that turn: the caller then
summarizes the turn's prefix separately so the kept suffix still makes sense.

Chunking for multi-call summaries follows the same rule in another form: a chunk boundary is never placed
while a tool call of the current chunk is still waiting for its result, so a call and its results always land
in the same chunk, even when a user message sits between them.
Every function here only decides (indices, lists); none calls a model.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CutPoint", "find_cut_point", "is_valid_cut_point", "turn_start_index", "split_messages_by_token_share",
           "prune_history_for_context_share", "PrunedHistory", "drop_orphan_tool_results", "is_aborted"]

Message = dict[str, Any]
Measure = Callable[[Message], int]


def _default_measure() -> Measure:
    from summarizer.tokens.count import message_tokens  # lazy: the counter owns tiktoken loading
    return message_tokens


@dataclass(frozen=True)
class CutPoint:
    """`first_kept`: first index kept verbatim; `turn_start`: the user message of a split turn, else -1."""

    first_kept: int
    turn_start: int = -1
    is_split_turn: bool = False


def is_valid_cut_point(message: Message) -> bool:
    return message.get("role") in ("user", "assistant")


def turn_start_index(messages: Sequence[Message], index: int, start: int = 0) -> int:
    """Index of the user message that opens the turn containing `index`, or -1 when none is at or after `start`."""
    for i in range(index, start - 1, -1):
        if messages[i].get("role") == "user":
            return i
    return -1


def find_cut_point(messages: Sequence[Message], *, keep_recent_tokens: int, start: int = 0, end: int | None = None,
                   tokens: Sequence[int] | None = None) -> CutPoint:
    """Pick the first message to keep verbatim so that about `keep_recent_tokens` of the newest stay.

    Only `messages[start:end]` are considered. When everything fits the budget, or there is no valid cut
    point, the cut is at `start` (nothing summarized, fact 18). When the budget is reached at a message with
    no valid cut point at or after it (the newest messages are one huge tool round), the nearest valid cut
    point before it is used instead: keeping a little more beats keeping the whole history.
    """
    end = len(messages) if end is None else end
    sizes = list(tokens) if tokens is not None else [_default_measure()(m) for m in messages]
    valid = [i for i in range(start, end) if is_valid_cut_point(messages[i])]
    if not valid:
        return CutPoint(first_kept=start)
    total = 0
    cut = start
    for i in range(end - 1, start - 1, -1):
        total += sizes[i]
        if total >= keep_recent_tokens:
            after = [c for c in valid if c >= i]
            before = [c for c in valid if c < i]
            cut = after[0] if after else before[-1]
            break
    if cut <= start or messages[cut].get("role") == "user":
        return CutPoint(first_kept=cut)
    turn = turn_start_index(messages, cut, start)
    return CutPoint(first_kept=cut, turn_start=turn, is_split_turn=turn != -1)


def is_aborted(message: Message) -> bool:
    """An assistant message cut off before it finished: its tool calls will never get results."""
    return bool(message.get("aborted")) or message.get("stop_reason") in ("aborted", "error")


def _call_ids(message: Message) -> list[str]:
    if message.get("role") != "assistant" or is_aborted(message):
        return []
    return [str(c.get("id", "")) for c in message.get("tool_calls") or [] if isinstance(c, dict)]


def split_messages_by_token_share(messages: Sequence[Message], parts: int = 2, *,
                                  tokens: Sequence[int] | None = None) -> list[list[Message]]:
    """Split into at most `parts` chunks of about equal tokens, never between a tool call and its results.

    A boundary is only placed when no call of the current chunk is still unanswered (calls of aborted
    assistants are not waited for, and a call whose result never comes simply keeps the rest together).
    """
    sizes = list(tokens) if tokens is not None else [_default_measure()(m) for m in messages]
    if parts <= 1 or len(messages) <= 1:
        return [list(messages)] if messages else []
    target = sum(sizes) / parts
    chunks: list[list[Message]] = []
    current: list[Message] = []
    current_tokens = 0
    pending: set[str] = set()
    for message, size in zip(messages, sizes, strict=False):
        if current and not pending and len(chunks) < parts - 1 and current_tokens + size > target:
            chunks.append(current)
            current, current_tokens = [], 0
        current.append(message)
        current_tokens += size
        if message.get("role") == "tool":
            pending.discard(str(message.get("tool_call_id", "")))
        pending.update(_call_ids(message))
    if current:
        chunks.append(current)
    return chunks


def drop_orphan_tool_results(kept: Sequence[Message], dropped: Sequence[Message]) -> tuple[list[Message], int]:
    """Remove tool results in `kept` whose call is in `dropped` (fact 32). Returns (kept, number removed)."""
    dropped_ids = {cid for m in dropped for cid in _call_ids(m)}
    dropped_ids |= {str(c.get("id", "")) for m in dropped for c in m.get("tool_calls") or [] if isinstance(c, dict)}
    out = [m for m in kept if not (m.get("role") == "tool" and str(m.get("tool_call_id", "")) in dropped_ids)]
    return out, len(kept) - len(out)


@dataclass
class PrunedHistory:
    messages: list[Message]
    dropped_messages: list[Message] = field(default_factory=list)
    dropped_chunks: int = 0
    dropped_tokens: int = 0
    kept_tokens: int = 0
    budget_tokens: int = 0


def prune_history_for_context_share(messages: Sequence[Message], max_tokens: int, share: float = 0.5, *,
                                    parts: int = 2, measure: Measure | None = None) -> PrunedHistory:
    """Drop the oldest chunks until the history takes at most `share` of `max_tokens` (facts 30-32).

    The newest messages are kept; everything dropped is returned too (dropped + kept = all messages).
    Tool results orphaned by a dropped call are removed from the kept part as well.
    """
    measure = measure or _default_measure()
    budget = int(max_tokens * share)
    kept = list(messages)
    chunks_dropped = 0
    while kept and sum(measure(m) for m in kept) > budget:
        chunks = split_messages_by_token_share(kept, parts, tokens=[measure(m) for m in kept])
        if len(chunks) <= 1:
            oldest, kept = kept[:1], kept[1:]
        else:
            oldest = chunks[0]
            kept = [m for chunk in chunks[1:] for m in chunk]
        kept, _ = drop_orphan_tool_results(kept, oldest)
        chunks_dropped += 1
    kept_ids = {id(m) for m in kept}
    dropped_all = [m for m in messages if id(m) not in kept_ids]
    return PrunedHistory(messages=kept, dropped_messages=dropped_all, dropped_chunks=chunks_dropped,
                         dropped_tokens=sum(measure(m) for m in dropped_all),
                         kept_tokens=sum(measure(m) for m in kept), budget_tokens=budget)
