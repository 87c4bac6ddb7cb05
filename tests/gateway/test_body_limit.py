"""Gateway answers outside the happy path: a body over the request limit, an unknown /v1/ path (OpenAI JSON)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client, override_settings

from flows.models import ApiToken, Chain

pytestmark = pytest.mark.django_db


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_over_the_limit_is_a_413_in_openai_form_and_writes_nothing(user: Any) -> None:
    _, token = ApiToken.issue(user=user)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]})
    response = Client().post("/v1/chat/completions", data=body, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert not Chain.objects.exists()
    stranger = Client().post("/v1/chat/completions", data=body, content_type="application/json")
    assert stranger.status_code == 401  # the token first: a stranger learns nothing about the limit


def test_an_unknown_gateway_path_is_an_openai_404(user: Any) -> None:
    _, token = ApiToken.issue(user=user)
    response = Client().post("/v1/embeddings", data="{}", content_type="application/json",
                             HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_url"
