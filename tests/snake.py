"""The one way tests run this checkout's workflow: Snakemake in a child process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"
CONFIG = REPO / "config" / "config.yaml"


def snakemake_command(
    *targets: str | Path,
    opts: Sequence[str] = (),
    directory: str | Path | None = None,
    configfiles: Sequence[str | Path] = (),
    config: Mapping[str, object] | None = None,
    cores: int | None = 1,
) -> list[str]:
    """Return the command line ``python -m snakemake -s <repo>/Snakefile ...``: the working
    directory, cores, config files, ``--config key=value`` pairs and other options ``opts``,
    then ``--`` and the targets (so no option list swallows a target)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE)]
    if directory is not None:
        cmd += ["--directory", str(directory)]
    if cores is not None:
        cmd += ["--cores", str(cores)]
    if configfiles:
        cmd += ["--configfile", *map(str, configfiles)]
    if config:
        cmd += ["--config", *(f"{k}={v}" for k, v in config.items())]
    return [*cmd, *opts, "--", *map(str, targets)]


def snakemake(
    *targets: str | Path,
    cwd: str | Path = REPO,
    timeout: float = 1800,
    **kw: object,
) -> subprocess.CompletedProcess:
    """Run :func:`snakemake_command` (same arguments) in ``cwd``; return the finished process
    (stdout and stderr as text). The caller checks ``returncode``.

    Snakemake's working directory (``directory``, else ``cwd``: where it keeps ``.snakemake/``)
    must be outside the checkout, which a test leaves as it was cloned."""
    work = Path(kw.get("directory") or cwd).resolve()
    if work == REPO or REPO in work.parents:
        raise ValueError(
            f"snakemake(): working directory {work} is in the checkout; give a temp one"
        )
    cmd = snakemake_command(*targets, **kw)  # type: ignore[arg-type]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
