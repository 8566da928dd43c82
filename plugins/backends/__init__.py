"""Built-in device backends: cpu, cuda and npu (Ascend, via torch_npu)."""
