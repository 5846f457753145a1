"""Identifiability of difficulty measures on simulated studies: can the evaluation tell which
measure drives difficulty?

For each candidate measure in turn (the *driver*), simulated studies draw their puzzles at random
from a measured pool (``results/measures/pool.csv``: the registry's measures of the public
study's 1,000-puzzle pool, `snakemake measures_pool`), give every puzzle a latent difficulty
``difficulty_sd * (s * z(driver) + sqrt(1 - s^2) * e)`` and every attempt a final rating with
the simulator's rating model (:class:`nonolab.sim.model.SimParams` defaults: rating mean,
participant bias, expertise effect, noise; rounded and clipped to 1-5 by
:func:`nonolab.sim.model.cut_rating`'s rule), each participant rating 3 puzzles. The
evaluation's puzzle-level test (Spearman of the puzzle's mean rating with each candidate) picks
the candidate with the highest rho; a tie for the top (candidates ranking the puzzles alike)
is counted as ``tie``. The confusion matrix (rows: driver, columns: picked) is printed as
Markdown and written to ``benchmarks/results/measures_identifiability.json``, for the paper's
design (6 puzzles, 67 participants) and a planned one (``--planned-puzzles``,
``--planned-participants``). Wall time is reported beside it.

Usage: ``python benchmarks/measures_identifiability.py --pool results/measures/pool.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.sim.model import SimParams

CANDIDATES = (
    "foothold_cells",
    "chain_rounds",
    "clue_count",
    "mean_block_length",
    "sat_minisat22_block_start_decisions",
    "sat_cadical195_regular_propagations",
)
LOG1P = {"sat_minisat22_block_start_decisions", "sat_cadical195_regular_propagations"}


def simulate_means(
    z: np.ndarray, n_participants: int, p: SimParams, rng: np.random.Generator
) -> np.ndarray:
    """Return the mean final rating of each puzzle in one simulated study (each participant
    rates 3 distinct puzzles; a puzzle nobody rated gets NaN)."""
    k = len(z)
    s = p.metric_strength
    latent = p.difficulty_sd * (s * z + np.sqrt(1 - s * s) * rng.standard_normal(k))
    total = np.zeros(k)
    count = np.zeros(k)
    for _ in range(n_participants):
        seen = rng.choice(k, size=3, replace=False)
        bias = rng.normal(0, p.participant_sd) + p.expertise_effect * rng.standard_normal()
        y = p.rating_mean + latent[seen] + bias
        y = y + rng.normal(0, np.hypot(p.noise_sd, p.final_noise_sd), 3)
        r = np.clip(np.floor(y + 0.5), 1, 5)
        total[seen] += r
        count[seen] += 1
    with np.errstate(invalid="ignore"):
        return total / count


def confusion(
    pool: pd.DataFrame,
    n_puzzles: int,
    n_participants: int,
    reps: int,
    seed: int,
    params: SimParams,
) -> pd.DataFrame:
    """Return the confusion matrix (counts): rows the driver, columns the picked candidate or
    ``tie``."""
    rng = np.random.default_rng(seed)
    values = {
        c: (np.log1p(pool[c].to_numpy(float)) if c in LOG1P else pool[c].to_numpy(float))
        for c in CANDIDATES
    }
    out = pd.DataFrame(0, index=list(CANDIDATES), columns=[*CANDIDATES, "tie"])
    for driver in CANDIDATES:
        for _ in range(reps):
            idx = rng.choice(len(pool), size=n_puzzles, replace=False)
            x = values[driver][idx]
            if np.ptp(x) == 0:
                out.loc[driver, "tie"] += 1
                continue
            z = (x - x.mean()) / x.std()
            m = simulate_means(z, n_participants, params, rng)
            ok = np.isfinite(m)
            rhos = {}
            for c in CANDIDATES:
                v = values[c][idx][ok]
                rhos[c] = stats.spearmanr(v, m[ok]).statistic if np.ptp(v) > 0 else -np.inf
            best = max(rhos.values())
            top = [c for c, r in rhos.items() if np.isclose(r, best)]
            out.loc[driver, top[0] if len(top) == 1 else "tie"] += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool", default="results/measures/pool.csv")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=35)
    ap.add_argument("--strength", type=float, default=0.8, help="metric_strength (a correlation)")
    ap.add_argument("--planned-puzzles", type=int, default=24)
    ap.add_argument("--planned-participants", type=int, default=120)
    ap.add_argument("--out", default="benchmarks/results/measures_identifiability.json")
    a = ap.parse_args()
    pool = pd.read_csv(a.pool)
    # the simulator's rating model at its defaults; only the strength of the driver is set
    params = SimParams(metric_strength=a.strength)
    record: dict[str, object] = {
        "pool": a.pool,
        "pool_size": len(pool),
        "reps": a.reps,
        "seed": a.seed,
        "metric_strength": a.strength,
        "load_before": os.getloadavg()[0],
        "designs": {},
    }
    for label, k, n in (
        ("paper (6 puzzles, 67 participants)", 6, 67),
        (
            f"planned ({a.planned_puzzles} puzzles, {a.planned_participants} participants)",
            a.planned_puzzles,
            a.planned_participants,
        ),
    ):
        t0 = time.perf_counter()
        cm = confusion(pool, k, n, a.reps, a.seed, params)
        secs = time.perf_counter() - t0
        acc = float(np.trace(cm[list(CANDIDATES)].to_numpy()) / cm.to_numpy().sum())
        record["designs"][label] = {
            "confusion": cm.to_dict(orient="index"),
            "accuracy": acc,
            "seconds": secs,
        }
        print(
            f"\n{label}: true driver picked in {acc:.1%} of {cm.to_numpy().sum()} studies "
            f"({secs:.1f} s)\n"
        )
        print(cm.to_markdown())
    record["load_after"] = os.getloadavg()[0]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
