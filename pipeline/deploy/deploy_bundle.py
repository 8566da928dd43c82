"""The deploy bundle (``RUN_DIR/export/``) as the robot side sees it, and its torch-free reference
runner.

``primebot export`` writes the bundle; this module holds what does not need
torch, so it runs on the robot computer too:

- ``bundle_mjcf`` copies the robot model the policy was trained on into the
  bundle byte for byte (``robot/<name>.xml``), with every file it includes or
  loads (meshes, textures, height fields, skins) at the same relative path;
- ``verify_bundle`` reads ``deploy.yaml`` and checks every listed file's
  SHA-256;
- ``python -m primebot.pipeline.bundle BUNDLE_DIR`` verifies the bundle and
  runs the policy on the bundled MJCF in the sim2sim deploy loop
  (``sim2sim.run_sim2sim``: numpy, mujoco and onnxruntime only), from the
  start steps ``deploy.yaml`` records (eval.json's at export time), so it
  reproduces the run's ``sim2sim.json`` metrics.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import yaml

from ..atomic import atomic_path
from ..errors import ExportError
from ..motion.format import file_sha256
from ..robot.assets import model_files

DEPLOY_FILE = "deploy.yaml"
README_FILE = "README.md"
ROBOT_DIR = "robot"
"""Bundle folder of the robot model and its assets."""


@dataclass
class BundledModel:
    """The robot model as copied into the bundle (paths relative to the bundle folder)."""

    file: str
    sha256: str
    source: str
    """Where training read it."""
    assets: list[str] = field(default_factory=list)
    """Included and loaded files, copied beside it at their relative paths."""
    assets_sha256: dict[str, str] = field(default_factory=dict)
    """Each asset's SHA-256, by its path in ``assets`` (``verify_bundle`` checks them)."""


def bundle_mjcf(mjcf: str | Path, out_dir: str | Path) -> BundledModel:
    """Copy ``mjcf`` and everything it loads to ``out_dir/robot/``; the copy must compile like the
    original."""
    mjcf, out_dir = Path(mjcf).resolve(), Path(out_dir)
    target_dir = out_dir / ROBOT_DIR
    if target_dir.exists():
        shutil.rmtree(target_dir)  # a previous export's model (perhaps another robot)
    assets = model_files(mjcf)
    for relative in [Path(mjcf.name), *assets]:
        destination = target_dir / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(destination) as tmp:
            shutil.copyfile(mjcf.parent / relative, tmp)
    copy = target_dir / mjcf.name
    original, bundled = (
        mujoco.MjModel.from_xml_path(str(mjcf)),
        mujoco.MjModel.from_xml_path(str(copy)),
    )
    sizes = ("nq", "nv", "nu", "nbody", "njnt", "ngeom", "nmesh")
    if any(getattr(original, s) != getattr(bundled, s) for s in sizes):
        raise ExportError(f"the bundled copy {copy} of {mjcf} compiles to another model",
                          fix="report it with the MJCF")
    bundled = [f"{ROBOT_DIR}/{a.as_posix()}" for a in assets]
    return BundledModel(file=f"{ROBOT_DIR}/{mjcf.name}", sha256=file_sha256(copy), source=str(mjcf),
                        assets=bundled,
                        assets_sha256={a: file_sha256(out_dir / a) for a in bundled})


# -- reading a bundle ------------------------------------------------------------------------------
def verify_bundle(bundle_dir: str | Path) -> dict:
    """``deploy.yaml`` of ``bundle_dir``, after checking every file it lists.

    Each listed file (and robot asset) must be a relative path inside the bundle (no absolute path,
    no ``..``, no link leading out of it), carry a SHA-256 and match it: deploy.yaml is as untrusted
    as the files it lists, and nothing outside the bundle is hashed or loaded. Raises
    ``ExportError`` naming each problem.
    """
    bundle_dir = Path(bundle_dir)
    path = bundle_dir / DEPLOY_FILE
    if not path.is_file():
        raise ExportError(f"{path} does not exist: not a deploy bundle",
                          fix="export the run first: primebot export RUN_DIR (the bundle is "
                              "RUN_DIR/export)")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ExportError(f"{path} is not readable YAML: {exc}", fix="export again") from None
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict) or not files:
        raise ExportError(f"{path} lists no files", fix="export again: primebot export RUN_DIR")
    problems = []
    for role, entry in files.items():
        if not isinstance(entry, dict) or "file" not in entry:
            problems.append(f"{role}: no file named")
            continue
        problems += _check_entry(bundle_dir, f"{role}", entry.get("file"), entry.get("sha256"))
        assets = entry.get("assets") or ()
        hashes = entry.get("assets_sha256") or {}
        for asset in assets:
            problems += _check_entry(bundle_dir, f"{role} asset", asset,
                                     hashes.get(asset) if isinstance(hashes, dict)
                                     else None)
    if problems:
        raise ExportError(f"deploy bundle {bundle_dir} is incomplete or unsafe:\n    "
                          + "\n    ".join(problems),
                          fix="copy the whole export/ folder, or export again; never edit "
                              "deploy.yaml by hand")
    return document


