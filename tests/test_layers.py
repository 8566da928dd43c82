"""The layer rules of docs/architecture.md §1, read from the source tree with ast.

Every import statement counts, at module level or inside a function.
"""

from __future__ import annotations

import pytest
from import_graph import (
    CORE,
    circles,
    core_graph,
    imports,
    module_name,
    package_graph,
    source_files,
)

TORCH_FREE = ("deploy", "motion", "robot")
"""Core packages that never import torch, not even through the core modules they import."""
TORCH_FILE_READERS = {"primebot.pipeline.motion.retarget.sources": "read_pt"}
"""The one exception (docs/architecture.md §1): reading a human motion's ``.pt`` file needs torch,
so that reader, and only inside its function body, imports it; nothing else of ``motion/`` does."""


def _inside_reader(path, line: int) -> bool:
    """Whether ``line`` of ``path`` lies in the body of the function ``TORCH_FILE_READERS`` names
    for it."""
    import ast

    function = TORCH_FILE_READERS.get(module_name(path))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == function
               and node.lineno < line <= node.end_lineno
               for node in ast.walk(tree))


def _is_torch(name: str) -> bool:
    return name == "torch" or name.startswith("torch.")


def test_ppo_imports_nothing_else_of_the_core():
    offenders = [
        f"{i.path.name}:{i.line} imports {i.module}"
        for path in source_files("pipeline/ppo")
        for i in imports(path)
        if i.module.startswith(CORE + ".") and not i.module.startswith(f"{CORE}.ppo")
    ]
    assert not offenders, f"the learner (ppo/) imports the rest of the core: {offenders}"


@pytest.mark.parametrize("package", TORCH_FREE)
def test_torch_free_packages_never_import_torch(package):
    graph = core_graph()
    reached, pending = set(), [m for m in graph
                               if m == f"{CORE}.{package}" or m.startswith(f"{CORE}.{package}.")]
    while pending:
        module = pending.pop()
        if module not in reached:
            reached.add(module)
            pending += graph.get(module, ())
    offenders = [
        f"{module_name(path)}:{i.line}"
        for path in source_files("pipeline")
        if module_name(path) in reached
        for i in imports(path)
        if _is_torch(i.module) and not _inside_reader(path, i.line)
    ]
    assert not offenders, f"{package}/ reaches torch: {offenders}"


def test_no_import_circles_between_core_modules():
    assert circles(core_graph()) == []


def test_no_import_circles_between_core_packages():
    assert circles(package_graph(core_graph())) == []
