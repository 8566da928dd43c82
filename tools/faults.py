"""Fault injection: every fault case of issues 17 and 31 against the installed primebot, one line per case.

    python tools/faults.py                 every case, the minutes-long chains included (about 10 min on 2 cores)
    python tools/faults.py --only disk     the cases whose test name contains "disk" (pytest -k)

The cases are pytest tests in tests/faults/ with the ``faults`` marker (docs/troubleshooting.md, "Fault
injection"); this runs ``pytest -m faults`` on them, whose summary prints one line per case:

    <case>                                                                  holds | falls short

"holds" means: a typed error (the right exit code, the file or key named, no traceback), nothing lost or
corrupted, no hang, bounded memory, and a resume that finishes. The disk-full and read-only cases mount a
small tmpfs in a private mount namespace (``unshare -m``: root, or a kernel that lets users make one);
without it they say "not run". The exit status is pytest's: 0 when every case holds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run only the cases whose test name matches (pytest -k)")
    args, extra = parser.parse_known_args()
    command = [sys.executable, "-m", "pytest", str(REPO / "tests" / "faults"), "-m", "faults", "-q",
               "-p", "no:cacheprovider", "-rN", *(["-k", args.only] if args.only else []), *extra]
    return subprocess.call(command, cwd=REPO)


if __name__ == "__main__":
    sys.exit(main())
