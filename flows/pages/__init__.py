"""The server-rendered pages: flows list, flow page, chain page and its satellites, settings, upload.

Views only translate in and out; reads are `selectors` (one module for every page), 404s `lookup`, forms
`forms` (shared with the admin).
"""
from flows.pages.context_breakdown import chain_context_json
from flows.pages.forms import EnvImportForm, ProviderConfigForm, SummarizerSettingsForm

__all__ = [
    "chain_context_json", "EnvImportForm", "ProviderConfigForm", "SummarizerSettingsForm",
]
