"""URL routes of the flows app: the JSON API under /api/ and the server-rendered pages."""
from django.urls import include, path

urlpatterns: list = [
    path("api/", include("flows.api.urls")),
    path("", include("flows.views.urls")),
]
