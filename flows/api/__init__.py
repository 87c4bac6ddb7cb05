"""The JSON API (docs/design.md "Contracts", in full in docs/api.md): flows, agents, chains, import/export, settings."""
