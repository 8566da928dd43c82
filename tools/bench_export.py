"""Batch-1 latency of a deploy bundle's policies: fp32 and fp16, onnxruntime CPU provider, 1 thread.

Each file gets its own session (intra- and inter-op threads 1, as on a
robot computer sharing its cores); the files are timed in interleaved
rounds so a neighbour's load hits both alike. Prints, per file, the median
and 99th percentile over all calls in ms, and the spread of the per-round
medians. Usage::

    python tools/bench_export.py logs/wave/<timestamp>/export   # policy.onnx, policy_fp16.onnx
    python tools/bench_export.py BUNDLE --repeats 2000 --rounds 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

import numpy as np

from primebot.pipeline.export.graph import onnx_latency

FILES = ("policy.onnx", "policy_fp16.onnx")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle", help="an export folder (RUN_DIR/export)")
    parser.add_argument("--repeats", type=int, default=2000, help="timed calls per file and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    bundle = Path(args.bundle)
    paths = [bundle / name for name in FILES if (bundle / name).is_file()]
    if not paths:
        parser.error(f"no {' or '.join(FILES)} in {bundle}")
    import onnxruntime as ort

    num_obs = {p: ort.InferenceSession(str(p), providers=["CPUExecutionProvider"])
               .get_inputs()[0].shape[1] for p in paths}
    rounds: dict[Path, list[dict]] = {p: [] for p in paths}
    for _ in range(args.rounds):
        for path in paths:
            rounds[path].append(onnx_latency(path, num_obs[path], repeats=args.repeats, warmup=100))
    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "onnxruntime": ort.__version__, "threads": 1, "batch": 1, "repeats": args.repeats,
           "rounds": args.rounds, "files": {}}
    for path in paths:
        medians = [r["median_ms"] for r in rounds[path]]
        figures = {"median_ms": float(np.median(medians)),
                   "p99_ms": float(np.max([r["p99_ms"] for r in rounds[path]])),
                   "round_medians_ms": medians, "size_bytes": path.stat().st_size}
        out["files"][path.name] = figures
        print(f"{path.name:18s} median {figures['median_ms']:.4f} ms  p99 {figures['p99_ms']:.4f} "
              "ms  "
              f"(round medians {', '.join(f'{m:.4f}' for m in medians)}; "
              f"{figures['size_bytes'] / 1024:.0f} KiB)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
