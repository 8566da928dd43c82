"""The torch-free deploy side: the ONNX policy's contract, the sim2sim loop and the bundle runner
(docs/architecture.md §1, §7)."""
