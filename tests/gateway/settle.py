"""Reading a chain the gateway is still writing: a call's answer and record are written after the response went
out (flows.gateway.calls.finish), so a test that reads right after its client returned waits for them first."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

SETTLE_SECONDS = 30


def wait_calls_closed(query: Callable[[str], Any], chain_id: int) -> None:
    """Return once every gateway call of `chain_id` is closed; `query` evaluates an expression in the server's
    Django shell (the stands' `query`)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while query(f"GatewayCall.objects.filter(chain_id={chain_id}, finished_at=None).count()"):
        assert time.monotonic() < deadline, f"a call record of chain {chain_id} was never closed"
        time.sleep(0.05)
