"""Crossed mixed-model benchmark: nonolab's engine against lme4 on the same simulated data.

    .venv/bin/python benchmarks/lmm_bench.py                    # results/bench/lmm.json
    .venv/bin/python benchmarks/lmm_bench.py --participants 67,1000 --puzzles 6 --repeats 1
    .venv/bin/python benchmarks/lmm_bench.py --model maximal --participants 500,2000,10000 \
        --puzzles 30 --boot 0                                   # results/bench/lmm_maximal.json

``--model maximal``: ``y ~ x + (1 + x | participant) + (1 | puzzle)`` by REML (a random slope
of the puzzle-level ``x`` per participant), :func:`nonolab.stats.lmm_general.fit_general`
against lme4's ``lmer`` on the same data, timed the same way (no bootstrap).

Model ``y ~ x + (1 | participant) + (1 | puzzle)`` by REML, ``x`` a puzzle-level covariate. Each
simulated participant attempts 3 distinct puzzles drawn at random from the pool (the study's
design: 3 of 6), so a study of P participants has 3P rows. Timed: :func:`nonolab.stats.lmm.
fit_crossed` from a data frame with string ids (design, factor codes and fit), and lme4's
``lmer`` from a data frame with character ids (``system.time`` inside one R process, so R's start
and package loading are not counted), each the median of ``--repeats`` fits after one untimed
warm-up fit. lme4 runs through ``Rscript`` when it is installed (``RSCRIPT`` overrides); without
it only nonolab is timed. Ratio = lme4 seconds / nonolab seconds (> 1: nonolab faster). The JSON
also gives both fits' estimates and their largest relative difference.

Parametric bootstrap (``--boot N``, default 200; 0 skips it): :func:`nonolab.stats.lmm.bootstrap_p`
with ``N`` refits (batched, :func:`~nonolab.stats.lmm.reml_fit_batch`), against refitting the
first ``--boot-loop`` (default 50) of the same simulated responses one at a time with
:func:`~nonolab.stats.lmm.reml_fit_arrays` (warm-started, the refit used before the batched one);
seconds per refit for both, their ratio, the largest difference of the refits' z statistics, the
largest gain in REML log-likelihood of a batched refit over its one-at-a-time refit and the
number of responses where that gain exceeds 1e-6 (the one-at-a-time fit ended short).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nonolab.core.tables import write_json
from nonolab.stats import rcheck
from nonolab.stats.lmm import (
    bootstrap_p,
    fit_crossed,
    reml_fit_arrays,
    reml_fit_batch,
    simulate_responses,
)
from nonolab.stats.lmm_general import RandomTerm, fit_general

REPO = Path(__file__).resolve().parents[1]
PER_PARTICIPANT = 3

R_CODE = r"""
suppressMessages(library(lme4))
d <- read.csv("data.csv", colClasses = c("character", "character", "numeric", "numeric"))
f <- y ~ x + (1 | participant_id) + (1 | puzzle_hash)
m <- lmer(f, data = d, REML = TRUE)
times <- replicate(REPEATS, system.time(m <- lmer(f, data = d, REML = TRUE))[["elapsed"]])
vc <- as.data.frame(VarCorr(m))
v <- setNames(vc$vcov, vc$grp)
cat(sprintf("%.17g", c(median(times), fixef(m)[["x"]], v[["participant_id"]],
            v[["puzzle_hash"]], v[["Residual"]], as.numeric(logLik(m)))), sep = "\n")
