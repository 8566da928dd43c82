"""Fixtures of the tracking task's tests: the plugin host and the shipped wave."""

from __future__ import annotations

import pytest
from tracking_env import WAVE

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.format import load_motion


@pytest.fixture(scope="module")
def host():
    return load_plugins()


@pytest.fixture(scope="module")
def motion():
    return load_motion(WAVE)
