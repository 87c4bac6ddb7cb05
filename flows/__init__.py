"""The flows app (Django app label `flows`): one folder per capability, each folder's `__init__` its door.

engine.py   the one door into the pure engine (`summarizer`)
core/       the foundation: live events, the task queue, the relay client, setting specs, text checks
models/     the rows (flows, agents, chains, messages, views, events, settings, providers, gateway calls)
config/     settings registry and writes, .env import/export, model endpoints and windows, compaction plugins
ingest/     messages in: append, import, replay, accounts, the bearer-token check
pipeline/   what the model receives: summarize, fit, compact, preview; Celery tasks and the embedded worker
gateway/    the OpenAI-compatible /v1/ endpoints, end to end
live/       WebSockets: consumer, URLs, Origin check, socket cap, the relay endpoint
pages/      server-rendered pages, their reads and forms
api/        the JSON API
demo/       the built-in demo agent
management/ manage.py commands; templatetags/ template filters; admin.py, apps.py, urls.py as Django expects

docs/architecture.md walks one appended message and one gateway call through these folders.
"""