def _check_entry(bundle_dir: Path, role: str, name: object, sha256: object) -> list[str]:
    """What is wrong with one listed file: a path leaving the bundle, no SHA-256, missing, or
    changed."""
    if not isinstance(name, str) or not name:
        return [f"{role}: {name!r} is not a file name"]
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts:
        return [f"{role}: {name} is not a path inside the bundle (absolute or with ..): refused, "
                "not read"]
    file = bundle_dir / relative
    try:
        file.resolve().relative_to(bundle_dir.resolve())
    except ValueError:
        return [f"{role}: {name} leads out of the bundle (a link): refused, not read"]
    if not isinstance(sha256, str) or len(sha256) != 64:
        return [f"{role}: {name} has no SHA-256 in {DEPLOY_FILE}: it cannot be checked, so it is "
                "not used"]
    if not file.is_file():
        return [f"{role}: {name} is missing"]
    if file_sha256(file) != sha256:
        return [f"{role}: {name} has changed since export (SHA-256 differs)"]
    return []


def run_bundle(bundle_dir: str | Path, start_steps: list[int] | None = None,
               variant: str = "policy",
               physics_hz: float | None = None, *, align_heading: bool = False,
               start_yaw_deg: float = 0.0) -> dict:
    """Verify the bundle, then run its ``variant`` (``policy`` or ``policy_fp16``) on the bundled
    MJCF.

    ``start_steps`` default: those deploy.yaml records (eval.json's at export time), else ``[0]``.
    ``align_heading``, ``start_yaw_deg``: ``sim2sim.run_sim2sim``.
    Returns the sim2sim report (``sim2sim.run_sim2sim``).
    """
    bundle_dir = Path(bundle_dir)
    document = verify_bundle(bundle_dir)
    files = document.get("files") or {}
    if variant not in files:
        raise ExportError(f"deploy bundle {bundle_dir} has no {variant!r} file",
                          fix="export it (primebot export RUN_DIR --fp16 for policy_fp16)")
    from .sim2sim import PHYSICS_HZ, run_policy_file

    starts = start_steps or (document.get("reference_check") or {}).get("start_steps") or [0]
    return run_policy_file(bundle_dir / files[variant]["file"], bundle_dir / files["mjcf"]["file"],
                           starts,
                           physics_hz or PHYSICS_HZ, align_heading=align_heading,
                           start_yaw_deg=start_yaw_deg)


def main(argv: list[str] | None = None) -> int:
    """``python -m primebot.pipeline.bundle BUNDLE_DIR``: verify a deploy bundle and run it on its
    own MJCF."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("bundle", help="the export folder (deploy.yaml, policy.onnx, robot/...)")
    parser.add_argument("--start", type=int, nargs="*", default=None,
                        help="start steps (the first is 'from_start'); default: those deploy.yaml "
                             "records")
    parser.add_argument("--variant", default="policy", choices=("policy", "policy_fp16"))
    parser.add_argument("--physics-hz", type=float, default=None,
                        help="physics and PD rate (default 1000)")
    parser.add_argument("--output", help="write the report here as JSON")
    from .sim2sim import add_heading_arguments

    add_heading_arguments(parser)
    args = parser.parse_args(argv)
    try:
        report = run_bundle(args.bundle, args.start, args.variant, args.physics_hz,
                            align_heading=args.align_heading,
                            start_yaw_deg=args.start_yaw)
    except ExportError as exc:
        print(f"bundle: error: {exc}", file=sys.stderr)
        return 2
    from .onnx_policy import emit_report

    return emit_report(report, args.output)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
