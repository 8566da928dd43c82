from __future__ import annotations

import pytest

from primebot.pipeline.errors import RegistrationError, UnknownNameError
from primebot.pipeline.registry import Register, Registry


def make_registry() -> Registry:
    registry = Registry()
    registry.declare("robots")

    def must_be_int(name, obj):
        if not isinstance(obj, int):
            raise TypeError("expected an int")

    registry.declare("numbers", must_be_int)
    return registry


def test_register_records_the_plugin_and_defaults_the_name():
    registry = make_registry()

    def term():
        pass

    Register(registry, "robots", "alpha")(term)
    reg = registry.registration("robots", "term")
    assert (reg.name, reg.plugin, reg.obj) == ("term", "alpha", term)
    assert [r.name for r in registry.by_plugin("alpha")] == ["term"]


def test_duplicate_name_names_both_plugins():
    registry = make_registry()
    Register(registry, "numbers", "alpha")(1, name="one")
    with pytest.raises(RegistrationError) as err:
        Register(registry, "numbers", "beta")(2, name="one")
    assert "'alpha'" in str(err.value) and "'beta'" in str(err.value)


def test_validator_refusal_is_a_registration_error_naming_the_plugin():
    registry = make_registry()
    with pytest.raises(RegistrationError, match="plugin 'gamma'.*expected an int"):
        Register(registry, "numbers", "gamma")("not a number", name="x")


def test_unknown_name_suggests_the_closest():
    registry = make_registry()
    Register(registry, "numbers", "alpha")(1, name="wave")
    with pytest.raises(UnknownNameError, match="did you mean 'wave'"):
        registry.get("numbers", "wavee")


def test_unknown_kind_is_refused():
    with pytest.raises(RegistrationError, match="unknown kind"):
        make_registry().add("spaceships", "x", 1, "alpha")
