"""``primebot.pipeline.api``: the one module plugins import (docs/plugin_hooks.md)."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest
from import_graph import CORE, imports, source_files

from primebot.pipeline import api, legacy


def test_shipped_plugins_import_only_the_api():
    offenders = [
        f"{i.path.relative_to(i.path.parents[2])}:{i.line} imports {i.module}"
        for path in source_files("plugins")
        for i in imports(path)
        if (i.module == CORE or i.module.startswith(CORE + ".")) and i.module != f"{CORE}.api"
    ]
    assert not offenders, f"plugins must import primebot.pipeline.api only: {offenders}"


def test_every_name_of_the_api_resolves():
    for name in [*api.__all__, *api.LAZY]:
        assert getattr(api, name) is not None, name
    assert set(dir(api)) == {*api.__all__, *api.LAZY}


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        api.no_such_name  # noqa: B018


# What docs of release 0.1 taught plugins to import, and the api name it is now.
TAUGHT = [
    ("primebot.pipeline.hookspecs", "hookimpl"),
    ("primebot.pipeline.robot", "RobotSpec"),
    ("primebot.pipeline.robot", "pd_gains"),
    ("primebot.pipeline.robot", "get_robot"),
    ("primebot.pipeline.rewards", "RewardTerm"),
    ("primebot.pipeline.tasks", "TaskSpec"),
    ("primebot.pipeline.stages", "Stage"),
    ("primebot.pipeline.stages", "StageResult"),
    ("primebot.pipeline.stages", "StageSkipped"),
    ("primebot.pipeline.devices", "Availability"),
    ("primebot.pipeline.devices", "Backend"),
]


@pytest.mark.parametrize(("module", "name"), TAUGHT, ids=lambda v: v)
def test_old_import_paths_still_work_with_a_deprecation_warning(monkeypatch, module, name):
    # an alias warns when it is first imported
    monkeypatch.delitem(sys.modules, module, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(api, name)
    assert any(issubclass(w.category, DeprecationWarning)
               and "primebot.pipeline.api" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


def test_old_deploy_module_path_still_works(monkeypatch):
    monkeypatch.delitem(sys.modules, "primebot.pipeline.deploy_policy", raising=False)
    with pytest.warns(DeprecationWarning, match="deploy_policy"):
        old = importlib.import_module("primebot.pipeline.deploy_policy")
    from primebot.pipeline.deploy import policy

    assert old is policy


@pytest.mark.parametrize(("old", "new"), sorted(legacy.MOVED_MODULES.items()), ids=lambda v: v)
def test_every_moved_module_of_0_1_still_imports_as_the_module_it_became(monkeypatch, old, new):
    monkeypatch.delitem(sys.modules, f"primebot.pipeline.{old}", raising=False)
    with pytest.warns(DeprecationWarning, match=old):
        module = importlib.import_module(f"primebot.pipeline.{old}")
    assert module is importlib.import_module(f"primebot.pipeline.{new}")


@pytest.mark.parametrize(("old", "new"), sorted(legacy.MOVED_NAMES.items()), ids=lambda v: v)
def test_a_module_of_0_1_that_became_a_package_hands_on_its_names(old, new):
    holder = importlib.import_module(f"primebot.pipeline.{new}")
    name = next(n for n in vars(holder)
                if not n.startswith("_") and getattr(vars(holder)[n], "__module__", "")
                == holder.__name__)
    with pytest.warns(DeprecationWarning, match=f"{old}.{name}"):
        value = getattr(importlib.import_module(f"primebot.pipeline.{old}"), name)
    assert value is getattr(holder, name)


@pytest.mark.parametrize(("old", "name", "new"),
                         sorted((old, name, new) for old, names in legacy.NAMES_MOVED_ON.items()
                                                        for name, new in names.items()), ids=str)
def test_a_name_of_0_1_that_left_its_module_is_handed_on_from_where_it_lives(old, name, new):
    holder = importlib.import_module(f"primebot.pipeline.{new}")
    with pytest.warns(DeprecationWarning, match=f"{new}.{name}"):
        value = getattr(importlib.import_module(f"primebot.pipeline.{old}"), name)
    assert value is getattr(holder, name)
