"""The summarizer core never imports the web stack or an HTTP client (design rule 1)."""
from __future__ import annotations

import ast
from pathlib import Path

import summarizer

FORBIDDEN = {"django", "celery", "channels", "daphne", "openai", "httpx", "httpx2", "requests"}
PACKAGE = Path(summarizer.__file__).resolve().parent


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                roots.add(first.value.split(".")[0])
    return roots


def test_no_summarizer_module_imports_the_web_stack():
    offenders = {str(p.relative_to(PACKAGE)): sorted(_imported_roots(p) & FORBIDDEN)
                 for p in sorted(PACKAGE.rglob("*.py"))}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_scan_would_catch_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom django.db import models\nimport requests as r\n")
    assert _imported_roots(bad) & FORBIDDEN == {"django", "requests"}


def test_the_public_surface_is_explicit():
    assert "summarize_chain" in summarizer.__all__ and "parse_chain" in summarizer.__all__
    for name in summarizer.__all__:
        assert hasattr(summarizer, name), name
