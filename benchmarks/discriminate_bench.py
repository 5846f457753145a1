"""The discriminating design criterion against D-optimality on the public pool.

    .venv/bin/python benchmarks/discriminate_bench.py      # results/bench/discriminate.json

Pool: the public study's ``nonograms10x10.txt`` with ``nonogram_solver_stats.csv`` (read from
``../shared/study-data``, never copied), eligible as ``nonolab design``'s defaults leave it except
uniqueness (not checked: every selection draws from the same eligible set, so the comparison is
unaffected). The registry's measures are computed for every eligible puzzle (timed once).

For each pair of named measures (``--pairs``) and each K (``--k``), selections:

* ``discriminating``: :func:`nonolab.design.discriminate.select_discriminating` (the criterion of
  ``nonolab design --discriminate A,B``);
* ``d_optimal_named``: D-optimal for the two named measures (the same exchange with ``w = 1``
  and no spread floor, i.e. ``det`` of their covariance over the selection);
* ``d_optimal_default``: what ``nonolab design`` selects without the option (D-optimal over
  conflicts, decisions, propagations, :func:`nonolab.design.selection.select_puzzles`);
* ``random_median``: the random K-subset with the median |correlation| of ``--random`` draws;
* ``paper_six`` (K = 6 only): the paper's six puzzles (``nonograms_6.json``; their SAT counts
  by MiniSat22 on the block-start encoding, as ``nonolab design --reference-study`` computes
  them), z-scored with the eligible pool's mean and SD.

Per selection: the largest |Pearson r| and |Spearman rho| between the two measures (pool-z-scored
scale), each measure's SD in pool SDs, and the power of the contrast (Williams' test of the two
dependent Spearman correlations with BT difficulty, both drivers in turn, rho ``--rho``,
``--participants`` sessions of 3 puzzles from the balanced schedule, ``--replications``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from nonolab.core.tables import write_json
from nonolab.design import discriminate as dc
from nonolab.design.power import RatingModel
from nonolab.design.schedule import balanced_schedule
from nonolab.design.selection import Constraints, eligible, load_pool, select_puzzles
from nonolab.design.study import reference_from_study
from nonolab.sat.puzzles import load_study_puzzles

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NONOLAB_SHARED", REPO.parent / "shared")) / "study-data"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--pairs",
        default="conflicts:foothold_cells,conflicts:chain_rounds,foothold_cells:chain_rounds",
    )
    ap.add_argument("--k", default="6,24")
    ap.add_argument("--participants", type=int, default=90)
    ap.add_argument("--rho", type=float, default=0.6)
    ap.add_argument("--replications", type=int, default=1000)
    ap.add_argument("--random", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--out", default=str(REPO / "results" / "bench" / "discriminate.json"))
    a = ap.parse_args()
    pairs = [tuple(p.split(":")) for p in a.pairs.split(",")]
    ks = [int(k) for k in a.k.split(",")]
    names = sorted({n for p in pairs for n in p})

    t0 = time.perf_counter()
    pool = load_pool(SHARED / "nonograms10x10.txt", SHARED / "nonogram_solver_stats.csv")
    el = eligible(pool, Constraints(unique=False))
    t_pool = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = dc.measure_frame(pool, names)
    t_measures = time.perf_counter() - t0
    el_frame = full.loc[pool["pool_id"].isin(el["pool_id"]).to_numpy()].reset_index(drop=True)
    # the paper's six (not pool lines): SAT counts as `nonolab design --reference-study` has them
    ref = reference_from_study(SHARED)
    six_frame = ref.metrics.assign(puzzle=load_study_puzzles(SHARED / "nonograms_6.json"))
    six_all = dc.measure_frame(six_frame, names)

    rows = []
    model = RatingModel()
    for pair in pairs:
        ok = el_frame[list(pair)].notna().all(axis=1).to_numpy()
        cand = el_frame.loc[ok, list(pair)].reset_index(drop=True)
        mu, sd = cand.mean().to_numpy(), cand.std(ddof=0).to_numpy()
        Z = dc.standardise(cand)
        el_ok = el.loc[ok].reset_index(drop=True)
        for k in ks:
            sched = balanced_schedule(k, 3, a.participants, a.seed).sessions[: a.participants]
            t0 = time.perf_counter()
            sel_disc = dc.select_discriminating(Z, k, seed=a.seed)
            t_disc = time.perf_counter() - t0
            t0 = time.perf_counter()
            sel_dn = dc.select_discriminating(Z, k, seed=a.seed, w=1.0, min_sd=1e-6)
            t_dn = time.perf_counter() - t0
            sel_dd = select_puzzles(el_ok, k, seed=a.seed)
            rng = np.random.default_rng(np.random.SeedSequence([a.seed, k]))
            draws = [rng.choice(len(Z), k, replace=False) for _ in range(a.random)]
            cors = [abs(np.corrcoef(Z[d].T)[0, 1]) for d in draws]
            sel_rand = draws[int(np.argsort(cors)[len(cors) // 2])]
            sels = {
                "discriminating": (Z[sel_disc], cand.iloc[sel_disc], t_disc),
                "d_optimal_named": (Z[sel_dn], cand.iloc[sel_dn], t_dn),
                "d_optimal_default": (Z[sel_dd], cand.iloc[sel_dd], None),
                "random_median": (Z[sel_rand], cand.iloc[sel_rand], None),
            }
            if k == len(six_all):
                six = six_all[list(pair)]
                sels["paper_six"] = (((six - mu) / sd).to_numpy(), six, None)
            for name, (z, vals, secs) in sels.items():
                row = dc.selection_row(name, z, pair)
                row = {
                    "pair": f"{pair[0]} vs {pair[1]}",
                    **row,
                    "sd_a": row.pop(f"{pair[0]}_sd"),
                    "sd_b": row.pop(f"{pair[1]}_sd"),
                    "select_seconds": secs,
                }
                if np.isfinite(vals.to_numpy(dtype=float)).all():
                    # the contrast's pool scores: percentiles among the eligible candidates
                    scores = np.column_stack(
                        [
                            dc.pool_normal_scores(cand[n].to_numpy(), vals[n].to_numpy())
                            for n in pair
                        ]
                    )
                    cd = dc.ContrastDesign(
                        sched, vals.to_numpy(dtype=float), scores, tuple(pair), 0.1
                    )
                    for drv in (0, 1):
                        r = dc.contrast_power(cd, drv, a.rho, a.replications, a.seed, model)
                        lo, hi = r.interval()
                        row[f"power_{'ab'[drv]}_drives"] = r.power
                        row[f"power_{'ab'[drv]}_drives_ci"] = [lo, hi]
                rows.append(row)
                print(
                    f"{row['pair']:36s} K={k:2d} {name:18s} |r|={row['max_abs_correlation']:.3f}"
                    f" sd=({row['sd_a']:.2f},{row['sd_b']:.2f}) power="
                    f"({row.get('power_a_drives', float('nan')):.3f},"
                    f"{row.get('power_b_drives', float('nan')):.3f})",
                    flush=True,
                )
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "pool": {"puzzles": len(pool), "eligible": len(el), "read_seconds": t_pool},
        "measures": names,
        "measure_seconds": t_measures,
        "settings": {
            "participants": a.participants,
            "per_session": 3,
            "rho": a.rho,
            "replications": a.replications,
            "random_draws": a.random,
            "seed": a.seed,
            "spread_weight": dc.SPREAD_WEIGHT,
            "min_sd": dc.MIN_SD,
            "cpu_count": os.cpu_count(),
        },
        "rows": rows,
    }
    write_json(out, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
