"""Streamed answers of the two other wire formats, read without side effects: SSE framing and assembly.

Owns splitting a server-sent-event byte stream into events with their `event:` names and raw bytes (`sse`;
the Anthropic SDK dispatches on those names, so a pass-through must keep them), and assembling the final
answer from the events: an Anthropic Messages stream into its message (`anthropic`), an OpenAI Responses
stream into its response object (`responses`). An assembler never raises on what the upstream sent: a stream
that ends before `message_stop` / `response.completed`, an `error` event, a failed or incomplete response,
or bytes that are not SSE JSON end as a `StreamOutcome` (`outcome`) that says so, and only a complete stream
carries an answer. Pure: no Django, no IO; the gateway's endpoints use these names through this door.
"""
from flows.gateway.streams.anthropic import AnthropicStream
from flows.gateway.streams.outcome import StreamOutcome
from flows.gateway.streams.responses import ResponsesStream
from flows.gateway.streams.sse import SseEvent, SseParser, assemble

__all__ = ["SseEvent", "SseParser", "StreamOutcome", "AnthropicStream", "ResponsesStream", "assemble"]
