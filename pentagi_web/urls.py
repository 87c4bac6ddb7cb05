"""Project URL routes: admin, login/logout, and the flows app (API + pages)."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("v1/", include("flows.gateway.urls")),  # the OpenAI-compatible gateway
    path("", include("flows.urls")),
]
