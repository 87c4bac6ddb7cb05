"""A scripted upstream that counts a request the way a self-hosted provider does, and refuses what exceeds its
window: the messages with a per-message skew, the tool schemas as the JSON its chat template pastes into the
prompt (not the rendering OpenAI uses, which is what we count), and the requested max output. Its reported
`prompt_tokens` are its own count, so the gateway has a real mismatch to learn from."""
from __future__ import annotations

import json
import math
from typing import Any

from summarizer import count_tokens, text_tokens
from tests.gateway.upstream_fake import FakeUpstream

MESSAGE_SKEW = 1.05  # another tokenizer: 5 % more tokens for the same text


class CountingUpstream(FakeUpstream):
    def __init__(self, window_tokens: int) -> None:
        super().__init__(window_tokens=window_tokens)
        self.refused: list[dict[str, Any]] = []

    @staticmethod
    def max_output(body: dict[str, Any]) -> int:
        value = body.get("max_completion_tokens", body.get("max_tokens"))
        return value if isinstance(value, int) else 0

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        messages = count_tokens(body["messages"], model="gpt-4o") * MESSAGE_SKEW
        tools = text_tokens(json.dumps(body["tools"]), model="gpt-4o") + 20 if body.get("tools") else 0
        schema = text_tokens(json.dumps(body["response_format"]), model="gpt-4o") if body.get("response_format") else 0
        return math.ceil(messages + tools + schema)

    def refusal(self, body: dict[str, Any], tokens: int) -> str:
        if tokens + self.max_output(body) <= self.window_tokens:
            return ""
        with self.lock:
            self.refused.append({"prompt": tokens, "max_output": self.max_output(body)})
        return "overflow"

    def overflow_message(self, body: dict[str, Any], tokens: int) -> str:
        out = self.max_output(body)
        return (f"This model's maximum context length is {self.window_tokens} tokens. However, you requested "
                f"{tokens + out} tokens ({tokens} in the messages, {out} in the completion). Please reduce the "
                "length of the messages or completion.")
