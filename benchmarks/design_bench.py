"""Study-design benchmark: power curves by batched fits against an R loop doing what simr does.

    .venv/bin/python benchmarks/design_bench.py                 # results/bench/design.json
    .venv/bin/python benchmarks/design_bench.py --r-sims 100 --calibration-studies 300

Design: 24 puzzles, 3 per session, the balanced schedule of :mod:`nonolab.design.schedule`;
participant counts ``--participants`` (default 30, 60, 90, 120, 150). Parts:

1. **Engine curve** (the <= 60 s target): :func:`nonolab.design.power.lmm_power` for the
   moderation model (random intercepts, Satterthwaite) at every participant count x ``--sims``
   simulations (default 1,000), the engine's own model (ratings on the 1-5 scale, every
   replication its own expertise and missing ratings), BLAS on one thread; beside it, in the same
   run, the previous shortcut (one covariate draw per 100 replications, one shared design per
   batch) as the cost baseline. ``--engine-only`` stops after this part.
2. **Same curve, nonolab vs the R loop** on one fixed design per participant count (expertise
   drawn once, no missing ratings) and Gaussian responses simulated from the planning model
   (what simr's ``simulate`` does from a fitted lme4 model): nonolab fits all ``--sims``
   responses by :func:`nonolab.design.power.lmm_test_batch` (batched REML, Satterthwaite df);
   R refits the first ``--r-sims`` of the *same* responses one at a time with
   ``lmerTest::lmer`` and takes lmerTest's Satterthwaite p, the loop simr's ``powerSim`` runs
   (simr itself is not needed: the refit and test are the cost). R's time per refit is
   measured inside one R process (``proc.time`` around the loop, package loading excluded) and
   extrapolated to ``--sims`` per participant count; ratio = R seconds / nonolab seconds. The
   two power estimates are compared with their Monte-Carlo errors, and the p-values of the
   shared responses directly.
3. **Maximal structure**: :func:`nonolab.design.power.maximal_power` (correlated random slopes
   of the metric by participant, Satterthwaite) at ``--maximal-sims`` (default 1,000) for one
   design (``--maximal-participants``, default 60).
4. **Calibration at full settings** (``--calibration-studies``, default 300 per design; 0
   skips): :func:`nonolab.design.calibration.calibrate` for (8 puzzles, 30 participants) and
   (12, 24).
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from nonolab.core.tables import write_json
from nonolab.design.power import (
    Design,
    RatingModel,
    lmm_power,
    lmm_test_batch,
    maximal_power,
)
from nonolab.design.schedule import balanced_schedule
from nonolab.stats import rcheck

REPO = Path(__file__).resolve().parents[1]
K, M = 24, 3

R_CODE = r"""
suppressMessages({library(lme4); library(lmerTest)})
d <- read.csv("design.csv", colClasses = c("character", "character", "numeric", "numeric"))
Y <- as.matrix(read.csv("responses.csv", header = FALSE))
p <- numeric(nrow(Y))
t0 <- proc.time()[["elapsed"]]
for (b in seq_len(nrow(Y))) {
  d$y <- Y[b, ]
  m <- lmer(y ~ x * e + (1 | participant) + (1 | puzzle), data = d, REML = TRUE)
  p[b] <- summary(m)$coefficients["x:e", "Pr(>|t|)"]
}
elapsed <- proc.time()[["elapsed"]] - t0
cat(sprintf("%.17g", c(elapsed, p)), sep = "\n")
"""


def _metric(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.round(np.exp(rng.normal(2.0, 1.0, K)))


def fixed_design(n: int, seed: int) -> tuple[np.ndarray, list[np.ndarray], pd.DataFrame]:
    """Return ``(X, codes, frame)`` of the moderation model on one fixed design: the balanced
    schedule's first ``n`` sessions, the metric covariate, expertise drawn once."""
    q = balanced_schedule(K, M, n, seed).sessions
    x = np.log1p(_metric(seed))
    x = (x - x.mean()) / x.std()
    e = np.random.default_rng([seed, n]).standard_normal(n)
    e = (e - e.mean()) / e.std()
    pc, qc = np.repeat(np.arange(n), M), q.ravel()
    X = np.column_stack([np.ones(len(qc)), x[qc], e[pc], x[qc] * e[pc]])
    frame = pd.DataFrame(
        {"participant": pc.astype(str), "puzzle": qc.astype(str), "x": x[qc], "e": e[pc]}
    )
    return X, [pc, qc], frame


