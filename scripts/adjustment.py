"""Snakemake entry point of rule `adjustment`: order and expertise + order OLS adjustment of the
final difficulty, adjusted per-puzzle difficulty, and its Spearman correlation with SAT metrics,
per rating sample (published: solved attempts; corrected: all rated) and SAT alignment."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.adjustment import study_adjustment
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
p, inp, out = snakemake.params, snakemake.input, snakemake.output

attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
tables = study_adjustment(
    attempts, metrics, inp.get("pool_statistics"), **p.adjustment, log=logging.info
)
SAMPLE = "sample published = rated attempts that were solved (the published tables), corrected "
SAMPLE += "= every rated attempt (as Table 1)"
n = attempts["puzzle_hash"].nunique()
CAPTIONS = (
    f"OLS of final difficulty (1-5) on presentation order, and on expertise and order; {SAMPLE}.",
    f"Raw and expertise + order adjusted mean final difficulty per puzzle with the SAT metrics "
    f"({p.adjustment['solver']}, {p.adjustment['encoding']}) per alignment; {SAMPLE}.",
    f"Spearman rho, asymptotic and permutation p of raw and adjusted per-puzzle difficulty "
    f"with each SAT metric per alignment; {SAMPLE}. Only {n} puzzles: descriptive.",
)
paths = (out.models, out.difficulty, out.vs_sat)
for table, path, caption in zip(tables, paths, CAPTIONS, strict=True):
    logging.info("%s\n%s", path, table.to_string())
    write_table(
        table,
        path,
        inputs=list(inp),
        params=p.adjustment,
        seeds={"permutation": p.adjustment["seed"]},
        formats=("csv", "md", "tex"),
        caption=caption,
    )
