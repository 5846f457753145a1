"""Pipeline benchmark: the workflow from a clean results folder, per target, with per-rule times.

    .venv/bin/python benchmarks/pipeline_bench.py                      # paper, then all
    .venv/bin/python benchmarks/pipeline_bench.py --targets paper --cores 1
    nice .venv/bin/python benchmarks/pipeline_bench.py --study data/example-study
    nice .venv/bin/python benchmarks/pipeline_bench.py --small-lab 10 --targets all

``--small-lab N``: instead of a study folder, a generated small lab's study (:func:`small_lab_study`:
N participants, five 8x8 puzzles, four per session, logs as ``data/session logs/*.jsonl``, a
preset of its own, a folder name with a space), written to a temporary folder.

Each target runs ``python -m nonolab run --study STUDY --directory TMP --cores N TARGET`` in a
fresh temporary directory (nothing reused between targets, nothing written to the checkout's
``results/``), timed with ``time.perf_counter`` around the child. Every rule declares a
Snakemake ``benchmark:`` file (``results/bench/rules/<rule>[_<wildcards>].tsv``); the per-job
table (wall seconds ``s``, peak resident memory ``max_rss`` in MB, ``cpu_time`` in seconds) is
read from those files before the temporary directory is removed.

Writes ``results/bench/pipeline.json`` (date, machine: cores, load averages before and after each
run, the study path, the commands, wall times, per-job tables) and prints a Markdown summary.
Wall times on a shared machine include the other users' load: compare runs with the recorded
load averages.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NONOLAB_SHARED", REPO.parent / "shared")).resolve()
BENCH_DIR = Path("results") / "bench" / "rules"
#: columns kept from Snakemake's benchmark TSV (s: wall seconds, max_rss: MB, cpu_time: seconds)
COLUMNS = ("s", "max_rss", "cpu_time")


def default_study() -> Path:
    """Return the public study (``../shared/study-data``) if present, else the example study."""
    public = SHARED / "study-data"
    return public if public.is_dir() else REPO / "data" / "example-study"


def loadavg() -> list[float] | None:
    """Return the 1/5/15-minute load averages (Linux), or None."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def read_rule_benchmarks(directory: Path) -> list[dict[str, Any]]:
    """Return one record per benchmark TSV under ``directory/results/bench/rules``.

    Each record: ``job`` (file stem: rule name plus wildcards), ``s`` (wall seconds),
    ``max_rss`` (MB), ``cpu_time`` (seconds; None when Snakemake reports ``NA``), sorted by
    wall seconds, slowest first.
    """
    rows = []
    for path in sorted((directory / BENCH_DIR).glob("*.tsv")):
        with path.open(newline="") as fh:
            record = next(csv.DictReader(fh, delimiter="\t"), None)
        if record is None:
            continue
        rows.append({"job": path.stem, **{c: _number(record.get(c, "")) for c in COLUMNS}})
    return sorted(rows, key=lambda r: -(r["s"] or 0.0))


#: the small lab's study (:func:`small_lab_study`): its preset, as a lab writes it from
#: docs/data-format.md and docs/presets.md
SMALL_LAB_PRESET = """extends: default
name: small-lab
puzzle_file: puzzles.json
log_globs: ["data/session logs/*.jsonl"]
puzzles_per_session: 4
themes: null
"""


def small_lab_study(
    root: Path, participants: int, total: int | None = None, seed: int = 20261207
) -> tuple[Path, Path]:
    """Write a small lab's own study under ``root``; return ``(study folder, preset file)``.

    The study (``root/"my lab study"``) is simulated (:func:`nonolab.sim.events.simulate_study`)
    with ``total`` participants (default ``participants``) of which the first ``participants``
    logs are written: five 8x8 puzzles (``puzzles.json``), four served per session, one log per
    participant as ``data/session logs/<id>.jsonl``, no coded responses; the preset is
    ``root/"lab preset.yaml"`` (:data:`SMALL_LAB_PRESET`). Calling it again with a larger
    ``participants`` and the same ``total`` and ``seed`` adds the next participants' logs (the
    earlier ones are unchanged): a study that grows between two runs.
    """
    from nonolab.sim.events import simulate_study
    from nonolab.sim.model import SimParams
    from nonolab.sim.writer import puzzle_records

    total = participants if total is None else total
    params = SimParams(n_participants=total, n_puzzles=5, height=8, width=8, filled=35)
    sim = simulate_study(params, seed, session_size=4)
    study = root / "my lab study"
    logs = study / "data" / "session logs"
    logs.mkdir(parents=True, exist_ok=True)
    (study / "puzzles.json").write_text(
        json.dumps(puzzle_records(sim.puzzles), indent=2) + "\n", encoding="utf-8"
    )
    for pid in sorted(sim.logs, key=lambda p: int(p.rsplit("p", 1)[-1]))[:participants]:
        path = logs / f"{pid}.jsonl"
        if not path.exists():
            path.write_text("\n".join(sim.logs[pid]) + "\n", encoding="utf-8")
    preset = root / "lab preset.yaml"
    preset.write_text(SMALL_LAB_PRESET, encoding="utf-8")
    return study, preset


