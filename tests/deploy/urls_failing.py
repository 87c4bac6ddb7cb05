"""The project's routes plus two views that fail, to see what a 500 looks like (tests/deploy/test_server_errors.py)."""
from django.http import HttpRequest, HttpResponse
from django.urls import path

from pentagi_web import urls as project_urls


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug, for the test")


urlpatterns = [path("v1/fail", fail), path("api/fail", fail), *project_urls.urlpatterns]
handler500 = project_urls.handler500
