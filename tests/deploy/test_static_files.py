"""The documented production path: `collectstatic`, then plain Daphne with DEBUG off serves /static/ itself
(WhiteNoise): 200, the hashed names the pages link to, compressed bodies and far-future cache headers."""
from __future__ import annotations

import gzip
import re
import urllib.request

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import Stack

YEAR_SECONDS = 365 * 24 * 3600


@pytest.fixture
def stack(tmp_path):
    stack = Stack.create(tmp_path, DEBUG="false", STATIC_ROOT=str(tmp_path / "collected"))
    yield stack
    stack.close()


def _get(url: str, **headers: str):
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)


def _max_age(response) -> int:
    match = re.search(r"max-age=(\d+)", response.headers.get("Cache-Control", ""))
    return int(match.group(1)) if match else 0


def test_plain_daphne_serves_collected_static_files_compressed_and_cached(stack, tmp_path):
    stack.manage("migrate", "--noinput")
    stack.manage("collectstatic", "--noinput")
    port = free_port()
    stack.start_daphne(port)
    base = f"http://127.0.0.1:{port}"
    page = _get(base + "/accounts/login/").read().decode()
    css = re.search(r'href="(/static/css/app\.[0-9a-f]{12}\.css)"', page)
    assert css, page[:2000]  # the page links the hashed name from the manifest
    response = _get(base + css.group(1), **{"Accept-Encoding": "gzip"})
    assert response.status == 200
    assert response.headers["Content-Encoding"] == "gzip"
    assert "immutable" in response.headers["Cache-Control"] and _max_age(response) >= YEAR_SECONDS
    assert b"{" in gzip.decompress(response.read())
    for name in ("css/app.css", "js/live.js"):
        plain = _get(f"{base}/static/{name}")
        assert plain.status == 200 and plain.read()
        assert 0 < _max_age(plain) < YEAR_SECONDS  # unhashed names may change: short cache only


def test_before_collectstatic_the_pages_still_get_their_files(stack):
    stack.manage("migrate", "--noinput")
    port = free_port()
    stack.start_daphne(port)
    base = f"http://127.0.0.1:{port}"
    page = _get(base + "/accounts/login/").read().decode()
    assert 'href="/static/css/app.css"' in page
    assert _get(base + "/static/css/app.css").status == 200
