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

PACKAGES = ("flows", "summarizer")
ENGINE_ADAPTER = "flows.engine"

# Lowest first. A module may import its own layer (as long as no cycle forms) and any layer below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("engine", ("summarizer",)),
    ("engine adapter", ("flows.engine",)),
    ("foundation", ("flows.models", "flows.migrations", "flows.params", "flows.events", "flows.signals",
                    "flows.demo_tools", "flows.settings_spec", "flows.text_input",
                    "flows.relay", "flows.ws_limits")),
    ("domain", ("flows.settings_registry", "flows.settings_env", "flows.plugins", "flows.providers",
                "flows.selectors", "flows.selectors_pages", "flows.selectors_chain",
                "flows.selectors_gateway", "flows.selectors_flows", "flows.llm")),
    ("services", ("flows.services",)),
    ("entry points", ("flows.tasks", "flows.api", "flows.views", "flows.forms", "flows.admin", "flows.consumers",
                      "flows.routing", "flows.urls", "flows.demo", "flows.management", "flows.embedded_worker",
                      "flows.templatetags", "flows.gateway", "flows.ws_origin",
                      "flows.apps", "flows")),
]

# Inside flows/services the pipeline runs one way: a module imports only modules of a lower rank.
SERVICE_RANKS: dict[str, int] = {
    "view_records": 0, "queue": 0, "summarizers": 0, "memory": 0, "settings": 0, "users": 0, "windows": 0,
    "gateway_threads": 0, "history": 1, "recovery": 1, "preview_cache": 1, "replay": 2,
    "runs": 2, "fitting": 3, "compaction": 4, "summarization": 5, "preview": 5,
    "gateway": 5, "gateway_calls": 6, "preview_warm": 6, "": 7,
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


def service_rank(module: str) -> int:
    name = module.removeprefix("flows.services").lstrip(".").split(".")[0]
    if name not in SERVICE_RANKS:
        raise AssertionError(f"{module} has no place in the services pipeline: add it to SERVICE_RANKS")
    return SERVICE_RANKS[name]


def _is_service(module: str) -> bool:
    return module == "flows.services" or module.startswith("flows.services.")


def upward_imports(edges: list[ImportEdge]) -> list[str]:
    found = []
    for edge in edges:
        source, target = layer_of(edge.source), layer_of(edge.target)
        if target > source:
            found.append(f"{edge.source}:{edge.line} imports {edge.target} ({LAYERS[source][0]} -> "
                         f"{LAYERS[target][0]})")
        elif _is_service(edge.source) and _is_service(edge.target) \
                and service_rank(edge.target) >= service_rank(edge.source):
            found.append(f"{edge.source}:{edge.line} imports {edge.target} (same or later pipeline step)")
    return found


@pytest.fixture(scope="module")
def edges() -> list[ImportEdge]:
    return internal_edges(import_edges(PACKAGES), set(package_modules(PACKAGES)))


def test_every_module_has_a_layer():
    for module in package_modules(PACKAGES):
        layer_of(module)
        if _is_service(module):
            service_rank(module)


def test_there_is_no_import_cycle(edges):
    assert find_cycles(edges) == []


def test_no_module_imports_a_higher_layer(edges):
    assert upward_imports(edges) == []


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
    found = upward_imports([_edge("flows.models.chains", "flows.services.history"),
                            _edge("flows.services.runs", "flows.services.compaction"),
                            _edge("flows.tasks", "flows.services")])
    assert len(found) == 2 and "foundation -> services" in found[0] and "pipeline" in found[1]


def test_a_lazy_import_is_an_edge_too(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from pkg import high\n    return high\n")
    (package / "high.py").write_text("from pkg.low import f\n")
    edges = internal_edges(import_edges(["pkg"], root=tmp_path), set(package_modules(["pkg"], root=tmp_path)))
    assert find_cycles(edges) == [["pkg.high", "pkg.low"]]
