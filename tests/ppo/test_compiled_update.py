"""``ppo.compile_update``: the update's forward and backward through torch.compile, the same
learning as eager, and an eager fallback with one warning where compiling fails."""

from __future__ import annotations

import logging

import pytest
import torch
from tiny_ppo import NEEDS_CXX, fill_rollout, tiny_ppo

from primebot.pipeline.ppo import compiled
from primebot.pipeline.ppo.compiled import CompiledOrEager


def _updated(ppo):
    fill_rollout(ppo)
    metrics = ppo.update()
    return metrics, [p.detach().clone() for p in ppo.actor_critic.parameters()]


@NEEDS_CXX
def test_a_compiled_update_learns_what_the_eager_one_does():
    eager_metrics, eager = _updated(tiny_ppo(num_envs=8, steps=4))
    ppo = tiny_ppo(num_envs=8, steps=4, compile_update=True)
    compiled_metrics, params = _updated(ppo)
    assert ppo.compile_failure is None
    assert ppo.nonfinite == []
    # float32: fused kernels round differently, nothing more
    for a, b in zip(eager, params, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)
    assert compiled_metrics["surrogate"] == pytest.approx(eager_metrics["surrogate"], abs=1e-5)


def test_a_compile_that_fails_on_the_first_call_runs_eagerly_with_one_warning(monkeypatch, caplog):
    calls = []

    def broken_compile(fn):
        def run(*args):
            calls.append(args)
            raise RuntimeError("InductorError: no C++ compiler found\n(long traceback)")
        return run

    monkeypatch.setattr(compiled.torch, "compile", broken_compile)
    _, eager = _updated(tiny_ppo(num_envs=8, steps=4))
    ppo = tiny_ppo(num_envs=8, steps=4, compile_update=True)
    with caplog.at_level(logging.WARNING):
        _, params = _updated(ppo)
    assert len(calls) == 1  # tried once, then eager for every later mini-batch
    assert ppo.compile_failure == "RuntimeError: InductorError: no C++ compiler found"
    assert (
        sum("torch.compile of the update's forward failed" in r.message for r in caplog.records)
        == 1
    )
    assert all(torch.equal(a, b) for a, b in zip(eager, params, strict=True))


def test_a_platform_without_torch_compile_runs_eagerly(monkeypatch):
    def unsupported(fn):
        raise RuntimeError("torch.compile is not supported on this Python")

    monkeypatch.setattr(compiled.torch, "compile", unsupported)
    wrapped = CompiledOrEager(lambda x: x + 1, "a test function")
    assert wrapped.failure == "RuntimeError: torch.compile is not supported on this Python"
    assert wrapped(1) == 2


def test_an_error_the_eager_function_raises_too_still_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(compiled.torch, "compile", lambda fn: fn)

    def bad(x):
        raise ValueError(f"bad input {x}")

    with pytest.raises(ValueError, match="bad input 3"):
        CompiledOrEager(bad, "a test function")(3)
