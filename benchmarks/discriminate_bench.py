"""The discriminating design criterion against D-optimality on the public pool.

    .venv/bin/python benchmarks/discriminate_bench.py   # benchmarks/results/discriminate.json

Pool: the public study's ``nonograms10x10.txt`` with ``nonogram_solver_stats.csv`` (read from
``../shared/study-data``, never copied), eligible as ``nonolab design``'s defaults leave it except
uniqueness (not checked: every selection draws from the same eligible set, so the comparison is
unaffected). The registry's measures are computed for every eligible puzzle (timed once).

For each set of named measures (``--pairs``: three pairs and the triple of foothold cells,
MiniSat block-start decisions and propagation rounds) and each design (``--designs``: the paper's
6 puzzles with 67 participants, a planned 24 with 120), selections:

* ``discriminate_w1``, ``discriminate_w0.25``:
  :func:`nonolab.design.discriminate.select_discriminating` at spread weight ``w`` (``--weights``;
  ``w = 1``, the default of ``nonolab design --discriminate``, is D-optimality over the named
  measures with the spread floor; ``w = 0.25`` trades spread for lower correlation);
* ``d_optimal_default``: what ``nonolab design`` selects without the option (D-optimal over
  conflicts, decisions, propagations, :func:`nonolab.design.selection.select_puzzles`);
* ``random_median``: the random K-subset with the median |correlation| of ``--random`` draws;
* ``paper_six`` (K = 6 only): the paper's six puzzles (``nonograms_6.json``; their SAT counts
  by MiniSat22 on the block-start encoding, as ``nonolab design --reference-study`` computes
  them), z-scored with the eligible pool's mean and SD.

Per selection: the largest |Pearson r| and |Spearman rho| between two named measures
(pool-z-scored scale), each measure's SD in pool SDs, and per driver (each measure in turn) the
power of the contrast (Williams' tests of the dependent Spearman correlations with BT
difficulty, intersection-union over the other measures; rho ``--rho``; sessions of 3 puzzles
from the balanced schedule; ``--replications``) and the share of studies in which the driver
merely has the highest correlation (``picked_share``).
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
        default="conflicts:foothold_cells,conflicts:chain_rounds,foothold_cells:chain_rounds,"
        "foothold_cells:sat_minisat22_block_start_decisions:chain_rounds",
        help="measure sets, colon-separated within a set, comma-separated between sets",
    )
    ap.add_argument(
        "--designs",
        default="6:67,24:120",
        help="K:participants (the paper's 6 puzzles and 67 participants; a planned 24 x 120)",
    )
    ap.add_argument(
        "--weights", default="1,0.25", help="spread weights w of the criterion (1: the default)"
    )
    ap.add_argument("--rho", type=float, default=0.6)
    ap.add_argument("--replications", type=int, default=1000)
    ap.add_argument("--random", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "discriminate.json"))
    a = ap.parse_args()
    pairs = [tuple(p.split(":")) for p in a.pairs.split(",")]
    weights = [float(w) for w in a.weights.split(",")]
    designs = [tuple(int(v) for v in d.split(":")) for d in a.designs.split(",")]
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
        for k, n_part in designs:
            sched = balanced_schedule(k, 3, n_part, a.seed).sessions[:n_part]
            sels = {}
            for w in weights:
                t0 = time.perf_counter()
                sel = dc.select_discriminating(Z, k, seed=a.seed, w=w)
                sels[f"discriminate_w{w:g}"] = (Z[sel], cand.iloc[sel], time.perf_counter() - t0)
            sel_dd = select_puzzles(el_ok, k, seed=a.seed)
            rng = np.random.default_rng(np.random.SeedSequence([a.seed, k]))
            draws = [rng.choice(len(Z), k, replace=False) for _ in range(a.random)]
            cors = [dc.selection_row("r", Z[d], pair)["max_abs_correlation"] or 0 for d in draws]
            sel_rand = draws[int(np.argsort(cors)[len(cors) // 2])]
            sels["d_optimal_default"] = (Z[sel_dd], cand.iloc[sel_dd], None)
            sels["random_median"] = (Z[sel_rand], cand.iloc[sel_rand], None)
            if k == len(six_all):
                six = six_all[list(pair)]
                sels["paper_six"] = (((six - mu) / sd).to_numpy(), six, None)
            for name, (z, vals, secs) in sels.items():
                row = dc.selection_row(name, z, pair)
                row = {
                    "measures": list(pair),
                    "participants": n_part,
                    **row,
                    "sd": [row.pop(f"{n}_sd") for n in pair],
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
                    res = [
                        dc.contrast_power(cd, d, a.rho, a.replications, a.seed, model)
                        for d in range(len(pair))
                    ]
                    row["power"] = [r.power for r in res]
                    row["power_ci"] = [list(r.interval()) for r in res]
                    row["picked_share"] = [r.extra["picked_share"] for r in res]
                    row["mean_power"] = float(np.mean(row["power"]))
                rows.append(row)
                print(
                    f"{'/'.join(pair)[:48]:48s} K={k:2d} N={n_part:3d} {name:18s} "
                    f"|r|={row['max_abs_correlation']:.3f} sd={np.round(row['sd'], 2).tolist()} "
                    f"power={np.round(row.get('power', []), 3).tolist()} "
                    f"picked={np.round(row.get('picked_share', []), 3).tolist()}",
                    flush=True,
                )
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "pool": {"puzzles": len(pool), "eligible": len(el), "read_seconds": t_pool},
        "measures": names,
        "measure_seconds": t_measures,
        "settings": {
            "designs": [list(d) for d in designs],
            "per_session": 3,
            "rho": a.rho,
            "replications": a.replications,
            "random_draws": a.random,
            "seed": a.seed,
            "weights": weights,
            "min_sd": dc.MIN_SD,
            "cpu_count": os.cpu_count(),
            "load": os.getloadavg()[0],
        },
        "rows": rows,
    }
    write_json(out, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
