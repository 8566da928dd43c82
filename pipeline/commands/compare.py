"""``primebot compare RUN_DIR...``: runs side by side (report/compare.py)."""

from __future__ import annotations

import click

from ..hooks.specs import hookimpl


@click.command("compare")
@click.argument("run_dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
def compare_command(run_dirs: tuple[str, ...], as_json: bool) -> None:
    """Runs side by side: what their settings differ in, and what each policy is worth.

    One column per RUN_DIR (a run directory, or a folder holding runs: its
    newest is taken, so `--log-dir logs --run-name NAME` runs compare as
    logs/NAME). Rows: every `args.yaml` setting that differs between the
    runs; training iterations and minutes; the verdict checks' success under
    the standard push (median over all checks and over the last ten: did a
    change help?); the exported policy's iteration and the randomisation
    strength it trained at; sim2sim's verdict and
    MPKPE against the statue's; the stress test's verdict, each standard
    level's success of N starts (replaying the reference in brackets) and
    the standard push by where it points. Results made from another policy
    than the run's current one are left out and named in the status row, as
    report.html does. Reads the files as data only (JSON, YAML, CSV).

    \b
    Example: did learning from mirror images help the bow?
      primebot pipeline run motions/bow.npz --run-name bow
      primebot pipeline run motions/bow.npz --run-name bow_sym --set ppo.symmetry=true
      primebot compare logs/bow logs/bow_sym
    """
    import json

    from ..report.compare import comparison, comparison_json, format_comparison, read_run

    rows = comparison([read_run(path) for path in run_dirs])
    click.echo(json.dumps(comparison_json(rows), indent=1, ensure_ascii=False) if as_json
               else format_comparison(rows))


@hookimpl
def register_commands(cli: click.Group) -> None:
    cli.add_command(compare_command)
