"""Scale benchmark: simulated studies of 1,000 and 10,000 participants through ingest, features
and the crossed mixed model, with wall time and peak memory per stage.

    .venv/bin/python benchmarks/scale_bench.py            # writes results/bench/scale.json
    .venv/bin/python benchmarks/scale_bench.py --sizes 200 --model-sizes 67 200   # quick look

Every stage runs in its own child process (the `nonolab` CLI for simulate/ingest/features, a
small Python child for the model fits), so its peak resident memory is that process's own
``ru_maxrss`` (from ``os.wait4``) and stages do not inherit each other's memory. Wall times are
``time.perf_counter`` around the child. The output is a timing file: it is not byte-stable and
the determinism checks skip ``results/bench/``.

Mixed models: one ``pause_count ~ conflicts + (1|participant) + (1|puzzle)`` REML fit
(:func:`nonolab.stats.lmm.fit_crossed`, formula design plus the structure-aware engine) on the
first ``n`` participants of the largest simulated study, for growing ``n``; the engine alone
(:func:`nonolab.stats.lmm.reml_fit_arrays`) is timed too, so the table shows which part
dominates. The participant block is eliminated in closed form, so no attempts x participants
matrix is built and memory grows with the attempts; a size is not run once the previous one
took longer than the time limit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
NONOLAB = [PY, "-m", "nonolab"]

# Child program for one model fit: reads the features table, keeps the first n participants
# (sorted ids), adds the MiniSat22 conflicts covariate (log1p z-score) by puzzle hash, and fits.
MODEL_CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
from nonolab.stats.lmm import fit_crossed, reml_fit_arrays
from nonolab.stats.mixed_models import metric_covariates
from nonolab.sat.puzzles import load_study_puzzles
from nonolab.measure.tables import stats_table

features, puzzle_file, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
att = pd.read_csv(features, dtype={"puzzle_id": str, "participant_id": str})
keep = sorted(att["participant_id"].unique())[:n]
att = att[att["participant_id"].isin(keep)]
stats = stats_table(load_study_puzzles(puzzle_file), ["block_start"], ["minisat22"])
cov = metric_covariates(stats[["puzzle_hash", "conflicts"]], ["conflicts"])
d = att.merge(cov, on="puzzle_hash", how="left").dropna(subset=["pause_count", "conflicts"])
t0, c0 = time.perf_counter(), time.process_time()
if mode == "reml_direct":
    p = pd.factorize(d["participant_id"])[0]
    q = pd.factorize(d["puzzle_hash"])[0]
    Z = [np.eye(p.max() + 1)[p], np.eye(q.max() + 1)[q]]
    X = np.column_stack([np.ones(len(d)), d["conflicts"].to_numpy(float)])
    beta = reml_fit_arrays(d["pause_count"].to_numpy(float), X, Z)[0]
    out = {"coef": float(beta[1])}
else:
    fit = fit_crossed(d, "pause_count ~ conflicts")
    out = {"coef": float(fit.params["conflicts"])}
out.update(fit_s=time.perf_counter() - t0, fit_cpu_s=time.process_time() - c0, attempts=int(len(d)),
           participants=int(d["participant_id"].nunique()))
print("MODEL-JSON" + json.dumps(out))
"""


