"""Benchmark of the pause rules' work on the public study: ``pause_threshold`` with the
workflow's settings (rule ``pauses``) and the data-order check (``order_check``, rule
``pause_order``; ``order_dependence`` in trees from before that rule), for this checkout and, in
the same run, for a baseline source tree (``--baseline-src DIR``: e.g. ``git archive <commit>
src | tar -x -C DIR``), each in a child process. Writes a JSON result (wall and CPU seconds of
each part, crossings, ranges, the largest relative difference of the order check's crossings
between the two trees) to ``--out``. Children run with one BLAS thread (``OMP_NUM_THREADS=1``,
as Snakemake runs a rule with ``threads: 1``) unless ``--free-threads`` (the environment left
as it is, as a direct library call gets it; the library's own thread limits apply).

    python benchmarks/pauses_bench.py --study ../shared/study-data --baseline-src /tmp/base/src \
        --out benchmarks/results/pauses_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import numpy as np
import yaml
from nonolab.stats import pauses
from nonolab.stats.pauses import order_dependence, pause_threshold
from nonolab.study.features import interaction_gaps
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset

study, config = sys.argv[1], yaml.safe_load(open(sys.argv[2]))["pauses"]
gaps = interaction_gaps(ingest_study(study, resolve_preset(study)).tables["events"])["gap_s"]
g = gaps.to_numpy()
pub = resolve_preset(study).data["published"]
t0, c0 = time.perf_counter(), time.process_time()
rec = pause_threshold(
    g, threshold=config["threshold"], preset_threshold=pub.get("pause_threshold_s"),
    components=config["components"], n_init=config["n_init"],
    random_state=config["random_state"], em_tol=config["em_tol"],
    preset_em_tol=pub.get("pause_em_tol"), converged=config["converged"],
    max_fit_gaps=config.get("max_fit_gaps"),
)
t1, c1 = time.perf_counter(), time.process_time()
order = config["order_check"]
check = getattr(pauses, "order_check", None) or order_dependence  # the rule's own entry point
rows, summary = check(
    g, n_orders=order["n_orders"], seed=order["seed"], components=config["components"],
    n_init=config["n_init"], random_state=config["random_state"], converged=config["converged"],
)
summary = summary.get("order_dependence", summary)
t2, c2 = time.perf_counter(), time.process_time()
json.dump([r["crossing_s"] for r in rows], open(sys.argv[3], "w"))
print(json.dumps({
    "threshold_s": t1 - t0, "order_check_s": t2 - t1, "total_s": t2 - t0,
    "threshold_cpu_s": c1 - c0, "order_check_cpu_s": c2 - c1,
    "converged_crossing_s": rec["converged_fit"]["threshold_s"],
    "published_crossing_s": rec["published_settings_fit"]["threshold_s"],
    "order_summary": summary,
}))
"""


def run(src: Path, study: str, rows: Path, one_thread: bool = True) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    if one_thread:
        env["OMP_NUM_THREADS"] = "1"
    config = REPO / "config" / "config.yaml"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, study, str(config), str(rows)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        raise SystemExit(f"benchmark child ({src}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", required=True)
    ap.add_argument("--baseline-src", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--free-threads", action="store_true")
    a = ap.parse_args()
    res = {"date": time.strftime("%Y-%m-%d"), "load_before": os.getloadavg()[0]}
    res["blas_threads"] = "environment as it is" if a.free_threads else "1 (OMP_NUM_THREADS)"
    with tempfile.TemporaryDirectory() as tmp:
        mine, theirs = Path(tmp) / "current.json", Path(tmp) / "baseline.json"
        res["current"] = run(REPO / "src", a.study, mine, not a.free_threads)
        if a.baseline_src:
            res["baseline"] = run(a.baseline_src, a.study, theirs, not a.free_threads)
            res["ratio_total"] = res["baseline"]["total_s"] / res["current"]["total_s"]
            b, c = res["baseline"], res["current"]
            res["ratio_cpu"] = (b["threshold_cpu_s"] + b["order_check_cpu_s"]) / (
                c["threshold_cpu_s"] + c["order_check_cpu_s"]
            )
            x, y = json.loads(theirs.read_text()), json.loads(mine.read_text())
            res["order_crossings_max_rel_diff"] = (
                max(abs(u - v) / abs(u) for u, v in zip(x, y, strict=True))
                if len(x) == len(y)
                else None
            )
    res["load_after"] = os.getloadavg()[0]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
