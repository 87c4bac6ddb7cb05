"""WebSocket URL routes."""
from django.urls import path

from flows.live.consumers import ChainConsumer

websocket_urlpatterns = [path("ws/chains/<int:chain_id>/", ChainConsumer.as_asgi())]
