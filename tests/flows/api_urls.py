"""URL conf for API/admin tests: only the API and the admin, so they do not depend on the pages' state."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("flows.api.urls")),
]
