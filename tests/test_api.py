"""``primebot.pipeline.api``: the one module plugins import (docs/plugin_hooks.md)."""

from __future__ import annotations

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
