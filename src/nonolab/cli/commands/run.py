"""``nonolab run``: run the Snakemake workflow on a study folder."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def _repo_root() -> Path:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "Snakefile").exists():
            return parent
    raise FileNotFoundError("no Snakefile found above the installed nonolab package")


def _run(args: argparse.Namespace) -> int:
    root = _repo_root()
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(root / "Snakefile"),
        "--cores",
        str(args.cores),
        "--directory",
        str(Path(args.workdir).resolve()),
    ]
    if args.study:
        cmd += ["--config", f"study_dir={Path(args.study).resolve()}"]
    cmd += list(args.targets)
    return subprocess.call(cmd)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``run`` to the CLI."""
    p = sub.add_parser("run", help="run the whole analysis workflow (Snakemake) on a study folder")
    p.add_argument("--study", help="study folder (default: the config's study_dir)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--workdir", default=".", help="where results/ is written")
    p.add_argument("targets", nargs="*", help="Snakemake targets (default: all)")
    p.set_defaults(func=_run)
