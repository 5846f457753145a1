"""Discriminating design vs D-optimal vs random on a measured pool (nonolab.design.discriminating).

For the paper's design (6 puzzles, 67 participants) and a planned one (24 puzzles, 120
participants), chooses puzzles from ``results/measures/pool.csv`` (`snakemake measures_pool`)
three ways (random, D-optimal, decorrelating) for three named measures (foothold cells,
MiniSat block-start decisions, propagation rounds) and reports the decorrelation achieved and the
contrast power (share of simulated studies in which the Spearman picks the true driver, per
driver). Writes ``benchmarks/results/measures_design.json``.

Usage: ``python benchmarks/measures_design.py --pool results/measures/pool.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from nonolab.design.discriminating import (
    contrast_power,
    d_optimal_selection,
    discriminating_selection,
    scaled_measures,
    selection_summary,
)

NAMES = ["foothold_cells", "sat_minisat22_block_start_decisions", "chain_rounds"]
TRANSFORMS = {"sat_minisat22_block_start_decisions": "log1p"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool", default="results/measures/pool.csv")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="benchmarks/results/measures_design.json")
    a = ap.parse_args()
    pool = pd.read_csv(a.pool)
    x = scaled_measures(pool, NAMES, TRANSFORMS)
    out: dict[str, object] = {
        "pool": a.pool,
        "measures": NAMES,
        "reps": a.reps,
        "seed": a.seed,
        "load_before": os.getloadavg()[0],
        "rows": [],
    }
    for k, n in ((6, 67), (24, 120)):
        for label in ("random", "d_optimal", "decorrelating"):
            t0 = time.perf_counter()
            if label == "random":
                sel = sorted(np.random.default_rng(a.seed).choice(len(pool), k, replace=False))
            elif label == "d_optimal":
                sel = d_optimal_selection(pool, NAMES, k, transforms=TRANSFORMS, seed=a.seed)
            else:
                sel = discriminating_selection(pool, NAMES, k, transforms=TRANSFORMS, seed=a.seed)
            secs = time.perf_counter() - t0
            power = contrast_power(x[sel], n, reps=a.reps, seed=a.seed)
            row = {
                "puzzles": k,
                "participants": n,
                "design": label,
                **selection_summary(x[sel]),
                "power": [float(p) for p in power],
                "mean_power": float(power.mean()),
                "select_s": secs,
            }
            out["rows"].append(row)
            print(json.dumps(row))
    out["load_after"] = os.getloadavg()[0]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
