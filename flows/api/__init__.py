"""The JSON API (DESIGN.md "Contracts"): flows, agents, chains, import/export and settings."""
