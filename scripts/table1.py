"""Snakemake entry point of rule `table1`: Spearman of BT strength and mean rating with SAT
metrics, per solver x encoding, under the corrected (hash) and, when the preset names the
published pool-ordered statistics table, the published (row-position) alignment."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.correlations import (
    erratum_table,
    raw_mean_rating,
    study_alignments,
    table1,
    table1_captions,
    table1_points,
)
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
p, inp, out = snakemake.params, snakemake.input, snakemake.output

strengths = read_table(inp.strengths, "bt_strengths")
attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
raw = raw_mean_rating(attempts, rating_col=p.rating)
aligned = study_alignments(
    attempts, metrics, inp.get("pool_statistics"), p.main_encoding, logging.info
)
t1 = table1(strengths, raw, aligned, exact_max_n=p.exact_max_n, n_perm=p.n_perm, seed=p.seed)
err = erratum_table(t1, p.main_solver, p.main_encoding)
logging.info("%s", t1.to_string())
caption, erratum_caption = table1_captions(t1, p.main_solver, p.main_encoding)
params = {"rating": p.rating, "alignments": list(aligned), "exact_max_n": p.exact_max_n}
kw = {"inputs": list(inp), "formats": ("csv", "md", "tex")}
write_table(t1, out.table, params=params, seeds={"permutation": p.seed}, caption=caption, **kw)
main = {"solver": p.main_solver, "encoding": p.main_encoding}
write_table(err, out.erratum, params=params | main, caption=erratum_caption, **kw)
write_table(table1_points(aligned, strengths, raw), out.points, inputs=list(inp), params=params)
