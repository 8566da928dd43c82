"""Export: the ONNX graph, its metadata and parity check, the deploy bundle.

See docs/architecture.md §7.
"""
