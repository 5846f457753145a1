"""``nonolab run``: run the Snakemake workflow on a study folder.

``nonolab run --study DIR --directory OUT [TARGET...] [-- SNAKEMAKE_ARGS...]`` runs
``python -m snakemake`` (the same interpreter) on the workflow's Snakefile (the checkout's, or
the copy installed with the package: :func:`nonolab.core.paths.workflow_root`), writing
``results/`` under OUT. Every argument after ``--`` goes to Snakemake as it is (``-n`` for a
dry run, ``--report results/report.html``, ``--profile ...``, ``--config key=value``).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

from nonolab.cli import EXTRAS

#: modules the workflow's rules import: every optional dependency of the `pipeline` extra and
#: matplotlib from `plot` (nonolab.cli.EXTRAS), Snakemake first
WORKFLOW_MODULES = tuple(
    sorted(
        (m for m, extra in EXTRAS.items() if extra in ("pipeline", "plot")),
        key=lambda m: m != "snakemake",
    )
)


def _check_installed() -> None:
    """Raise ModuleNotFoundError naming the first workflow dependency that is not installed."""
    for name in WORKFLOW_MODULES:
        if importlib.util.find_spec(name) is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def snakemake_command(
    study: str | None,
    directory: str,
    cores: int,
    targets: list[str],
    snakemake_args: list[str],
) -> list[str]:
    """Return the Snakemake command line (a list of words) that ``nonolab run`` executes.

    ``study`` becomes ``--config study_dir=<absolute path>``, merged into a ``--config`` /
    ``-C`` of ``snakemake_args`` when there is one (Snakemake keeps only the last), else
    given last (``--config`` takes every word after it).
    """
    from nonolab.core.paths import workflow_root

    root = workflow_root()
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(root / "Snakefile"),
        "--cores",
        str(cores),
        "--directory",
        str(Path(directory).resolve()),
        *targets,
    ]
    extra = list(snakemake_args)
    if study is not None:
        item = f"study_dir={Path(study).resolve()}"
        at = next((i for i, w in enumerate(extra) if w in ("--config", "-C")), None)
        if at is None:
            extra += ["--config", item]
        else:
            extra.insert(at + 1, item)
    return cmd + extra


def _run(args: argparse.Namespace) -> int:
    if args.study is not None and not Path(args.study).is_dir():
        raise FileNotFoundError(f"study folder {args.study} not found")
    _check_installed()
    Path(args.directory).mkdir(parents=True, exist_ok=True)
    cmd = snakemake_command(
        args.study,
        args.directory,
        args.cores,
        list(args.targets),
        list(getattr(args, "snakemake_args", []) or []),
    )
    return subprocess.call(cmd)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run`` to the CLI."""
    p = sub.add_parser(
        "run",
        help="run the whole analysis workflow (Snakemake) on a study folder",
        description="Run the analysis workflow (Snakemake) on a study folder; results/ is "
        "written under --directory. Arguments after `--` go to Snakemake unchanged, e.g. "
        "`nonolab run --study data/example-study --directory out -- -n` for a dry run.",
        usage="%(prog)s [-h] [--study DIR] [--directory DIR] [--cores N] [TARGET ...] "
        "[-- SNAKEMAKE_ARG ...]",
    )
    p.add_argument(
        "--study",
        metavar="DIR",
        help="study folder (default: the config's study_dir, the example study)",
    )
    p.add_argument(
        "--directory",
        "--results",
        "-d",
        "--workdir",
        dest="directory",
        metavar="DIR",
        default=".",
        help="working directory: results/ and .snakemake/ are written here (default: .); one "
        "per study: a folder holding another study's results is refused",
    )
    p.add_argument("--cores", type=int, default=2, metavar="N", help="cores (default: 2)")
    p.add_argument("targets", nargs="*", metavar="TARGET", help="Snakemake targets (default: all)")
    p.set_defaults(func=_run, snakemake_args=[])
