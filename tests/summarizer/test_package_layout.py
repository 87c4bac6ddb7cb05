"""The engine's folders (summarizer/chain, passes, compact, ...) keep their insides to themselves.

Read from the source with `ast` (nothing is imported), function-level imports included:
- an underscore name is private to the folder that defines it: no module imports one from another folder
  (summarizer/formats/ shares its helpers among its own modules, and that is where the sharing stops);
- the folders depend on each other one way: no import cycle among the modules, and none among the folders
  either. Two folders importing each other through different modules form no module cycle, yet neither
  could be read, tested or moved without the other.
For the folder check a top-level module (the public door `summarizer/__init__.py`, cli.py, identifiers.py)
stands alone; inside the engine nothing may import the public door (that would be a cycle through it).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.import_graph import ROOT, ImportEdge, find_cycles, import_edges, internal_edges, package_modules

ENGINE = "summarizer"

Modules = dict[str, Path]


def engine_graph(package: str = ENGINE, root: Path = ROOT) -> tuple[Modules, list[ImportEdge]]:
    modules = package_modules([package], root)
    return modules, internal_edges(import_edges([package], root), set(modules))


def folder_of(module: str, modules: Modules) -> str:
    """The package a module's privates belong to: a package's own `__init__` is in it, a module in its parent."""
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def top_folder(module: str) -> str:
    """`summarizer.compact.fit` -> `summarizer.compact`; a top-level module (`summarizer.cli`) is its own."""
    return ".".join(module.split(".")[:2])


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(modules: Modules, edges: list[ImportEdge]) -> list[str]:
    """Every import of an underscore name (or module) defined in another folder, as `source:line name`."""
    found = []
    for edge in edges:
        if folder_of(edge.source, modules) == folder_of(edge.target, modules):
            continue
        names = [name for name in edge.names if is_private(name)]
        if is_private(edge.target.rpartition(".")[2]) and edge.target.rpartition(".")[2] not in names:
            names.append(edge.target)  # `import pkg.a._impl`: the module itself is private
        found += [f"{edge.source}:{edge.line} imports {name} from {edge.target}" for name in names]
    return found


def silent_folders(modules: Modules) -> list[str]:
    """The packages whose `__init__.py` has no docstring saying what the folder owns."""
    return [module for module, path in modules.items() if path.name == "__init__.py"
            and not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))]


def folder_cycles(edges: list[ImportEdge]) -> list[list[str]]:
    """Import cycles among folders: each module stands for its top folder, imports inside a folder drop out."""
    return find_cycles([ImportEdge(top_folder(e.source), top_folder(e.target), e.names, e.line)
                        for e in edges if top_folder(e.source) != top_folder(e.target)])


@pytest.fixture(scope="module")
def graph() -> tuple[Modules, list[ImportEdge]]:
    return engine_graph()


def test_no_module_imports_a_private_name_of_another_folder(graph):
    assert private_imports(*graph) == []


def test_the_engine_modules_import_each_other_without_a_cycle(graph):
    assert find_cycles(graph[1]) == []


def test_the_engine_folders_depend_on_each_other_one_way(graph):
    assert folder_cycles(graph[1]) == []


def test_every_folder_says_what_it_owns(graph):
    assert silent_folders(graph[0]) == []


# --- the checks themselves can fail ---

def _package(root: Path, files: dict[str, str]) -> tuple[Modules, list[ImportEdge]]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return engine_graph("pkg", root)


def test_a_private_name_taken_from_another_folder_is_reported(tmp_path):
    modules, edges = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/low.py": "def _helper():\n    return 1\n\ndef helper():\n    return _helper()\n",
        "pkg/a/_impl.py": "",
        "pkg/a/mid.py": "from pkg.a.low import _helper\n",     # same folder: allowed
        "pkg/b/__init__.py": "",
        "pkg/b/fine.py": "from pkg.a.low import helper\nfrom pkg.a import low\n",
        "pkg/b/user.py": "def f():\n    from pkg.a.low import _helper\n    return _helper()\n",  # lazy, still caught
        "pkg/b/deep.py": "import pkg.a._impl\n",
    })
    assert private_imports(modules, edges) == ["pkg.b.deep:1 imports pkg.a._impl from pkg.a._impl",
                                               "pkg.b.user:2 imports _helper from pkg.a.low"]


def test_two_folders_importing_each_other_are_a_cycle_even_without_a_module_cycle(tmp_path):
    modules, edges = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/x.py": "from pkg.b.y import g\n",
        "pkg/a/w.py": "",
        "pkg/b/__init__.py": "",
        "pkg/b/y.py": "def g():\n    return 1\n",
        "pkg/b/z.py": "def h():\n    from pkg.a import w\n    return w\n",
        "pkg/cli.py": "from pkg.a.x import g\n",
    })
    assert find_cycles(edges) == []
    assert folder_cycles(edges) == [["pkg.a", "pkg.b"]]


def test_a_folder_without_a_docstring_is_reported(tmp_path):
    modules, _edges = _package(tmp_path, {"pkg/__init__.py": '"""The package."""\n', "pkg/a/__init__.py": ""})
    assert silent_folders(modules) == ["pkg.a"]