def run_child(cmd: list[str], *, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` as a child process; return wall seconds, its own peak RSS (MB), exit code
    and the last lines of its output."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": round(wall, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "returncode": proc.returncode,
        "output_tail": out.strip().splitlines()[-5:],
    }


def _single_thread_env() -> dict[str, str]:
    env = dict(os.environ)
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[v] = "1"
    return env


def bench_study(n: int, workdir: Path, seed: int, threshold_s: float) -> dict[str, Any]:
    """Simulate, ingest and compute features for one study of ``n`` participants."""
    study = workdir / f"study_{n}"
    ingest = workdir / f"ingest_{n}"
    features = workdir / f"features_{n}" / "attempts.csv"
    env = _single_thread_env()
    out: dict[str, Any] = {"participants": n, "stages": {}}
    stages = {
        "simulate": NONOLAB
        + ["simulate", "--participants", str(n), "--puzzles", "6", "--seed", str(seed), str(study)],
        "ingest": NONOLAB + ["ingest", str(study), str(ingest)],
        "features": NONOLAB
        + ["features", str(ingest), str(features), "--threshold", str(threshold_s)],
    }
    for name, cmd in stages.items():
        if name == "simulate" and (study / "ground_truth.json").exists():
            out["stages"][name] = {"reused": str(study)}
            continue
        features.parent.mkdir(parents=True, exist_ok=True)
        res = run_child(cmd, env=env)
        out["stages"][name] = res
        print(
            f"[{n}] {name}: {res['wall_s']:.1f} s wall, {res['cpu_s']:.1f} s CPU, "
            f"{res['peak_rss_mb']:.0f} MB",
            flush=True,
        )
        if res["returncode"] != 0:
            out["error"] = f"{name} failed: {res['output_tail']}"
            return out
    ing = out["stages"]["ingest"]["wall_s"] + out["stages"]["features"]["wall_s"]
    out["ingest_plus_features_s"] = round(ing, 3)
    cpu = out["stages"]["ingest"]["cpu_s"] + out["stages"]["features"]["cpu_s"]
    out["ingest_plus_features_cpu_s"] = round(cpu, 3)
    out["features_csv"] = str(features)
    out["puzzle_file"] = str(study / "nonograms_6.json")
    try:
        import pandas as pd

        att = pd.read_csv(features, usecols=["participant_id"])
        out["attempts"] = int(len(att))
    except (OSError, ValueError) as exc:
        out["attempts"] = None
        out["error"] = f"cannot read {features}: {exc}"
    return out


def bench_models(
    features: str,
    puzzle_file: str,
    sizes: list[int],
    attempts_per_participant: float,
    mem_limit_mb: float,
    time_limit_s: float,
) -> list[dict[str, Any]]:
    """Fit the crossed model on growing participant subsets; stop growing after a fit slower
    than ``time_limit_s``. The engine holds no attempts x participants matrix (the participant
    block is eliminated in closed form), so memory grows with the attempts; ``mem_limit_mb``
    is kept for the command line and recorded."""
    rows = []
    env = _single_thread_env()
    slow = False
    for n in sizes:
        attempts = int(round(n * attempts_per_participant))
        row: dict[str, Any] = {"participants": n, "attempts": attempts}
        if slow:
            row["skipped"] = f"previous size took longer than {time_limit_s:.0f} s"
        else:
            for mode in ("reml_direct", "fit_crossed"):
                res = run_child(
                    [PY, "-c", MODEL_CHILD, features, puzzle_file, str(n), mode], env=env
                )
                line = next((x for x in res["output_tail"] if x.startswith("MODEL-JSON")), None)
                if res["returncode"] != 0 or line is None:
                    row[mode] = {"error": res["output_tail"], "returncode": res["returncode"]}
                    continue
                info = json.loads(line[len("MODEL-JSON") :])
                row[mode] = {
                    "fit_s": round(info["fit_s"], 3),
                    "fit_cpu_s": round(info["fit_cpu_s"], 3),
                    "process_wall_s": res["wall_s"],
                    "peak_rss_mb": res["peak_rss_mb"],
                    "coef": info["coef"],
                }
                row["attempts"] = info["attempts"]
                print(
                    f"[model n={n}] {mode}: fit {info['fit_s']:.2f} s wall, "
                    f"{info['fit_cpu_s']:.2f} s CPU, {res['peak_rss_mb']:.0f} MB",
                    flush=True,
                )
            fit = row.get("fit_crossed", {}).get("fit_cpu_s")
            if fit is None or fit > time_limit_s:
                slow = True
        rows.append(row)
    return rows


def growth_exponent(rows: list[dict[str, Any]], mode: str) -> float | None:
    """Least-squares slope of log(fit CPU seconds) on log(participants) over the sizes that ran
    (CPU time: wall time on a shared machine mostly measures the other users)."""
    pts = [
        (r["participants"], r[mode]["fit_cpu_s"])
        for r in rows
        if isinstance(r.get(mode), dict) and r[mode].get("fit_cpu_s", 0) > 0
    ]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return round(float(np.polyfit(x, y, 1)[0]), 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument(
        "--model-sizes", type=int, nargs="+", default=[67, 200, 500, 1000, 2000, 4000, 10000]
    )
    ap.add_argument("--seed", type=int, default=20260301)
    ap.add_argument("--threshold-s", type=float, default=2.36)
    ap.add_argument("--workdir", type=Path, default=REPO / "results" / "bench" / "scale-work")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "scale.json")
    ap.add_argument("--model-mem-limit-mb", type=float, default=6000)
    ap.add_argument("--model-time-limit-s", type=float, default=300)
    ap.add_argument("--target-s", type=float, default=60.0)
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)

    report: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "seed": args.seed,
        "threshold_s": args.threshold_s,
        "target": f"ingest + features under {args.target_s:.0f} s for the largest study",
        "studies": [],
    }
    for n in args.sizes:
        report["studies"].append(bench_study(n, args.workdir, args.seed, args.threshold_s))
    largest = report["studies"][-1]
    if "error" not in largest:
        report["target_met_wall"] = bool(largest["ingest_plus_features_s"] < args.target_s)
        report["target_met_cpu"] = bool(largest["ingest_plus_features_cpu_s"] < args.target_s)
        per = largest["attempts"] / largest["participants"]
        sizes = [s for s in args.model_sizes if s <= largest["participants"]]
        rows = bench_models(
            largest["features_csv"],
            largest["puzzle_file"],
            sizes,
            per,
            args.model_mem_limit_mb,
            args.model_time_limit_s,
        )
        report["models"] = {
            "formula": "pause_count ~ conflicts + (1|participant) + (1|puzzle), REML",
            "rows": rows,
            "growth_exponent_fit_crossed": growth_exponent(rows, "fit_crossed"),
            "growth_exponent_reml_direct": growth_exponent(rows, "reml_direct"),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
