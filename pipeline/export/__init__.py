"""Export: the ONNX graph, its metadata and parity check, and the deploy bundle (docs/architecture.md §7)."""
