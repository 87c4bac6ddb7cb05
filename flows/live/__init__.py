"""Live updates in the browser: the WebSocket consumers, their URLs, the Origin check, the per-user socket cap,
the bound on handshakes in flight, sessions that end their user's sockets (logout, password change,
deactivation), and the endpoint through which another process on this machine hands the server events and tasks.
"""
from flows.live.handshakes import HandshakeGate
from flows.live.limits import MAX_SOCKETS_PER_USER
from flows.live.origin import SameOriginValidator
from flows.live.relay_server import relay_endpoint
from flows.live.sessions import CLOSE_RECONNECT, CLOSE_SIGNED_OUT, connect_session_signals
from flows.live.urls import websocket_urlpatterns

__all__ = [
    "CLOSE_RECONNECT", "CLOSE_SIGNED_OUT", "connect_session_signals", "HandshakeGate", "MAX_SOCKETS_PER_USER",
    "relay_endpoint",
    "SameOriginValidator", "websocket_urlpatterns",
]