def gaussian_responses(
    X: np.ndarray, codes: list[np.ndarray], model: RatingModel, sims: int, seed: int
) -> np.ndarray:
    """Return ``sims`` responses from the planning model (fixed effects, participant and puzzle
    intercepts, residual; Gaussian): what ``simulate`` draws from a fitted lme4 model."""
    rng = np.random.default_rng(seed)
    beta = np.array([model.rating_mean, model.difficulty_sd * model.metric_strength,
                     model.expertise_effect, model.interaction])  # fmt: skip
    puz_sd = model.difficulty_sd * math.sqrt(1 - model.metric_strength**2)
    n_p, n_q = codes[0].max() + 1, codes[1].max() + 1
    return (
        X @ beta
        + rng.normal(0, model.participant_sd, (sims, n_p))[:, codes[0]]
        + rng.normal(0, puz_sd, (sims, n_q))[:, codes[1]]
        + rng.normal(0, model.residual_sd, (sims, len(X)))
    )


def shared_draw_power(d: Design, sims: int, seed: int, chunk: int = 100) -> tuple[float, float]:
    """Return (power, seconds) of the moderation model with the previous engine's shortcut:
    one draw of expertise and missing ratings per ``chunk`` replications, so that each chunk
    is one shared design (the baseline of the independent replications' cost)."""
    from nonolab.design.power import lmm_tests, metric_covariate

    rng = np.random.default_rng(seed)
    model, rej, t = RatingModel(), 0, time.perf_counter()
    q = d.queues
    n_i, m = q.shape
    pc, qc = np.repeat(np.arange(n_i), m), q.ravel()
    x, xl = metric_covariate(d.metric), d.latent_z
    s = model.metric_strength
    rel = np.array([model.participant_sd, model.difficulty_sd * math.sqrt(1 - s * s)])
    rel = rel / model.residual_sd
    for done in range(0, sims, chunk):
        n = min(chunk, sims - done)
        e = rng.standard_normal(n_i)  # one draw of expertise and missing ratings per chunk
        e = (e - e.mean()) / e.std()
        keep = rng.random(len(qc)) >= d.missing
        dd = model.difficulty_sd * (s * xl + math.sqrt(1 - s * s) * rng.standard_normal((n, K)))
        latent = (
            model.rating_mean + dd[:, qc] + model.expertise_effect * e[pc]
            + model.interaction * xl[qc] * e[pc]
            + rng.normal(0.0, model.participant_sd, (n, n_i))[:, pc]
            + rng.normal(0.0, model.residual_sd, (n, len(qc)))
        )  # fmt: skip
        Y = np.clip(np.floor(latent + 0.5), 1, 5)[:, keep]
        X = np.column_stack([np.ones(len(qc)), x[qc], e[pc], x[qc] * e[pc]])[keep]
        r = lmm_tests(Y, X, [pc[keep], qc[keep]], 3, start=rel)
        rej += int((np.nan_to_num(r.p, nan=1.0) < 0.05).sum())
    return rej / sims, time.perf_counter() - t


def engine_curve(participants: list[int], sims: int, seed: int) -> dict[str, Any]:
    rows, total, base_total = [], 0.0, 0.0
    metric = _metric(seed)
    for n in participants:
        d = Design(balanced_schedule(K, M, n, seed).sessions, metric, 0.1)
        t = time.perf_counter()
        r = lmm_power("moderation_lmm", d, sims, seed, RatingModel())
        dt = time.perf_counter() - t
        total += dt
        base_power, base_dt = shared_draw_power(d, sims, seed)
        base_total += base_dt
        rows.append(
            {
                **r.row(),
                "seconds": dt,
                "shared_draw_power": base_power,
                "shared_draw_seconds": base_dt,
            }
        )
        print(
            f"engine N={n}: power {r.power:.3f} in {dt:.1f} s (independent replications); "
            f"{base_power:.3f} in {base_dt:.1f} s (one covariate draw per 100)"
        )
    return {"rows": rows, "seconds": total, "shared_draw_seconds": base_total}


