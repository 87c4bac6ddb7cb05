"""The flows app's fixtures (users, clients, flow/agent/chain factories) for the security checks."""
import pytest  # noqa: E402

from tests.flows.conftest import *  # noqa: F401,F403 - fixtures are found by name in this module


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Every test makes users; the production hasher's deliberate slowness would dominate the suite's time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
