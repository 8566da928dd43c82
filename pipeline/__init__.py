"""primebot core: the pipeline that turns a reference motion into a deployable policy.

The core never imports ``primebot.plugins``; built-ins reach it through the
same pluggy hooks that third-party plugins use.
"""

from __future__ import annotations

import os

# A torch_npu installed without Ascend CANN makes ``import torch`` fail when
# torch auto-loads device backends. primebot loads torch_npu itself, guarded,
# in the npu backend, so autoloading is switched off before anything imports
# torch (docs/architecture.md §4). A user who sets the variable keeps their choice.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

# OpenMP threads that spin while waiting steal the cores MuJoCo's threads need,
# and stall each other whenever any core is busy (docs/architecture.md §3). Passive waiting
# lets torch use every core in the policy forward and the PPO update (measured
# on 2 cores: 5,099 env-steps/s end to end against 3,534 with one update
# thread). OpenMP reads this once, when torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# ... but after a short spin (GNU OpenMP, the runtime of torch's CPU wheels; others ignore it): an
# idle thread waits about 0.2 ms before it sleeps, long enough to bridge the gaps between the
# small operations of the update and the policy forward, too short to compete with MuJoCo.
# Measured on 2 cores at 1024 envs (tools/bench_train.py, docs/training.md "Performance"): update
# 15 % and policy forward 16-20 % faster than sleeping at once, env stepping unchanged.
os.environ.setdefault("GOMP_SPINCOUNT", "20000")

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("primebot")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

# Import paths of 0.1 that the docs taught keep working for one release (legacy.py).
# after the environment defaults above
from .legacy import install as _install_legacy_paths  # noqa: E402

_install_legacy_paths()

__all__ = ["__version__"]
