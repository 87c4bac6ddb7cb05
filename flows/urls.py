"""URL routes of the flows app: the JSON API under /api/, the pages, a gateway call's page and the relay.

The gateway's own endpoints are mounted at /v1/ by the project (`pentagi_web/urls.py`).
"""
from django.urls import include, path

from flows.gateway import gateway_call_page
from flows.live import relay_endpoint

urlpatterns: list = [
    path("api/", include("flows.api.urls")),
    path("chains/<int:chain_id>/calls/<int:call_id>/", gateway_call_page, name="gateway-call"),
    path("internal/relay/", relay_endpoint, name="internal-relay"),
    path("", include("flows.pages.urls")),
]