def run_target(study: Path, target: str, cores: int, preset: Path | None = None) -> dict[str, Any]:
    """Run the workflow for ``target`` in a fresh temporary directory.

    Returns the command, the exit code, the wall time in seconds, the load averages before and
    after, and the per-job table of :func:`read_rule_benchmarks`.
    """
    with tempfile.TemporaryDirectory(prefix="nonolab-pipeline-bench-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "nonolab",
            "run",
            "--study",
            str(study),
            "--directory",
            tmp,
            "--cores",
            str(cores),
            *(["--preset", str(preset)] if preset else []),
            target,
        ]
        load_before = loadavg()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        load_after = loadavg()
        jobs = read_rule_benchmarks(Path(tmp))
    shown = [*cmd[:7], "TMP", *cmd[8:]]
    return {
        "target": target,
        "command": " ".join(shown),
        "returncode": proc.returncode,
        "stderr_tail": proc.stderr[-3000:] if proc.returncode else "",
        "wall_s": round(wall, 2),
        "load_before": load_before,
        "load_after": load_after,
        "jobs": jobs,
    }


def _fmt(x: float | None, digits: int = 1) -> str:
    return "NA" if x is None else f"{x:.{digits}f}"


def markdown(record: dict[str, Any]) -> str:
    """Return the Markdown summary of a benchmark record: wall times, then jobs per target."""
    m = record["machine"]
    lines = [
        f"Pipeline benchmark, {record['date']}, {m['cores']} cores, study {record['study']}, "
        f"--cores {record['cores']}",
        "",
        "| target | wall (s) | jobs | sum of job wall (s) | load before | load after |",
        "|---|---|---|---|---|---|",
    ]
    for run in record["runs"]:
        total = sum(j["s"] or 0.0 for j in run["jobs"])
        lb = " / ".join(f"{x:.2f}" for x in run["load_before"] or [])
        la = " / ".join(f"{x:.2f}" for x in run["load_after"] or [])
        status = "" if run["returncode"] == 0 else f" (exit {run['returncode']})"
        lines.append(
            f"| {run['target']}{status} | {run['wall_s']:.1f} | {len(run['jobs'])} | "
            f"{total:.1f} | {lb} | {la} |"
        )
    for run in record["runs"]:
        lines += [
            "",
            f"Target `{run['target']}`: jobs, slowest first",
            "",
            "| job | s | max_rss (MB) | cpu_time (s) |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {j['job']} | {_fmt(j['s'], 2)} | {_fmt(j['max_rss'])} | {_fmt(j['cpu_time'], 2)} |"
            for j in run["jobs"]
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; return 0 when every target's workflow run succeeded, else 1."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--study",
        type=Path,
        default=default_study(),
        help="study folder (default: ../shared/study-data if present, else data/example-study)",
    )
    ap.add_argument(
        "--small-lab",
        type=int,
        metavar="N",
        help="a generated small lab's study of N participants instead of --study",
    )
    ap.add_argument("--cores", type=int, default=2, help="Snakemake --cores (default: 2)")
    ap.add_argument(
        "--targets",
        nargs="+",
        default=["paper", "all"],
        help="Snakemake targets, each run from a clean results folder (default: paper all)",
    )
    ap.add_argument(
        "--output",
        type=Path,
        default=REPO / "results" / "bench" / "pipeline.json",
        help="JSON record (default: results/bench/pipeline.json)",
    )
    args = ap.parse_args(argv)
    preset = None
    lab_dir = None
    if args.small_lab:
        lab_dir = tempfile.TemporaryDirectory(prefix="nonolab-small-lab-")
        study, preset = small_lab_study(Path(lab_dir.name), args.small_lab)
    else:
        study = args.study.resolve()
    if not study.is_dir():
        ap.error(f"study folder {study} not found")

    record: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "nice": os.nice(0),
        },
        "study": f"small lab, {args.small_lab} participants (generated)"
        if args.small_lab
        else str(study),
        "cores": args.cores,
        "runs": [],
    }
    for target in args.targets:
        print(f"running {target} ...", file=sys.stderr, flush=True)
        run = run_target(study, target, args.cores, preset)
        record["runs"].append(run)
        if run["returncode"]:
            print(run["stderr_tail"], file=sys.stderr)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(markdown(record))
    if lab_dir is not None:
        lab_dir.cleanup()
    return 0 if all(r["returncode"] == 0 for r in record["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
