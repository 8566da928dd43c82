"""The source tree's imports, read with ast (tests' shared helper for the layer and plugin rules).

Every ``import`` statement counts, at module level or inside a function, so an
import hidden in a function body cannot hide a dependency (docs/architecture.md §1).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = "primebot.pipeline"
SOURCE_ROOTS = {"pipeline": CORE, "plugins": "primebot.plugins"}
"""Folder at the repository's top → the package setup.py installs it as."""


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str
    """Absolute name of the module imported (a ``from P import m`` of a module ``m`` names
    ``P.m``)."""


def module_name(path: Path) -> str:
    """``pipeline/motion/format.py`` → ``primebot.pipeline.motion.format`` (a package's ``__init__``
    → the package)."""
    root, *rest = path.relative_to(REPO).with_suffix("").parts
    parts = [*SOURCE_ROOTS[root].split("."), *rest]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files(root: str) -> list[Path]:
    return sorted((REPO / root).rglob("*.py"))


def _is_module(name: str) -> bool:
    for root, package in SOURCE_ROOTS.items():
        if name == package or name.startswith(package + "."):
            rest = name.removeprefix(package).strip(".").split(".") if name != package else []
            base = REPO.joinpath(root, *rest)
            return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
    return False


def imports(path: Path) -> Iterator[Import]:
    """Every module an import statement in ``path`` names, relative imports resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield Import(path, node.lineno, sub if _is_module(sub) else module)


def core_graph() -> dict[str, set[str]]:
    """Core module → the core modules it imports (a package's ``__init__`` counts as the
    package)."""
    graph: dict[str, set[str]] = {}
    for path in source_files("pipeline"):
        name = module_name(path)
        graph.setdefault(name, set()).update(
            i.module for i in imports(path)
            if (i.module == CORE or i.module.startswith(CORE + ".")) and i.module != name
        )
    return graph


def package_of(module: str) -> str:
    """The core's first-level package or module a module belongs to: ``….motion.format`` →
    ``….motion``."""
    parts = module.split(".")
    return ".".join(parts[:3])


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
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
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with every module replaced by its first-level package (arrows inside a package
    dropped)."""
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module)
        packages.setdefault(source, set()).update(package_of(t) for t in targets
                                                  if package_of(t) != source)
    return packages
