"""Every request (a gateway call above all) runs its middleware on the event loop: one sync-only middleware
would make Django wrap the whole chain below it in a thread hop and back on every request."""
from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import AsyncClient
from django.utils.module_loading import import_string

from pentagi_web.static_middleware import StaticFilesMiddleware


def test_every_configured_middleware_is_async_capable() -> None:
    sync_only = [path for path in settings.MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []


@pytest.mark.django_db
def test_static_files_are_served_and_other_paths_pass_through() -> None:
    static = next(path for path in StaticFilesMiddleware(lambda request: None).whitenoise.files
                  if path.endswith(".css"))

    async def fetch(path: str) -> tuple[int, bytes]:
        response = await AsyncClient().get(path)
        return response.status_code, b"" if response.streaming else response.content  # a file: status only

    status, page = async_to_sync(fetch)("/accounts/login/")
    assert status == 200 and b"<form" in page
    assert async_to_sync(fetch)(static)[0] == 200
    assert async_to_sync(fetch)("/static/no-such-file.js")[0] == 404
