"""The rows of the flows app, split by concern: `chains` (flows, agents, chains, messages, views, events, memory
notes), `settings` (summarizer settings and their history), `providers` (endpoints, windows, tokens, model calls),
`gateway` (gateway calls), `fields` (JSON that PostgreSQL can store)."""
from flows.models.chains import (
    AGENT_TYPES,
    MESSAGE_COLUMNS,
    ROLES,
    SESSION_ID_CHARS,
    Agent,
    AppendOnlyError,
    Chain,
    ChainView,
    Flow,
    FlowStatus,
    MemoryNote,
    Message,
    Outcome,
    Profile,
    SummaryEvent,
    Trigger,
    ViewSection,
    sees_every_flow,
)
from flows.models.gateway import AgentLoop, CallStatus, GatewayCall, GatewayMode, GatewayResponse
from flows.models.providers import (
    ApiToken,
    LLMCall,
    ModelWindow,
    ProviderConfig,
    ProviderKind,
    TokenRatio,
    hash_token,
)
from flows.models.settings import IdentifierPolicy, PruningMode, SettingsChange, SummarizerSettings

__all__ = [
    "AGENT_TYPES", "MESSAGE_COLUMNS", "ROLES", "SESSION_ID_CHARS", "Agent", "AppendOnlyError", "Chain", "ChainView",
    "Flow", "FlowStatus",
    "MemoryNote", "Message", "Outcome", "Profile", "ViewSection", "SummaryEvent", "Trigger", "ApiToken", "LLMCall",
    "ModelWindow", "ProviderConfig", "ProviderKind", "hash_token", "IdentifierPolicy", "PruningMode",
    "SettingsChange", "SummarizerSettings", "AgentLoop", "CallStatus", "GatewayCall",
    "GatewayMode", "GatewayResponse", "TokenRatio", "sees_every_flow",
]
