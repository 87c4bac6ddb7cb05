"""A benchmark that finds nothing to measure fails loudly (non-zero exit, message on stderr), in a subprocess."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from nothing_measured import NOTHING_MEASURED_EXIT  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.mark.parametrize("script,option", [
    ("compare_context_managers.py", "--corpus-dir"), ("fit_window.py", "--corpus"),
    ("replay_engine.py", "--corpus"),
])
def test_it_exits_non_zero_when_there_is_no_corpus(tmp_path, script, option):
    result = _run(script, option, str(tmp_path))
    assert result.returncode == NOTHING_MEASURED_EXIT, result.stdout + result.stderr
    assert "nothing to measure" in result.stderr and str(tmp_path) in result.stderr


def test_engine_scaling_fails_when_a_requested_corpus_run_has_no_corpus(tmp_path):
    result = _run("engine_scaling.py", "--corpus-dir", str(tmp_path), "--runs", "corpus:agent", "--memory-runs", "")
    assert result.returncode == NOTHING_MEASURED_EXIT
    assert "corpus:agent" in result.stderr


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is absent")
def test_a_file_filter_that_matches_nothing_is_nothing_to_compare():
    result = _run("compare_context_managers.py", "--corpus-dir", str(CORPUS), "--files", "no-such-file")
    assert result.returncode == NOTHING_MEASURED_EXIT
    assert "matching --files no-such-file" in result.stderr
