"""The import graph of our own packages, read from the source with `ast` (nothing is imported).

Every import counts, module-level or inside a function: a lazy import that hides a cycle is still a cycle.
An edge goes to the most specific module that exists: `from flows import tasks` is an edge to `flows.pipeline.tasks`,
`from flows.ingest import chain_append` an edge to the folder door `flows.ingest`.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ImportEdge:
    source: str
    target: str
    names: tuple[str, ...]  # the names imported (`from x import a, b`); empty for `import x`
    line: int


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(packages: Iterable[str], root: Path = ROOT) -> dict[str, Path]:
    """Every module of the packages by dotted name (migrations included; they import models too)."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            modules[module_name(path, root)] = path
    return modules


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _edges_of(module: str, path: Path, known: set[str]) -> Iterator[ImportEdge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield ImportEdge(module, alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, is_package)
            names = tuple(alias.name for alias in node.names)
            submodules = [f"{target}.{name}" for name in names if f"{target}.{name}" in known]
            for sub in submodules:
                yield ImportEdge(module, sub, (sub.rsplit(".", 1)[1],), node.lineno)
            rest = tuple(name for name in names if f"{target}.{name}" not in known)
            if rest or not submodules:
                yield ImportEdge(module, target, rest, node.lineno)


def import_edges(packages: Iterable[str], root: Path = ROOT) -> list[ImportEdge]:
    modules = package_modules(packages, root)
    known = set(modules)
    return [edge for module, path in modules.items() for edge in _edges_of(module, path, known)]


def internal_edges(edges: Iterable[ImportEdge], modules: set[str]) -> list[ImportEdge]:
    """Edges between our modules (`import flows.x.y` counts as an edge to the longest known prefix)."""
    kept = []
    for edge in edges:
        target = edge.target
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != edge.source:
            kept.append(ImportEdge(edge.source, target, edge.names, edge.line))
    return kept


def find_cycles(edges: Iterable[ImportEdge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted: the import cycles."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles
