"""WhiteNoise (hashed, compressed, far-future cached static files) as an async-capable middleware.

WhiteNoise's own middleware is sync-only, so under ASGI Django would wrap every request below it in a thread
hop and back (sync_to_async around WhiteNoise, async_to_sync around the rest of the chain): milliseconds on
every gateway call and page for nothing. Here a static path is answered by WhiteNoise (file work in a worker
thread) and every other request goes straight on, on the event loop.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware

__all__ = ["StaticFilesMiddleware"]


class StaticFilesMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.whitenoise = WhiteNoiseMiddleware(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if self.is_async:
            return self._acall(request)
        return self.whitenoise(request)

    def _static_file(self, request: HttpRequest) -> Any:
        if self.whitenoise.autorefresh:  # DEBUG: looks on disk
            return self.whitenoise.find_file(request.path_info)
        return self.whitenoise.files.get(request.path_info)

    def _serve(self, request: HttpRequest) -> HttpResponseBase | None:
        static_file = self._static_file(request)
        return None if static_file is None else self.whitenoise.serve(static_file, request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        if self.whitenoise.autorefresh or request.path_info in self.whitenoise.files:
            response = await sync_to_async(self._serve, thread_sensitive=False)(request)
            if response is not None:
                return response
        return await self.get_response(request)
