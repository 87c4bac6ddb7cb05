"""The flows app's fixtures (users, clients, flow/agent/chain factories) for the reliability suite."""
from tests.flows.conftest import *  # noqa: F401,F403 - fixtures are found by name in this module
