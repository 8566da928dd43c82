"""Copy an exported ONNX with some metadata values replaced, or a graph input/output renamed (tests'
shared helpers for wrong-metadata and wrong-graph cases)."""

from __future__ import annotations

from pathlib import Path

import onnx


def with_metadata(src: str | Path, dst: str | Path, **changes: str) -> str:
    """Write ``src`` to ``dst`` with the metadata keys in ``changes`` set to the given values;
    returns ``dst``."""
    model = onnx.load(str(src))
    for prop in model.metadata_props:
        if prop.key in changes:
            prop.value = changes[prop.key]
    onnx.save(model, str(dst))
    return str(dst)


def with_renamed(src: str | Path, dst: str | Path, old: str, new: str) -> str:
    """Write ``src`` to ``dst`` with graph input/output ``old`` renamed to ``new`` (a graph missing
    the name a deploy loop needs); returns ``dst``."""
    model = onnx.load(str(src))
    for value in [*model.graph.input, *model.graph.output]:
        if value.name == old:
            value.name = new
    for node in model.graph.node:
        node.input[:] = [new if name == old else name for name in node.input]
        node.output[:] = [new if name == old else name for name in node.output]
    onnx.save(model, str(dst))
    return str(dst)
