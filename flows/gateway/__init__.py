"""The gateway: an OpenAI-compatible `/v1/chat/completions` that threads every call into a chain.

Modules: `wire` (request parsing, OpenAI error JSON), `routing` (token auth, provider and mode), `upstream`
(the per-process HTTP client), `sse` (assembling a streamed answer), `calls` (one call end to end) and
`views` (the ASGI endpoints). Writes go through `flows.services.gateway`, reads through `flows.selectors_gateway`.
"""
