"""Routes of the JSON API. Every path takes an optional trailing slash; unknown /api/ paths answer JSON 404."""
from django.http import HttpRequest, JsonResponse
from django.urls import re_path
from django.views.decorators.csrf import csrf_exempt

from flows.api import openapi, views_chains, views_flows, views_import, views_settings
from flows.api.errors import api_endpoint, api_endpoint_async, error_response

ID = r"(?P<{}>\d{{1,18}})"  # bounded so a huge number is a 404, not a database overflow


@csrf_exempt  # else Django's CSRF check answers a POST to an unknown path with an HTML 403 instead of this JSON 404
def _unknown(request: HttpRequest, rest: str = "") -> JsonResponse:
    return error_response(404, "not_found", f"no API endpoint at {request.path}")


urlpatterns = [
    re_path(r"^openapi\.json/?$", openapi.schema_view, name="api-openapi"),
    re_path(r"^flows/?$", api_endpoint(views_flows.flows_collection), name="api-flows"),
    re_path(rf"^flows/{ID.format('flow_id')}/?$", api_endpoint(views_flows.flow_detail), name="api-flow"),
    re_path(rf"^flows/{ID.format('flow_id')}/agents/?$", api_endpoint(views_flows.flow_agents),
            name="api-flow-agents"),
    re_path(rf"^flows/{ID.format('flow_id')}/export/?$", api_endpoint(views_flows.flow_export),
            name="api-flow-export"),
    re_path(rf"^chains/{ID.format('chain_id')}/?$", api_endpoint_async(views_chains.chain_detail), name="api-chain"),
    re_path(rf"^chains/{ID.format('chain_id')}/messages/?$", api_endpoint(views_chains.chain_messages_endpoint),
            name="api-chain-messages"),
    re_path(rf"^chains/{ID.format('chain_id')}/events/?$", api_endpoint(views_chains.chain_events_endpoint),
            name="api-chain-events"),
    re_path(rf"^chains/{ID.format('chain_id')}/compact/?$", api_endpoint(views_chains.chain_compact_endpoint),
            name="api-chain-compact"),
    re_path(rf"^chains/{ID.format('chain_id')}/preview/?$", api_endpoint(views_chains.chain_preview_endpoint),
            name="api-chain-preview"),
    re_path(r"^import/?$", api_endpoint(views_import.import_endpoint), name="api-import"),
    re_path(r"^settings/(?P<profile>[a-z]{1,20})/?$", api_endpoint(views_settings.settings_endpoint),
            name="api-settings"),
    re_path(r"^(?P<rest>[\s\S]*)$", _unknown),  # not `.*`: `.` stops at a newline (%0A) in the path
]
