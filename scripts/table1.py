"""Snakemake entry point of rule `table1`: Spearman of BT strength and mean rating with SAT
metrics, per solver x encoding, under the corrected (hash) and, when the preset names the
published pool-ordered statistics table, the published (row-position) alignment."""

import logging

import pandas as pd

from nonolab.report.provenance import write_table
from nonolab.stats.correlations import (
    aligned_metrics,
    erratum_table,
    published_alignment,
    raw_mean_rating,
    table1,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("table1")
p = snakemake.params

strengths = pd.read_csv(snakemake.input.strengths, dtype={"puzzle_id": str})
attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
metrics = pd.read_csv(snakemake.input.metrics, dtype={"puzzle_id": str})
served = attempts[["puzzle_id", "puzzle_hash"]].drop_duplicates().reset_index(drop=True)
raw = raw_mean_rating(attempts, rating_col=p.rating)

aligned = {}
pool = snakemake.input.get("pool_statistics")
if pool:
    sizes = metrics[metrics["encoding"] == p.main_encoding]
    mapping = published_alignment(pd.read_csv(pool), served, sizes)
    for k in sorted(mapping, key=lambda s: (len(s), s)):
        own = served.set_index("puzzle_id").loc[k, "puzzle_hash"]
        note = "own" if mapping[k] == own else "another puzzle's"
        log.info(
            "published alignment: served id %s gets %s statistics (%s)", k, note, mapping[k][:12]
        )
    aligned["published"] = aligned_metrics(metrics, served, mapping)
else:
    log.info("no published pool-ordered statistics table in the preset: corrected alignment only")
aligned["corrected"] = aligned_metrics(metrics, served)

t1 = table1(
    strengths,
    raw,
    aligned,
    exact_max_n=p.exact_max_n,
    n_perm=p.n_perm,
    seed=p.seed,
)
log.info("%s", t1.to_string())
n = int(t1["n"].max()) if len(t1) else 0
note = (
    f"Only {n} puzzles: Spearman p-values are exact-permutation or asymptotic on n = {n}; "
    "treat every correlation as descriptive."
)
params = {"rating": p.rating, "alignments": list(aligned), "exact_max_n": p.exact_max_n}
write_table(
    t1,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params=params,
    seeds={"permutation": p.seed},
    formats=("csv", "md", "tex"),
    caption="Table 1. Spearman correlations of Bradley-Terry strength (bt) and raw mean final "
    "rating (raw) with SAT metrics. " + note,
)
err = erratum_table(t1, p.main_solver, p.main_encoding)
write_table(
    err,
    snakemake.output.erratum,
    inputs=list(snakemake.input),
    params=params | {"solver": p.main_solver, "encoding": p.main_encoding},
    formats=("csv", "md", "tex"),
    caption=f"Erratum: published (row-position) vs corrected (hash) alignment, {p.main_solver} "
    f"x {p.main_encoding}. " + note,
)
points = pd.concat([am.assign(alignment=a) for a, am in aligned.items()], ignore_index=True)
points = points.merge(strengths[["puzzle_id", "strength", "rank"]], on="puzzle_id", how="left")
points["raw_mean_rating"] = points["puzzle_id"].map(raw)
write_table(points, snakemake.output.points, inputs=list(snakemake.input), params=params)
