"""Compaction providers installed as `pentagi_web.compaction_providers` entry points are loaded by the app and
offered by name in the settings; a broken one is skipped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flows.config.compaction_plugins import ENTRY_POINT_GROUP
from summarizer import register_compaction_provider, unregister_compaction_provider

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json
    import django

    django.setup()  # the app's ready() loads the entry points
    from flows.config.registry import compaction_provider_choices, settings_warnings
    from summarizer import get_compaction_provider, registered_compaction_providers

    acme = get_compaction_provider("acme")
    print(json.dumps({
        "registered": registered_compaction_providers(),
        "choices": list(compaction_provider_choices()),
        "summary": acme("the prompt") if acme else None,
        "warning_installed": settings_warnings({"compaction_provider": "acme"}),
        "warning_missing": settings_warnings({"compaction_provider": "gone"}),
    }))
""")


def _install_plugin(site: Path) -> None:
    """A tiny installed distribution: a module and its dist-info with two entry points (one broken)."""
    (site / "acme_compaction.py").write_text(
        "def summarize(prompt: str) -> str:\n    return 'acme summary of ' + prompt\n", encoding="utf-8")
    dist = site / "acme_compaction-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-compaction\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nacme = acme_compaction:summarize\nbroken = no_such_module_here:summarize\n",
        encoding="utf-8")


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One app start in a subprocess with the plugin on its path (so the real entry-point lookup finds it)."""
    tmp_path = tmp_path_factory.mktemp("plugin")
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
           "DJANGO_SETTINGS_MODULE": "pentagi_web.settings", "PENTAGI_WEB_VAR_DIR": str(tmp_path / "var")}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_an_installed_provider_is_registered_and_named_in_the_choices(plugin_run):
    assert "acme" in plugin_run["registered"] and "broken" not in plugin_run["registered"]
    assert plugin_run["choices"][0] == "" and "acme" in plugin_run["choices"]
    assert plugin_run["summary"] == "acme summary of the prompt"


def test_a_broken_provider_is_logged_and_skipped(plugin_run):
    assert "broken" in plugin_run["stderr"] and "no_such_module_here" in plugin_run["stderr"]


def test_a_provider_that_is_not_installed_gets_a_warning(plugin_run):
    assert plugin_run["warning_installed"] == {}
    assert "no provider 'gone' is installed" in plugin_run["warning_missing"]["compaction_provider"]


@pytest.mark.django_db
def test_the_settings_page_offers_registered_providers_by_name(staff_client_for):
    client = staff_client_for  # the defaults are editable (a select) for staff only; others see the value
    register_compaction_provider("inproc-acme", lambda prompt: "summary")
    try:
        body = client.get("/settings/").content.decode()
    finally:
        unregister_compaction_provider("inproc-acme")
    select = body[body.index('id="id_compaction_provider"'):]
    select = select[:select.index("</select>")]
    assert '<option value="inproc-acme"' in select and "(built-in summary)" in select
