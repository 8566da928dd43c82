"""Regenerate the shipped motions (motions/*.npz) from their keyframe sources (motions/*.yaml).

    # rewrite every motions/<name>.npz
    python tools/make_motions.py
    # exit 1 if a shipped file differs from a fresh build (beyond SAME_MOTION_ATOL)
    python tools/make_motions.py --check
    # also draw every motion's replay stills
    python tools/make_motions.py --sheet docs/images/motions.png

The output is deterministic: the same source, robot and MuJoCo build give the same bytes. A source
with a ``record:`` mapping (getup) holds servo targets: its motion is recorded from simulation
(pipeline/motion/recording.py, ``primebot motion record``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from primebot.pipeline.hooks.host import load_plugins
from primebot.pipeline.motion.author import author_file
from primebot.pipeline.motion.format import (
    SAME_MOTION_ATOL,
    file_sha256,
    load_motion,
    motion_difference,
)
from primebot.pipeline.motion.recording import record
from primebot.pipeline.render.contact_sheet import motion_stills, write_contact_sheet
from primebot.pipeline.robot.spec import get_robot

MOTIONS = Path(__file__).resolve().parents[1] / "motions"


def build(source: Path, raw: dict, spec, target: Path, registry=None):
    """Write ``source``'s motion to ``target``: recorded from simulation when it says ``record:``
    (in ``registry``'s default task, the installed plugins' when None), else authored."""
    if not raw.get("record"):
        return author_file(source, spec, target)
    return record(source, spec, registry or load_plugins().registry, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="Compare with the shipped files instead of writing."
    )
    parser.add_argument(
        "--sheet", metavar="PNG", help="Also write a contact sheet: five replay stills per motion."
    )
    args = parser.parse_args(argv)
    registry = load_plugins().registry
    stale = []
    rows = []
    for source in sorted(MOTIONS.glob("*.yaml")):
        import yaml

        raw = yaml.safe_load(source.read_text(encoding="utf-8"))
        spec = get_robot(registry, raw.get("robot", "q1"))
        target = source.with_suffix(".npz")
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / target.name
                build(source, raw, spec, fresh, registry)
                same = target.is_file() and (
                    motion_difference(load_motion(fresh), load_motion(target)) <= SAME_MOTION_ATOL
                )
            print(f"{'ok   ' if same else 'STALE'} {target.name}")
            if not same:
                stale.append(target.name)
        else:
            motion = build(source, raw, spec, target, registry)
            print(
                f"wrote {target.name}: {motion.num_frames} frames, sha256 "
                f"{file_sha256(target)[:16]}"
            )
        if args.sheet:
            motion = load_motion(target)
            label = f"{target.stem} ({motion.duration:.1f} s): {raw.get('description', '')}"
            rows.append((label, motion_stills(motion, spec)))
    if args.sheet:
        print(f"wrote {write_contact_sheet(rows, args.sheet)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
