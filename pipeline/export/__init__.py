"""Export: the ONNX graph, its metadata and parity check, and the deploy bundle
(docs/architecture.md §7)."""

from ..legacy import names_of

# primebot.pipeline.export was a module in 0.1; its names are handed on, with a DeprecationWarning.
__getattr__ = names_of(__name__)
