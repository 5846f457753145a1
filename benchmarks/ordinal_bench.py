"""Benchmark of rule ``moderation_ordinal``'s computation (``nonolab.stats.clmm.moderation_ordinal``
over both alignments, the workflow's settings: covariates with ``metric_transform`` raw, outcome
``final_difficulty``) on a results folder's ``features/attempts.csv`` and ``sat/metrics.csv``,
for this checkout and, in the same run, for a baseline source tree (``--baseline-src DIR``: e.g.
``git archive <commit> | tar -x -C DIR`` and pass ``DIR/src``: the package finds its workflow files beside it), each in a child process. CPU seconds are
``time.process_time`` around the computation alone (reading the tables and building the
covariates not counted). Prints and writes (``--out``) a JSON record: CPU seconds of each, their
ratio, and the largest relative difference of every numeric column of the two tables.

    python benchmarks/ordinal_bench.py --results /tmp/pub/results \
        --pool ../shared/study-data/selected_six_nonogram_stats.csv \
        --baseline-src /tmp/base/src --out benchmarks/results/ordinal_bench.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from functools import partial
from pathlib import Path
from nonolab.stats.clmm import moderation_ordinal
from nonolab.stats.mixed_models import across_alignments, study_covariates, with_expertise
from nonolab.study.schemas import read_table

res, pool, out = Path(sys.argv[1]), sys.argv[2] or None, sys.argv[3]
attempts = with_expertise(read_table(res / "features/attempts.csv", "features"))
metrics = read_table(res / "sat/metrics.csv", "sat_metrics")
names = ["decisions", "propagations", "conflicts"]
covs = study_covariates(attempts, metrics, pool, solver="minisat22", encoding="block_start",
                        metrics=names, metric_transform="raw")
fit = partial(moderation_ordinal, attempts, outcome="final_difficulty", metrics=names)
t0 = time.process_time()
table = across_alignments(covs, fit)
cpu = time.process_time() - t0
table.to_csv(out, index=False, float_format="%.17g")
print(json.dumps({"cpu_s": cpu}))
"""


def run_child(src: Path, results: Path, pool: str, out: Path) -> float:
    """Run the computation with ``src`` first on the path; return its CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(results), pool, str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"the child with {src} failed:\n{proc.stderr[-3000:]}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["cpu_s"])


def largest_differences(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, float]:
    """Return the largest relative difference |b - a| / |a| of each numeric column (0 where
    equal, NaN where both are NaN)."""
    out = {}
    for c in a.select_dtypes("number").columns:
        x, y = a[c].to_numpy(float), b[c].to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(x == y, 0.0, np.abs(y - x) / np.abs(x))
        out[c] = float(np.nanmax(rel)) if np.isfinite(rel).any() else float("nan")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, required=True, help="a results folder to read")
    ap.add_argument("--pool", default="", help="the preset's published pool statistics CSV")
    ap.add_argument("--baseline-src", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nonolab-ordinal-bench-") as tmp:
        base_csv, new_csv = Path(tmp) / "baseline.csv", Path(tmp) / "measured.csv"
        base, new = [], []
        for _ in range(args.repeats):  # interleaved: the same load for both
            base.append(run_child(args.baseline_src, args.results, args.pool, base_csv))
            new.append(run_child(REPO / "src", args.results, args.pool, new_csv))
        a, b = pd.read_csv(base_csv), pd.read_csv(new_csv)
    same_text = all(
        (a[c].fillna("") == b[c].fillna("")).all()
        for c in a.columns
        if c not in a.select_dtypes("number").columns
    )
    record = {
        "date": dt.date.today().isoformat(),
        "results": str(args.results),
        "load": os.getloadavg(),
        "baseline_cpu_s": base,
        "measured_cpu_s": new,
        "ratio": min(base) / min(new),
        "largest_relative_difference": largest_differences(a, b),
        "text_columns_equal": same_text,
    }
    text = json.dumps(record, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
