"""Login rate limiting per client address and username, and the HTTPS switch's settings."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.test import Client

from pentagi_web.login_throttle import MAX_FAILURES_PER_ADDRESS, MAX_FAILURES_PER_USER
from tests.app_fixtures import PASSWORD
from tests.flows.pipeline_live import ROOT

pytestmark = pytest.mark.django_db
LOGIN = "/accounts/login/"


def _login(client: Client, username: str, password: str, address: str = "198.51.100.7"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_it_refuses_even_the_right_password_after_too_many_failures(user):
    client = Client()
    for _ in range(MAX_FAILURES_PER_USER):
        assert _login(client, "alice", "wrong").status_code == 200
    refused = _login(client, "alice", PASSWORD)
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 0
    assert "Too many failed logins" in refused.content.decode()
    assert "_auth_user_id" not in client.session


def test_another_address_or_username_is_not_locked_out(user, other_user):
    client = Client()
    for _ in range(MAX_FAILURES_PER_USER):
        _login(client, "alice", "wrong")
    assert _login(Client(), "alice", PASSWORD, address="203.0.113.9").status_code == 302
    assert _login(Client(), "mallory", PASSWORD).status_code == 302


def test_one_address_trying_many_usernames_is_stopped(user):
    client = Client()
    for n in range(MAX_FAILURES_PER_ADDRESS):
        _login(client, f"guess{n}", "wrong")
    assert _login(client, "alice", PASSWORD).status_code == 429


def test_a_success_clears_the_count_of_that_username(user):
    client = Client()
    for _ in range(MAX_FAILURES_PER_USER - 1):
        _login(client, "alice", "wrong")
    assert _login(client, "alice", PASSWORD).status_code == 302
    for _ in range(MAX_FAILURES_PER_USER - 1):
        assert _login(Client(), "alice", "wrong").status_code == 200


def test_the_admin_login_goes_through_the_limited_form():
    response = Client().get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == f"{LOGIN}?next=/admin/"


SHOW_HTTPS = ("from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
              "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER)")


def _https_settings(value: str) -> str:
    env = {"DJANGO_SETTINGS_MODULE": "pentagi_web.settings", "HTTPS": value, "PATH": "/usr/bin:/bin",
           "SECRET_KEY": "x" * 50}
    done = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {SHOW_HTTPS}"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_one_variable_switches_the_https_settings_on():
    assert _https_settings("true") == "True True True 31536000 ('HTTP_X_FORWARDED_PROTO', 'https')"
    assert _https_settings("") == "False False False 0 None"
