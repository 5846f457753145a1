"""Snakemake entry point of rule `ranking`: Bradley-Terry fit, bootstrap intervals, LR test."""

import logging

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.stats.ranking import (
    bootstrap_log_strengths,
    lr_test,
    pairwise_comparisons,
    strengths_table,
)
from nonolab.study.schemas import read_table, write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("ranking")
p = snakemake.params

attempts = read_table(snakemake.input.attempts, "features")
hashes = dict(zip(attempts["puzzle_id"], attempts["puzzle_hash"], strict=False))
items = sorted(attempts["puzzle_id"].unique(), key=lambda s: (len(s), s))
comparisons = pairwise_comparisons(attempts, rating_col=p.rating)
log.info(
    "%d participant pairs from %d participants",
    int(comparisons["weight"].sum()),
    comparisons["participant_id"].nunique(),
)
test = lr_test(comparisons, items)
log.info("LR chi2 %.4f, df %d, p %.4g", test["chi2"], test["df"], test["p"])

progress = lambda i, n: log.info("bootstrap %d/%d", i, n)  # noqa: E731
boot = bootstrap_log_strengths(comparisons, items, p.n_boot, p.seed, progress=progress)
log.info("bootstrap: %d resamples fitted, %d unbounded (skipped)", len(boot.theta), boot.n_failed)
table = strengths_table(comparisons, items, boot, level=p.ci_level, hashes=hashes)
params = {"rating": p.rating, "n_boot": p.n_boot, "ci_level": p.ci_level, "n_failed": boot.n_failed}
write_checked_table(
    table,
    snakemake.output.strengths,
    "bt_strengths",
    inputs=list(snakemake.input),
    params=params,
    seeds={"bootstrap": p.seed},
    formats=("csv", "md", "tex"),
    caption="Bradley-Terry strengths of reported difficulty (geometric mean 1) with 95% "
    "participant-bootstrap intervals; rank 1 = rated hardest.",
)
write_table(comparisons, snakemake.output.comparisons, inputs=list(snakemake.input), params=params)
test["provenance"] = provenance(list(snakemake.input), params={"rating": p.rating})
write_json(test, snakemake.output.lr_test)
