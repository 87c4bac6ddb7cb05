"""WebSocket URL routes: one socket per page (a chain page's chain, or a flow page's whole flow)."""
from django.urls import path

from flows.live.consumers import ChainConsumer
from flows.live.flow_consumer import FlowConsumer

websocket_urlpatterns = [
    path("ws/chains/<int:chain_id>/", ChainConsumer.as_asgi()),
    path("ws/flows/<int:flow_id>/", FlowConsumer.as_asgi()),
]
