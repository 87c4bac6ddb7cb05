"""The layers of docs/architecture.md hold: no import cycle, no upward import, one door into the engine.

Read from the source (nothing imported), function-level imports included: a lazy import that hides a cycle
or an upward dependency is caught like any other.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import summarizer
from tests.import_graph import ImportEdge, find_cycles, import_edges, internal_edges, package_modules

PACKAGES = ("flows", "summarizer", "pentagi_web")
ENGINE_ADAPTER = "flows.engine"

# Lowest first. A module may import its own layer (as long as no cycle forms) and any layer below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("engine", ("summarizer",)),
    ("engine adapter", ("flows.engine",)),
    ("project settings", ("pentagi_web",)),  # settings, the Celery app, security headers: nothing of flows
    ("core", ("flows.core",)),
    ("models", ("flows.models", "flows.migrations")),
    ("config", ("flows.config",)),
    ("ingest", ("flows.ingest",)),
    ("pipeline", ("flows.pipeline",)),
    ("gateway", ("flows.gateway",)),
    ("live", ("flows.live",)),
    ("pages", ("flows.pages",)),
    ("api", ("flows.api",)),
    ("demo", ("flows.demo",)),
    ("entry points", ("flows.management", "flows.templatetags", "flows.admin", "flows.apps", "flows.urls", "flows",
                      "pentagi_web.asgi", "pentagi_web.urls")),
]

# The capability folders: code outside one imports only its door (the folder's __init__), code inside imports
# its siblings directly. Migrations are generated code and name model fields by their module.
DOOR_FOLDERS = ("flows.core", "flows.models", "flows.config", "flows.ingest", "flows.pipeline", "flows.gateway",
                "flows.live", "flows.pages", "flows.api", "flows.demo")
DOOR_EXEMPT = ("flows.migrations",)

# Inside flows/pipeline the runs go one way: a module imports only modules of a lower rank.
PIPELINE_RANKS: dict[str, int] = {
    "llm": 0, "hooks": 0, "view_records": 0, "memory": 0, "request_budget": 0, "call_guard": 1,
    "summarizers": 2, "preview_cache": 1, "recovery": 1, "runs": 2, "fitting": 3, "strategy": 3, "dry_run": 3,
    "compaction": 4,
    "summarization": 5, "preview": 5, "window_replay": 5, "preview_warm": 6, "tasks": 6, "embedded_worker": 7, "": 8,
}


def layer_of(module: str) -> int:
    """Index in LAYERS of the longest matching prefix; a module of no layer fails loudly."""
    best, best_len = -1, -1
    for index, (_name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in {__file__}")
    return best


def _pipeline_step(module: str) -> str:
    return module.removeprefix("flows.pipeline").lstrip(".").split(".")[0]


def pipeline_rank(module: str) -> int:
    name = _pipeline_step(module)
    if name not in PIPELINE_RANKS:
        raise AssertionError(f"{module} has no place in the pipeline: add it to PIPELINE_RANKS")
    return PIPELINE_RANKS[name]


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def upward_imports(edges: list[ImportEdge]) -> list[str]:
    found = []
    for edge in edges:
        source, target = layer_of(edge.source), layer_of(edge.target)
        if target > source:
            found.append(f"{edge.source}:{edge.line} imports {edge.target} ({LAYERS[source][0]} -> "
                         f"{LAYERS[target][0]})")
        elif _in(edge.source, "flows.pipeline") and _in(edge.target, "flows.pipeline") \
                and _pipeline_step(edge.source) != _pipeline_step(edge.target) \
                and pipeline_rank(edge.target) >= pipeline_rank(edge.source):
            found.append(f"{edge.source}:{edge.line} imports {edge.target} (same or later pipeline step)")
    return found


def _folder(module: str) -> str | None:
    return next((f for f in DOOR_FOLDERS if _in(module, f)), None)


def doors_bypassed(edges: list[ImportEdge]) -> list[str]:
    """Imports that reach into another capability's folder past its door."""
    found = []
    for edge in edges:
        folder = _folder(edge.target)
        if folder is None or _folder(edge.source) == folder or edge.target == folder \
                or any(_in(edge.source, exempt) for exempt in DOOR_EXEMPT):
            continue
        found.append(f"{edge.source}:{edge.line} imports {edge.target} (use the door {folder})")
    return found


@pytest.fixture(scope="module")
def edges() -> list[ImportEdge]:
    return internal_edges(import_edges(PACKAGES), set(package_modules(PACKAGES)))


def test_every_module_has_a_layer():
    for module in package_modules(PACKAGES):
        layer_of(module)
        if _in(module, "flows.pipeline"):
            pipeline_rank(module)


def test_there_is_no_import_cycle(edges):
    assert find_cycles(edges) == []


def test_no_module_imports_a_higher_layer(edges):
    assert upward_imports(edges) == []


def test_other_folders_are_entered_through_their_door(edges):
    assert doors_bypassed(edges) == []


def test_each_door_says_what_its_folder_owns():
    for folder in DOOR_FOLDERS:
        path = Path(package_modules(["flows"])[folder])
        assert len(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "") > 40, folder


def test_only_the_adapter_imports_the_engine():
    offenders = [f"{e.source}:{e.line} imports {e.target}" for e in import_edges(["flows"])
                 if (e.target == "summarizer" or e.target.startswith("summarizer.")) and e.source != ENGINE_ADAPTER]
    assert offenders == []


def test_the_adapter_imports_only_public_engine_names():
    path = package_modules(["flows"])[ENGINE_ADAPTER]
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    engine_imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                      and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    assert all(isinstance(n, ast.ImportFrom) and n.module == "summarizer" and n.level == 0 for n in engine_imports)
    names = {alias.name for node in engine_imports for alias in node.names}
    assert names and names <= set(summarizer.__all__), sorted(names - set(summarizer.__all__))


# --- the checks themselves can fail ---

def _edge(source: str, target: str) -> ImportEdge:
    return ImportEdge(source, target, (), 1)


def test_a_cycle_through_three_modules_is_found():
    cycles = find_cycles([_edge("a", "b"), _edge("b", "c"), _edge("c", "a"), _edge("c", "d")])
    assert cycles == [["a", "b", "c"]]


def test_an_upward_import_is_reported():
    found = upward_imports([_edge("flows.models.chains", "flows.ingest.append"),
                            _edge("flows.pipeline.runs", "flows.pipeline.compaction"),
                            _edge("flows.pages.chain", "flows.pipeline")])
    assert len(found) == 2 and "models -> ingest" in found[0] and "pipeline" in found[1]


def test_an_import_past_a_door_is_reported():
    found = doors_bypassed([_edge("flows.pages.chain", "flows.pipeline.runs"),
                            _edge("flows.pages.chain", "flows.pipeline"),
                            _edge("flows.pipeline.runs", "flows.pipeline.view_records"),
                            _edge("flows.migrations.0001_initial", "flows.models.fields")])
    assert found == ["flows.pages.chain:1 imports flows.pipeline.runs (use the door flows.pipeline)"]


def test_a_lazy_import_is_an_edge_too(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from pkg import high\n    return high\n")
    (package / "high.py").write_text("from pkg.low import f\n")
    edges = internal_edges(import_edges(["pkg"], root=tmp_path), set(package_modules(["pkg"], root=tmp_path)))
    assert find_cycles(edges) == [["pkg.high", "pkg.low"]]
