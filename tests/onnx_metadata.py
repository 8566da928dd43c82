"""Copy an exported ONNX with some metadata values replaced (tests' shared helper for wrong-metadata cases)."""

from __future__ import annotations

from pathlib import Path

import onnx


def with_metadata(src: str | Path, dst: str | Path, **changes: str) -> str:
    """Write ``src`` to ``dst`` with the metadata keys in ``changes`` set to the given values; returns ``dst``."""
    model = onnx.load(str(src))
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    onnx.save(model, str(dst))
    return str(dst)
