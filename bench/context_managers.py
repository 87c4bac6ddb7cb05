"""The context managers compared by bench/compare_context_managers.py, behind one small interface.

Each manager is replayed turn by turn: `turn(new)` hands it the messages an agent produced since the last
model call, `view()` is what the model would receive next (OpenAI chat dicts, system prompt first). Every
one summarizes with the same stub model, `StubModel`: our offline extractive summarizer, counted (calls and
input bytes), so differences come from the policy (when, what and how much to summarize), not the model.

- `Ours`: PentAGI chain summarization with a profile, then fit_to_window (what flows.pipeline.summarization runs).
- `OursWindow`: the window-aware strategy of a profile, then fit_to_window without its restore step (as the
  pipeline runs it under `strategy: window`).
- `LangChainSummarization`: langchain's SummarizationMiddleware, its before_model hook applied to the agent
  state; trigger/keep in tokens of the same window; other knobs at their defaults.
- `LangMemSummarization`: langmem's summarize_messages over the full history with its RunningSummary.
- `Truncation`: keep the system prompt and the newest messages that fit; no model at all (the floor).
LangChain and LangMem are imported lazily: they live only in .venv-bench (scripts/bench).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from summarizer import (
    COMPACTION_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    ContextTooLarge,
    SummarizerConfig,
    WindowTarget,
    count_tokens,
    fit_to_window,
    make_extractive,
    split_turns,
    summarize_chain,
    summarize_chain_for_window,
)

__all__ = ["StubModel", "Manager", "Ours", "OursWindow", "LangChainSummarization", "LangMemSummarization", "Truncation",
           "budget_tokens", "split_turns", "normalized", "RESERVE_SHARE", "STUB_SUMMARY_BYTES", "STUB_SUMMARY_TOKENS"]

Message = dict[str, Any]
RESERVE_SHARE = 0.2            # compaction.md §3: the answer reserve is at most 20% of the window
STUB_SUMMARY_BYTES = 8192      # the extractive summarizer's default output budget
STUB_SUMMARY_TOKENS = 2048     # the same, in tokens (about 4 bytes per token), for LangMem's summary budget


def budget_tokens(window_tokens: int) -> int:
    """Prompt tokens every manager must stay under: the window minus the answer reserve."""
    return window_tokens - int(window_tokens * RESERVE_SHARE)


class StubModel:
    """summarize(text) -> extractive summary; counts calls and the UTF-8 bytes it was given (the cost proxy).

    `system`: the system prompt the product sends beside each such call (flows.pipeline.llm sends ours as a
    separate message; LangChain and LangMem put their whole prompt in the text), counted as input too: it is
    billed like the rest. `with_system` gives a callable for another purpose that counts into the same totals."""

    def __init__(self, system: str = "") -> None:
        self._summarize = make_extractive(STUB_SUMMARY_BYTES)
        self.system_bytes = len(system.encode("utf-8"))
        self.calls = 0
        self.input_bytes = 0

    def __call__(self, text: str) -> str:
        return self._count(text, self.system_bytes)

    def _count(self, text: str, system_bytes: int) -> str:
        self.calls += 1
        self.input_bytes += system_bytes + len(text.encode("utf-8"))
        return self._summarize(text)

    def with_system(self, system: str) -> Callable[[str], str]:
        system_bytes = len(system.encode("utf-8"))
        return lambda text: self._count(text, system_bytes)


class Manager:
    name = "manager"

    def __init__(self, window_tokens: int) -> None:
        self.window_tokens = window_tokens
        self.budget = budget_tokens(window_tokens)
        self.model = StubModel()
        self.refused = 0  # model calls the manager declared impossible (ContextTooLarge)

    def turn(self, new: list[Message]) -> None:
        raise NotImplementedError

    def view(self) -> list[Message]:
        raise NotImplementedError


class Ours(Manager):
    """View + new messages -> summarize_chain(profile) -> fit_to_window, as the pipeline does after a turn."""

    def __init__(self, window_tokens: int, profile: str) -> None:
        super().__init__(window_tokens)
        self.name = f"ours ({profile})"
        self.model = StubModel(SUMMARY_SYSTEM_PROMPT)  # the system prompts flows.pipeline.llm sends
        self.checkpoint_model = self.model.with_system(COMPACTION_SYSTEM_PROMPT)
        self.config: SummarizerConfig = getattr(SummarizerConfig, profile)()
        self._view: list[Message] = []
        self.errors = 0
        self.restore = True  # the fit's step a (PentAGI's restore profile); the window strategy skips it

    def turn(self, new: list[Message]) -> None:
        self._finish(summarize_chain(self._view + new, self.config, self.model))

    def _finish(self, result: Any) -> None:
        if result.error:
            self.errors += 1  # PentAGI semantics: the chain stays as it was, nothing lost
        try:
            fit = fit_to_window(result.messages, window_tokens=self.window_tokens, summarize=self.checkpoint_model,
                                restore=self.restore)
        except ContextTooLarge:
            # The system prompt + current request + newest round alone exceed the budget: the pipeline records
            # the failure and keeps the summarized view (the next turn's fit starts from it).
            self.refused += 1
            self._view = result.messages
            return
        self._view = fit.messages

    def view(self) -> list[Message]:
        return self._view


class OursWindow(Ours):
    """The window-aware strategy of a profile (summarize_chain_for_window), then fit_to_window."""

    def __init__(self, window_tokens: int, profile: str, *, trigger_percent: int = 100, margin_percent: int = 50,
                 input_tokens: int = 0, local_folds: bool = True) -> None:
        super().__init__(window_tokens, profile)
        bound = f", input ≤ {input_tokens:,} tokens" if input_tokens else ""
        every = ", every fold by the model" if input_tokens and not local_folds else ""
        self.name = f"ours ({profile}, window{bound}{every})"
        self.target = WindowTarget(window_tokens, window_tokens - self.budget, trigger_percent, margin_percent,
                                   input_tokens=input_tokens, local_folds=local_folds)
        self.restore = False  # as the pipeline's fit under strategy: window (flows/pipeline/fitting.py)

    def turn(self, new: list[Message]) -> None:
        result = summarize_chain_for_window(self._view + new, self.config, self.model, target=self.target)
        self._finish(result)


class Truncation(Manager):
    """Keep the system prompt and the newest messages within the budget, never starting on a tool result."""

    name = "truncation (last N tokens)"

    def __init__(self, window_tokens: int) -> None:
        super().__init__(window_tokens)
        self.raw: list[Message] = []

    def turn(self, new: list[Message]) -> None:
        self.raw.extend(new)

    def view(self) -> list[Message]:
        head = self.raw[:1] if self.raw and self.raw[0]["role"] == "system" else []
        body = self.raw[len(head):]
        used = count_tokens(head)
        start = len(body)
        while start > 0 and used + count_tokens([body[start - 1]]) - 3 <= self.budget:
            start -= 1
            used += count_tokens([body[start]]) - 3  # count_tokens adds 3 reply-priming tokens per call
        while start < len(body) and body[start]["role"] == "tool":
            start += 1  # a tool result without its call is invalid for every provider
        return head + body[start:]


def _text_of(messages: list[Any]) -> str:
    from langchain_core.messages import get_buffer_string

    return get_buffer_string(messages)


def _stub_chat_model(stub: StubModel) -> Any:
    """A langchain chat model whose every reply is the stub's summary of the text it was sent."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ExtractiveChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "extractive-stub"

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=stub(_text_of(messages))))])

    return ExtractiveChatModel()


