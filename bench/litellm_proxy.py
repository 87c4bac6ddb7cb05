"""LiteLLM's proxy in front of the bench's instant upstream, for `gateway_overhead.py --against-litellm`.

The proxy is the reference for a gateway's added latency (issue 25: our p99 at most LiteLLM's in the same run).
It is a benchmark-only dependency with its own venv, `.venv-litellm` (`scripts/bench gateway` makes it from
bench/requirements-litellm.txt; LiteLLM pins its own openai, tiktoken and pydantic, which must not replace the
project's), never the product's. It runs as its own process (`litellm --config`, one uvicorn worker,
no database, no callbacks, no telemetry) with one model, `bench-model`, routed to the instant upstream as an
OpenAI-compatible endpoint, exactly as our gateway's `bench-up` provider is.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["LiteLLMProxy", "litellm_command"]

START_TIMEOUT_SECONDS = 120.0
MASTER_KEY = "sk-bench-litellm"


ROOT = Path(__file__).resolve().parent.parent


def litellm_command() -> str | None:
    """The `litellm` CLI: $LITELLM_BIN, else .venv-litellm's, else beside this interpreter, else on PATH; None when
    it is not installed."""
    for candidate in (os.environ.get("LITELLM_BIN", ""), ROOT / ".venv-litellm/bin/litellm",
                      Path(sys.executable).parent / "litellm"):
        if candidate and Path(candidate).exists():
            return str(candidate)
    return shutil.which("litellm")


def _config(upstream_url: str) -> str:
    """The proxy's YAML (JSON is YAML): one model to the instant upstream, nothing logged or stored."""
    return json.dumps({
        "model_list": [{"model_name": "bench-model", "litellm_params": {
            "model": "openai/bench-model", "api_base": upstream_url, "api_key": "sk-upstream"}}],
        "litellm_settings": {"telemetry": False, "drop_params": True, "set_verbose": False},
        "general_settings": {"master_key": MASTER_KEY, "disable_spend_logs": True},
    })


class LiteLLMProxy:
    """`with LiteLLMProxy(upstream_url, port) as proxy:` a running proxy on 127.0.0.1:`port`."""

    def __init__(self, upstream_url: str, port: int) -> None:
        command = litellm_command()
        if command is None:
            raise RuntimeError("litellm is not installed: scripts/bench gateway makes .venv-litellm "
                               "(or set LITELLM_BIN)")
        self.port, self.key = port, MASTER_KEY
        self._dir = Path(tempfile.mkdtemp(prefix="bench-litellm-"))
        config = self._dir / "config.yaml"
        config.write_text(_config(upstream_url))
        env = {**os.environ, "LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False", "DISABLE_ADMIN_UI": "True"}
        self._log = open(self._dir / "proxy.log", "wb")
        self._proc = subprocess.Popen([command, "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
                                       "--num_workers", "1"], env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def __enter__(self) -> LiteLLMProxy:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"litellm exited: {(self._dir / 'proxy.log').read_text()[-800:]}")
            if self._ready():
                return self
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError("litellm did not become ready")

    def _ready(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            conn.request("GET", "/health/liveliness")
            return conn.getresponse().status == 200
        except OSError:
            return False

    def __exit__(self, *_: object) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)
