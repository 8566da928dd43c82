"""``primebot.pipeline.api``: the one module plugins import (docs/plugin_hooks.md)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from import_graph import CORE, imports, source_files

from primebot.pipeline import api


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


def test_every_name_of_the_api_is_in_exactly_one_group():
    grouped = [name for names in api.GROUPS.values() for name in names]
    assert sorted(grouped) == sorted({*api.__all__, *api.LAZY}), "a name in no group, or in two"
    imported = {name for name, value in vars(api).items()
                if not name.startswith("_") and name not in {"GROUPS", "LAZY", "annotations", "Any"}
                and not inspect.ismodule(value)}
    assert imported == set(api.__all__), "an import of api.py that GROUPS does not export"


def test_the_docs_table_lists_the_groups_of_the_api():
    text = (Path(__file__).parents[1] / "docs" / "plugin_hooks.md").read_text(encoding="utf-8")
    table_text = text.split("| group | names |\n", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([^`|]+)` \| (.+) \|$", table_text, re.M)
    table = {group: tuple(re.findall(r"`(\w+)`", names)) for group, names in rows}
    assert table == api.GROUPS