def versus_r(participants: list[int], sims: int, r_sims: int, seed: int) -> dict[str, Any]:
    model = RatingModel(scale="gaussian")
    use_r = r_sims > 0 and rcheck.r_available(("lme4", "lmerTest"))
    rows = []
    for n in participants:
        X, codes, frame = fixed_design(n, seed)
        Y = gaussian_responses(X, codes, model, sims, seed + n)
        start = np.array([model.participant_sd, model.difficulty_sd * 0.8]) / model.residual_sd
        t = time.perf_counter()
        _, p, failed = lmm_test_batch(Y, X, codes, 3, start=start)
        dt = time.perf_counter() - t
        rej = int((np.nan_to_num(p, nan=1.0) < 0.05).sum())
        row: dict[str, Any] = {
            "n_participants": n,
            "sims": sims,
            "nonolab_seconds": dt,
            "nonolab_power": rej / sims,
            "nonolab_mc_se": math.sqrt(rej / sims * (1 - rej / sims) / sims),
            "nonolab_undefined": int(np.isnan(p).sum()),
        }
        if use_r:
            with tempfile.TemporaryDirectory() as tmp:
                frame.to_csv(Path(tmp) / "design.csv", index=False)
                np.savetxt(Path(tmp) / "responses.csv", Y[:r_sims], delimiter=",", fmt="%.17g")
                out = rcheck.run_r(R_CODE, tmp, timeout_s=7200).split()
            r_elapsed = float(out[0])
            r_p = np.array([float(v) for v in out[1:]])
            per_fit = r_elapsed / r_sims
            r_pow = float((r_p < 0.05).mean())
            se_r = math.sqrt(r_pow * (1 - r_pow) / r_sims)
            both = np.isfinite(p[:r_sims])
            row |= {
                "r_sims": r_sims,
                "r_seconds_measured": r_elapsed,
                "r_seconds_per_fit": per_fit,
                "r_seconds_extrapolated": per_fit * sims,
                "ratio": per_fit * sims / dt,
                "r_power": r_pow,
                "r_mc_se": se_r,
                "power_z": (row["nonolab_power"] - r_pow) / math.hypot(row["nonolab_mc_se"], se_r)
                if se_r > 0 else 0.0,
                "same_responses_max_abs_p_diff": float(np.max(np.abs(p[:r_sims][both] - r_p[both]))),
                "same_responses_decisions_differ": int(
                    ((p[:r_sims][both] < 0.05) != (r_p[both] < 0.05)).sum()
                ),
            }  # fmt: skip
            print(
                f"N={n}: nonolab {dt:.2f} s for {sims}, R {per_fit * 1000:.0f} ms/fit "
                f"(x{sims} = {per_fit * sims:.0f} s): ratio {row['ratio']:.0f}; power "
                f"{row['nonolab_power']:.3f} vs {r_pow:.3f}"
            )
        rows.append(row)
    out: dict[str, Any] = {"rows": rows, "r": use_r}
    out["nonolab_seconds"] = sum(r["nonolab_seconds"] for r in rows)
    if use_r:
        out["r_seconds_extrapolated"] = sum(r["r_seconds_extrapolated"] for r in rows)
        out["ratio"] = out["r_seconds_extrapolated"] / out["nonolab_seconds"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--participants", default="30,60,90,120,150")
    ap.add_argument("--sims", type=int, default=1000)
    ap.add_argument("--r-sims", type=int, default=100)
    ap.add_argument("--maximal-sims", type=int, default=1000)
    ap.add_argument("--maximal-participants", type=int, default=60)
    ap.add_argument("--calibration-studies", type=int, default=300)
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--out", default=str(REPO / "results" / "bench" / "design.json"))
    ap.add_argument("--engine-only", action="store_true", help="only part 1 (engine curve)")
    args = ap.parse_args(argv)
    ns = [int(x) for x in args.participants.split(",")]
    record: dict[str, Any] = {"design": {"puzzles": K, "per_session": M, "participants": ns}}
    with threadpool_limits(1):
        record["engine_curve"] = engine_curve(ns, args.sims, args.seed)
        print(f"engine curve: {record['engine_curve']['seconds']:.1f} s (target <= 60 s)")
        if args.engine_only:
            write_json(record, args.out)
            print(f"wrote {args.out}")
            return 0
        record["versus_r"] = versus_r(ns, args.sims, args.r_sims, args.seed)
        if args.maximal_sims:
            metric = _metric(args.seed)
            n = args.maximal_participants
            d = Design(balanced_schedule(K, M, n, args.seed).sessions, metric, 0.1)
            t = time.perf_counter()
            r = maximal_power(d, args.maximal_sims, args.seed, RatingModel())
            dt = time.perf_counter() - t
            record["maximal"] = {**r.row(), "seconds": dt}
            print(f"maximal: power {r.power:.3f}, {args.maximal_sims} sims in {dt:.1f} s "
                  "(target <= 300 s)")  # fmt: skip
    if args.calibration_studies:
        from nonolab.design.calibration import agreement, calibrate

        cal = []
        for k, n in ((8, 30), (12, 24)):
            t = time.perf_counter()
            tab = calibrate(k, n, 0.6, args.calibration_studies, args.seed + k, 10)
            print(tab.to_string(index=False))
            cal.append({"table": tab.to_dict("records"), "agree": agreement(tab),
                        "seconds": time.perf_counter() - t})  # fmt: skip
        record["calibration"] = cal
    write_json(record, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
