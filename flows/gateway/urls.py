"""Gateway routes, mounted at /v1/ by the project urls (OpenAI clients append /chat/completions to base_url)."""
from django.urls import path, re_path

from flows.gateway import views

urlpatterns = [
    path("chat/completions", views.chat_completions, name="gateway-chat-completions"),
    path("models", views.models, name="gateway-models"),
    re_path(r"^(?P<rest>[\s\S]*)$", views.unknown, name="gateway-unknown"),  # OpenAI JSON, not an HTML page
]
