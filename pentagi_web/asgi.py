"""ASGI entry point: HTTP through Django (the /v1/ gateway and an agent's API calls without the page middleware),
WebSockets through Channels behind session auth and an Origin check (scheme + host + port, like Django's CSRF check: see
flows/live/origin.py); every request body within its route's limit (pentagi_web/body_limits.py)."""
from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")
django_asgi_app = get_asgi_application()  # must run before importing anything that touches models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from flows.api import ApiHandler, bearer_api  # noqa: E402
from flows.gateway import GatewayHandler, by_path, sweeper_start  # noqa: E402
from flows.live import HandshakeGate, SameOriginValidator, websocket_urlpatterns  # noqa: E402
from pentagi_web import daphne_limits  # noqa: E402
from pentagi_web.body_limits import BodyLimit  # noqa: E402
from pentagi_web.request_ids import RequestIds  # noqa: E402

daphne_limits.install()  # bodies refused before Twisted buffers them (see pentagi_web/body_limits.py)
sweeper_start()  # in every server process (`manage.py run`, plain Daphne): nothing stays "running"

application = ProtocolTypeRouter(
    {
        # The OpenAI-compatible gateway and an agent's bearer-token appends and reads skip the page middleware
        # (see flows/gateway/asgi.py, flows/api/asgi.py).
        # Bodies over their route's limit are refused before they are read (pentagi_web/body_limits.py).
        "http": RequestIds(BodyLimit(by_path(bearer_api(django_asgi_app, ApiHandler()), GatewayHandler()))),
        # Handshakes past WS_HANDSHAKES_IN_FLIGHT are told to reconnect before any database work (a storm of
        # reconnecting tabs would otherwise time out in Daphne unanswered: flows/live/handshakes.py).
        "websocket": SameOriginValidator(HandshakeGate(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))),
    }
)
