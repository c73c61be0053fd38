"""What `rag` imports, read from the source with `ast` rather than from `sys.modules`, so that an
import inside a function or under `if TYPE_CHECKING` counts as much as one at the top of a module:
each is a dependency a reader has to follow, and a cycle through a lazy import is still a knot
that makes a change in one package reach the other (issue #28)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAG = ROOT / "rag"

# Packages only the benchmarks and the tests need (the `bench` and `dev` optional groups): the library
# users import must not reach them, not even lazily, or an install of the runtime alone would break a path.
BENCHMARK_ONLY = ("langchain", "llama_index", "playwright", "rank_bm25", "bm25s", "pytest")


def _benchmark_only(module: str) -> bool:
    top = module.split(".")[0]
    return top.startswith("langchain") or top in BENCHMARK_ONLY  # langchain_core, langchain_text_splitters, ...


@dataclass(frozen=True)
class Import:
    """One imported module name, absolute, and where it is imported."""

    module: str
    path: Path
    line: int


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(RAG.rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path], root: Path = ROOT) -> Iterator[Import]:
    """Every module `path` imports, wherever the statement sits (`ast.walk` visits function bodies and
    `if TYPE_CHECKING` blocks alike). A module named by a string counts too where the string is loaded:
    a value of a `rag.lazy.lazy_exports` table (a dict literal, or `dict.fromkeys`) and the argument of
    `importlib.import_module`; a module name in a command line (`-m rag.mcp.server`) is no import."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            yield Import(source, path, node.lineno)
            # `from rag import store` imports the package rag.store, not (only) rag/__init__.py
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    yield Import(f"{source}.{alias.name}", path, node.lineno)
        elif isinstance(node, ast.Dict | ast.Call):
            if isinstance(node, ast.Dict):
                named = node.values
            else:
                function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                named = node.args if function in ("import_module", "fromkeys") else []
            for value in named:
                if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value in modules:
                    yield Import(value.value, path, value.lineno)


def _names(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]


def _node(module: str) -> str | None:
    """The package-level node a module of `rag` belongs to: `rag.store.search` -> `rag.store`; a top-level
    module such as `rag.cli` is a node of its own; None outside `rag` and for `rag` itself."""
    parts = module.split(".")
    if parts[0] != "rag" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def package_graph() -> dict[str, dict[str, list[Import]]]:
    """node -> node it imports -> the import statements behind that edge."""
    modules = _modules()
    graph: dict[str, dict[str, list[Import]]] = {}
    for name, path in modules.items():
        here = _node(name)
        if here is None:
            continue
        graph.setdefault(here, {})
        for found in _imports(path, modules):
            there = _node(found.module)
            if there is not None and there != here:
                graph[here].setdefault(there, []).append(found)
    return graph


def tangles(graph: dict[str, dict[str, list[Import]]]) -> list[set[str]]:
    """The strongly connected components with more than one node (Tarjan): each holds at least one cycle,
    and all of them are reported at once, so that one run shows every knot to cut."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for start in sorted(graph):
        if start not in index:
            visit(start)
    return found


def find_cycle(graph: dict[str, dict[str, list[Import]]]) -> list[str] | None:
    """One cycle as a list of nodes (first == last), or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, {})):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def describe(graph: dict[str, dict[str, list[Import]]]) -> str:
    """Each tangle: one cycle through it, then every edge inside it with the imports behind the edge."""
    lines = []
    for component in tangles(graph):
        inside = {node: {t: i for t, i in graph[node].items() if t in component} for node in component}
        lines.append("cycle: " + " -> ".join(find_cycle(inside) or []))
        for source in sorted(inside):
            for target, imports in sorted(inside[source].items()):
                where = ", ".join(dict.fromkeys(f"{i.path.relative_to(ROOT)}:{i.line}" for i in imports))
                lines.append(f"  {source} -> {target}: {where}")
    return "\n".join(lines)


def test_the_checker_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    """The scanner must count the imports a cycle most often hides behind, or the test below passes vacuously."""
    package = tmp_path / "rag" / "alpha"
    package.mkdir(parents=True)
    source = package / "one.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from rag.beta import x\n"
        "def f():\n    from ..gamma import y\n    import rag.delta.z\n"
        "from . import two\n"
        "TABLE = {'name': 'rag.epsilon.w', **dict.fromkeys(('a', 'b'), 'rag.zeta.v')}\n"
        "COMMAND = ['-m', 'rag.eta.u']\n",
        encoding="utf-8",
    )
    modules = {name: Path("x.py") for name in ("rag.epsilon.w", "rag.zeta.v", "rag.eta.u")}
    found = {i.module for i in _imports(source, modules, root=tmp_path)}
    assert {"rag.beta", "rag.gamma", "rag.delta.z", "rag.alpha", "rag.epsilon.w", "rag.zeta.v"} <= found
    assert "rag.eta.u" not in found
    assert find_cycle({"a": {"b": []}, "b": {"c": []}, "c": {"a": []}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": []}, "b": {}}) is None
    assert tangles({"a": {"b": []}, "b": {"a": []}, "c": {"a": []}}) == [{"a", "b"}]


def test_no_import_cycle_between_rag_packages() -> None:
    graph = package_graph()
    assert {"rag.store", "rag.retrieve", "rag.generate", "rag.cli"} <= graph.keys()
    assert not tangles(graph), "import cycles between rag's packages:\n" + describe(graph)


def test_rag_imports_no_benchmark_only_package() -> None:
    """`make run` installs the runtime only; a lazy import of a peer library would fail there."""
    modules = _modules()
    found = [
        f"{i.path.relative_to(ROOT)}:{i.line} imports {i.module}"
        for path in modules.values()
        for i in _imports(path, modules)
        if _benchmark_only(i.module)
    ]
    assert not found, "\n".join(found)


def test_only_the_cli_imports_the_benchmarks() -> None:
    """`benchmarks` is not part of the library: only `rag bench` reaches it, from inside the command,
    so that `python -m rag` works (and says how to install them) where the benchmarks are absent."""
    modules = _modules()
    found = [
        f"{i.path.relative_to(ROOT)}:{i.line}"
        for path in modules.values()
        for i in _imports(path, modules)
        if i.module.split(".")[0] == "benchmarks"
    ]
    assert all(where.startswith("rag/cli.py:") for where in found), found
    tree = ast.parse((RAG / "cli.py").read_text(encoding="utf-8"))
    top_level = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    eager = [node.lineno for node in top_level if any(n.split(".")[0] == "benchmarks" for n in _names(node))]
    assert not eager, f"rag/cli.py imports benchmarks at import time (line {eager})"


if __name__ == "__main__":  # `python -m tests.test_imports`: the tangles, or nothing when there are none
    print(describe(package_graph()))
