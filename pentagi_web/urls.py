"""Project URL routes: admin, login/logout, and the flows app (API + pages)."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from pentagi_web.login_throttle import ThrottledLoginView

urlpatterns = [
    # The admin's own login form would bypass the rate limit: it sends people to ours (keeping ?next=).
    path("admin/login/", RedirectView.as_view(pattern_name="login", query_string=True)),
    path("admin/", admin.site.urls),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The gateway with the agent run's session in the base URL (flows/gateway/sessions.py reads it from the
    # path); listed before /v1/ so that reversing a gateway route names /v1/.
    re_path(r"^s/[^/]*/v1/", include("flows.gateway.urls")),
    path("v1/", include("flows.gateway.urls")),  # the OpenAI-compatible gateway
    path("", include("flows.urls")),
]

handler500 = "pentagi_web.error_pages.server_error"  # JSON on /v1/ and /api/, with the request id