"""


def simulate(n_participants: int, n_puzzles: int, seed: int) -> pd.DataFrame:
    """Return one simulated crossed study: ``participant_id``, ``puzzle_hash`` (strings),
    ``x`` (puzzle-level covariate, SD 1) and ``y`` (intercept 1, slope 0.5; participant,
    puzzle and residual variances 1, 0.5 and 1)."""
    rng = np.random.default_rng([seed, n_participants, n_puzzles])
    p = np.repeat(np.arange(n_participants), PER_PARTICIPANT)
    keys = rng.random((n_participants, n_puzzles))
    q = np.argsort(keys, axis=1)[:, :PER_PARTICIPANT].ravel()
    x_q = rng.normal(size=n_puzzles)
    u_p = rng.normal(0.0, 1.0, n_participants)
    u_q = rng.normal(0.0, np.sqrt(0.5), n_puzzles)
    y = 1.0 + 0.5 * x_q[q] + u_p[p] + u_q[q] + rng.normal(size=len(p))
    return pd.DataFrame(
        {
            "participant_id": [f"P{i:06d}" for i in p],
            "puzzle_hash": [f"h{j:03d}" for j in q],
            "x": x_q[q],
            "y": y,
        }
    )


R_MAXIMAL = R_CODE.replace(
    "f <- y ~ x + (1 | participant_id) + (1 | puzzle_hash)",
    "f <- y ~ x + (1 + x | participant_id) + (1 | puzzle_hash)",
).replace(
    "v <- setNames(vc$vcov, vc$grp)",
    'vc <- vc[is.na(vc$var2) & (vc$var1 == "(Intercept)" | vc$grp == "Residual"), ]\n'
    "v <- setNames(vc$vcov, vc$grp)",
)
MAXIMAL_TERMS = (RandomTerm("participant_id", ("1", "x")), RandomTerm("puzzle_hash"))


def time_maximal(d: pd.DataFrame, repeats: int) -> dict[str, Any]:
    """Return the median wall seconds (and CPU seconds) of ``fit_general`` of the maximal
    model and its estimates (participant variance: the intercept's)."""
    fit_general(d, "y ~ x", MAXIMAL_TERMS)
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fit = fit_general(d, "y ~ x", MAXIMAL_TERMS)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    vc = fit.varcorr[fit.varcorr["var2"] == ""].set_index(["group", "var1"])["vcov"]
    return {
        "seconds": statistics.median(times),
        "all_seconds": times,
        "cpu_seconds": statistics.median(cpu),
        "coef_x": float(fit.params["x"]),
        "var_participant": float(vc[("participant_id", "1")]),
        "var_puzzle": float(vc[("puzzle_hash", "1")]),
        "var_residual": fit.var_residual,
        "reml_loglik": fit.llf,
        "converged": fit.converged,
    }


def time_nonolab(d: pd.DataFrame, repeats: int) -> dict[str, Any]:
    """Return the median wall seconds of ``fit_crossed`` and its estimates."""
    fit_crossed(d, "y ~ x")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fit = fit_crossed(d, "y ~ x")
        times.append(time.perf_counter() - t0)
    return {
        "seconds": statistics.median(times),
        "all_seconds": times,
        "coef_x": float(fit.params["x"]),
        "var_participant": fit.var_participant,
        "var_puzzle": fit.var_puzzle,
        "var_residual": fit.var_residual,
        "reml_loglik": fit.llf,
        "converged": fit.converged,
    }


def time_bootstrap(d: pd.DataFrame, n_boot: int, n_loop: int, seed: int) -> dict[str, Any]:
    """Return seconds per refit of the batched bootstrap and of one-at-a-time refits, and how
    far the two sets of refits differ (see the module docstring)."""
    t0 = time.perf_counter()
    res = bootstrap_p(d, "y", "x", "x", n_boot=n_boot, seed=seed)
    batched = (time.perf_counter() - t0) / n_boot
    full, null = fit_crossed(d, "y ~ x"), fit_crossed(d, "y ~ 1")
    Y = simulate_responses(null, np.random.default_rng(seed), min(n_loop, n_boot))
    codes = [full.participant_codes, full.puzzle_codes]
    start = np.sqrt(np.array([full.var_participant, full.var_puzzle]) / full.var_residual)
    t0 = time.perf_counter()
    loop = [reml_fit_arrays(y, full.exog, codes, start=start) for y in Y]
    one = (time.perf_counter() - t0) / len(Y)
    z_loop = np.array([b[1] / np.sqrt(c[1, 1]) for b, c, _, _ in loop])
    gain = reml_fit_batch(Y, full.exog, codes, start=start)[3] - np.array([r[3] for r in loop])
    return {
        "n_boot": n_boot,
        "n_loop": len(Y),
        "seconds_per_refit_batched": batched,
        "seconds_per_refit_one_at_a_time": one,
        "ratio": one / batched,
        "max_abs_z_diff": float(np.max(np.abs(res.z_null[: len(Y)] - z_loop))),
        "max_loglik_gain": float(np.max(gain)),
        "one_at_a_time_below_optimum": int(np.sum(gain > 1e-6)),
        "p_boot": res.p_boot,
        "n_failed": res.n_failed,
    }


def time_lme4(d: pd.DataFrame, repeats: int, workdir: Path, code: str = R_CODE) -> dict[str, Any]:
    """Return the median ``system.time`` seconds of ``lmer`` and its estimates."""
    workdir.mkdir(parents=True, exist_ok=True)
    d.to_csv(workdir / "data.csv", index=False, float_format="%.17g")
    out = rcheck.run_r(code.replace("REPEATS", str(repeats)), workdir, timeout_s=3600)
    vals = [float(v) for v in out.split()]
    keys = ["seconds", "coef_x", "var_participant", "var_puzzle", "var_residual", "reml_loglik"]
    return dict(zip(keys, vals, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--participants", default="67,1000,10000,100000")
    ap.add_argument("--puzzles", default="6,30")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--no-r", action="store_true", help="time nonolab only")
    ap.add_argument("--boot", type=int, default=200, help="bootstrap refits (0: skip)")
    ap.add_argument("--boot-loop", type=int, default=50, help="one-at-a-time refits timed")
    ap.add_argument("--model", choices=("crossed", "maximal"), default="crossed")
    ap.add_argument("--out", default=None, help="default results/bench/lmm[_maximal].json")
    args = ap.parse_args(argv)
    maximal = args.model == "maximal"
    if args.out is None:
        name = "lmm_maximal.json" if maximal else "lmm.json"
        args.out = str(REPO / "results" / "bench" / name)
    use_r = not args.no_r and rcheck.r_available(("lme4",))
    if not use_r:
        print("lme4 not timed: " + ("--no-r" if args.no_r else "Rscript with lme4 not found"))
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="lmm_bench_") as tmp:
        for n_q in [int(v) for v in args.puzzles.split(",")]:
            for n_p in [int(v) for v in args.participants.split(",")]:
                d = simulate(n_p, n_q, args.seed)
                row: dict[str, Any] = {
                    "participants": n_p,
                    "puzzles": n_q,
                    "rows": len(d),
                    "nonolab": (time_maximal if maximal else time_nonolab)(d, args.repeats),
                }
                if use_r:
                    code = R_MAXIMAL if maximal else R_CODE
                    lme4 = time_lme4(d, args.repeats, Path(tmp) / f"{n_p}_{n_q}", code)
                    ours = row["nonolab"]
                    row["lme4"] = lme4
                    row["ratio"] = lme4["seconds"] / ours["seconds"]
                    row["max_rel_diff"] = max(
                        abs(ours[k] - lme4[k]) / abs(lme4[k])
                        for k in ("coef_x", "var_participant", "var_puzzle", "var_residual")
                    )
                    row["loglik_diff"] = ours["reml_loglik"] - lme4["reml_loglik"]
                if args.boot > 0 and not maximal:
                    row["bootstrap"] = time_bootstrap(d, args.boot, args.boot_loop, args.seed)
                rows.append(row)
                lme4_s = f"{row['lme4']['seconds']:.3f} s" if use_r else "-"
                ratio = f"{row['ratio']:.2f}x" if use_r else "-"
                print(
                    f"{n_p:>7} participants x {n_q:>2} puzzles ({len(d):>7} rows): "
                    f"nonolab {row['nonolab']['seconds']:.3f} s, lme4 {lme4_s}, ratio {ratio}",
                    flush=True,
                )
                if "bootstrap" in row:
                    b = row["bootstrap"]
                    print(
                        f"    bootstrap: {1e3 * b['seconds_per_refit_batched']:.2f} ms per refit "
                        f"batched, {1e3 * b['seconds_per_refit_one_at_a_time']:.2f} ms one at a "
                        f"time ({b['ratio']:.0f}x); max |z diff| {b['max_abs_z_diff']:.1e}",
                        flush=True,
                    )
    meta = {
        "design": f"{PER_PARTICIPANT} distinct puzzles per participant",
        "model": "y ~ x + (1 + x | participant) + (1 | puzzle)"
        if maximal
        else "y ~ x + (1 | participant) + (1 | puzzle)",
        "repeats": args.repeats,
        "seed": args.seed,
        "lme4": use_r,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "python": sys.version.split()[0],
    }
    write_json({"meta": meta, "runs": rows}, Path(args.out))
    print(f"wrote {args.out}; load {load_before[0]:.2f} -> {meta['load_after'][0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
