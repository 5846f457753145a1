"""Snakemake script: computed solver statistics vs the study's published solver_statistics.txt."""

import logging

from nonolab.core.tables import write_table
from nonolab.measure.tables import compare_published, parse_solver_statistics
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("sat_published_check")

metrics = read_table(snakemake.input.metrics, "sat_metrics")
published = parse_solver_statistics(snakemake.input.published)
check = compare_published(metrics, published, encoding="block_start")
write_table(
    check,
    snakemake.output.check,
    inputs=[snakemake.input.metrics, snakemake.input.published],
    params={"encoding": "block_start"},
    formats=("csv", "md"),
    caption="Computed vs published solver statistics (block-start encoding).",
)
n_bad = int((~check["equal"]).sum())
log.info("%d of %d published values reproduced exactly", len(check) - n_bad, len(check))
for r in check[~check["equal"]].itertuples(index=False):
    log.warning(
        "differs: puzzle %s %s %s published %s computed %s",
        r.puzzle_id,
        r.solver,
        r.quantity,
        r.published,
        r.computed,
    )