class _Ids:
    """Gives converted messages ids and remembers the agent's own dicts, so kept messages go back unchanged
    (a round trip through langchain re-serializes tool arguments, which would change their token counts)."""

    def __init__(self) -> None:
        self.originals: dict[str, Message] = {}

    def to_langchain(self, messages: list[Message]) -> list[Any]:
        from langchain_core.messages import convert_to_messages

        out = list(convert_to_messages(messages))
        for msg, original in zip(out, messages, strict=False):
            msg.id = f"m{len(self.originals)}"
            self.originals[msg.id] = original
        return out

    def to_openai(self, messages: list[Any]) -> list[Message]:
        return [self.originals[m.id] if m.id in self.originals else _to_openai([m])[0] for m in messages]


def _to_openai(messages: list[Any]) -> list[Message]:
    from langchain_core.messages import convert_to_openai_messages

    return list(convert_to_openai_messages(messages))


def _token_counter() -> Callable[[list[Any]], int]:
    """Counts langchain messages with our tokenizer, so every manager measures the window the same way."""
    return lambda messages: count_tokens(_to_openai(list(messages)))


class LangChainSummarization(Manager):
    """The agent state goes through SummarizationMiddleware.before_model before every model call."""

    name = "langchain SummarizationMiddleware"

    def __init__(self, window_tokens: int) -> None:
        super().__init__(window_tokens)
        from langchain.agents.middleware import SummarizationMiddleware

        self._middleware_class = SummarizationMiddleware
        self.middleware: Any = None
        self.system: list[Message] = []
        self.state: list[Any] = []  # create_agent keeps the system prompt outside the state; so do we
        self.ids = _Ids()

    def _start(self, system: list[Message]) -> None:
        """Trigger at the budget left after the system prompt; keep half of it verbatim (as our fit does)."""
        self.system = system
        budget = self.budget - (count_tokens(system) if system else 0)
        self.middleware = self._middleware_class(
            _stub_chat_model(self.model), trigger=("tokens", budget), keep=("tokens", budget // 2),
            token_counter=_token_counter())

    def turn(self, new: list[Message]) -> None:
        if self.middleware is None:
            has_system = bool(new) and new[0]["role"] == "system"
            self._start(new[:1] if has_system else [])
            new = new[1:] if has_system else new
        self.state.extend(self.ids.to_langchain(new))
        update = self.middleware.before_model({"messages": self.state}, None)  # the hook ignores runtime
        if update is not None:
            self.state = list(update["messages"][1:])  # [RemoveMessage(REMOVE_ALL), summary, *kept]

    def view(self) -> list[Message]:
        return self.system + self.ids.to_openai(self.state)


class LangMemSummarization(Manager):
    """summarize_messages over the whole history before every call, carrying its RunningSummary."""

    name = "langmem summarize_messages"

    def __init__(self, window_tokens: int) -> None:
        super().__init__(window_tokens)
        from langmem.short_term import summarize_messages

        self._summarize_messages = summarize_messages
        self.chat_model = _stub_chat_model(self.model)
        self.history: list[Any] = []
        self.running: Any = None
        self._view: list[Message] = []
        self.ids = _Ids()  # summarize_messages tracks what it summarized by message id

    def turn(self, new: list[Message]) -> None:
        self.history.extend(self.ids.to_langchain(new))
        result = self._summarize_messages(
            self.history, running_summary=self.running, model=self.chat_model, max_tokens=self.budget,
            max_tokens_before_summary=self.budget, max_summary_tokens=STUB_SUMMARY_TOKENS,
            token_counter=_token_counter())
        self.running = result.running_summary
        self._view = self.ids.to_openai(result.messages)

    def view(self) -> list[Message]:
        return self._view


def normalized(message: Message) -> str:
    """A comparable key for a message across converters (None vs "" content, re-serialized arguments)."""
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        args = fn.get("arguments")
        try:
            args = json.dumps(json.loads(args), sort_keys=True) if isinstance(args, str) else json.dumps(args)
        except ValueError:
            pass
        calls.append([call.get("id"), fn.get("name"), args])
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return json.dumps([message.get("role"), content or "", calls, message.get("tool_call_id") or ""])
