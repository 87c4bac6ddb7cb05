"""The wire formats the gateway speaks, one `Protocol` each, over one call path.

A protocol reads a request into our messages and the extra tokens the provider counts (`ExtraTokens`: tool
schemas, reserved output), renders errors in the wire's JSON, builds the upstream request (the agent's bytes,
or a fitted view rebuilt in the wire's shape), and reads the answer whole or streamed (`StreamReader`).
`base` holds the contract, `chat` OpenAI Chat Completions, `responses` OpenAI Responses (our response ids
in `gateway/response_store.py`).
"""
from flows.gateway.protocols.base import ExtraTokens, Protocol, StreamReader, StreamResult, tools_and_reserve
from flows.gateway.protocols.chat import CHAT, ChatProtocol
from flows.gateway.protocols.responses import RESPONSES, ResponsesProtocol

__all__ = ["CHAT", "ChatProtocol", "RESPONSES", "ResponsesProtocol", "ExtraTokens", "Protocol", "StreamReader",
           "StreamResult", "tools_and_reserve"]
