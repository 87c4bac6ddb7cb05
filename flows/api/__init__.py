"""The JSON API: flows, agents, chains, import/export and settings (docs/api.md).

`urls` wires the routes (mounted at /api/ by `flows.urls`), `views_*` translate requests into calls of the
capabilities' doors, `selectors` holds the API's reads, `serializers` turns rows into JSON, `errors` the error
contract, `auth` who is asking (a bearer token or the browser session), `openapi` the schema, `asgi` the
handler that serves an agent's bearer-token calls without the page middleware.
"""
from flows.api.asgi import ApiHandler, bearer_api

__all__ = ["ApiHandler", "bearer_api"]
