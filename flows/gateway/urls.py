"""Gateway routes, mounted at /v1/ by the project urls (OpenAI clients append /chat/completions to base_url)."""
from django.urls import path, re_path

from flows.gateway import response_views, views

urlpatterns = [
    path("chat/completions", views.chat_completions, name="gateway-chat-completions"),
    path("models", views.models, name="gateway-models"),
    path("responses", views.responses, name="gateway-responses"),
    path("responses/<str:response_id>", response_views.response_item, name="gateway-response"),
    path("responses/<str:response_id>/input_items", response_views.response_items, name="gateway-response-items"),
    re_path(r"^(?P<rest>[\s\S]*)$", views.unknown, name="gateway-unknown"),  # OpenAI JSON, not an HTML page
]
