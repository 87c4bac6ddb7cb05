"""Live updates in the browser: the WebSocket consumer, its URLs, the Origin check, the per-user socket cap, and
the endpoint through which another process on this machine hands the server events and tasks.
"""
from flows.live.limits import MAX_SOCKETS_PER_USER
from flows.live.origin import SameOriginValidator
from flows.live.relay_server import relay_endpoint
from flows.live.urls import websocket_urlpatterns

__all__ = [
    "MAX_SOCKETS_PER_USER", "relay_endpoint", "SameOriginValidator", "websocket_urlpatterns",
]
