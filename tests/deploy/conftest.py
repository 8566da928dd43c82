"""Fixtures of the deploy tests."""

from __future__ import annotations

import pytest
from tracking_run import export_tiny_run


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(host, run directory, policy.onnx): a fresh copy of the tiny tracking run, exported (one per
    module)."""
    return export_tiny_run(tmp_path_factory.mktemp("logs"))
