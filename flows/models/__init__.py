"""The flows app's models, split by concern (history, settings, providers)."""
from .chains import (
    AGENT_TYPES,
    ROLES,
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
)
from .gateway import CallStatus, GatewayCall, GatewayMode
from .providers import ApiToken, LLMCall, ModelWindow, ProviderConfig, ProviderKind, hash_token
from .settings import IdentifierPolicy, PruningMode, SettingsChange, SummarizerSettings

__all__ = [
    "AGENT_TYPES", "ROLES", "Agent", "AppendOnlyError", "Chain", "ChainView", "Flow", "FlowStatus", "MemoryNote",
    "Message", "Outcome", "Profile", "ViewSection", "SummaryEvent", "Trigger", "ApiToken", "LLMCall", "ModelWindow",
    "ProviderConfig", "ProviderKind", "hash_token", "IdentifierPolicy", "PruningMode", "SettingsChange",
    "SummarizerSettings", "CallStatus", "GatewayCall", "GatewayMode",
]
