"""Snakemake entry point of rule `threshold_sensitivity`: pause counts recomputed from the
within-puzzle gaps at each threshold; pause summaries, Spearman correlations and pauses ~ metric
LMMs (nonolab.stats.sensitivity)."""

from nonolab.core.threads import limit_blas_threads

limit_blas_threads(snakemake.threads)

import json  # noqa: E402
import logging  # noqa: E402

import pandas as pd  # noqa: E402

from nonolab.report.provenance import write_table  # noqa: E402
from nonolab.stats.expertise import expertise_composite, participant_items  # noqa: E402
from nonolab.stats.mixed_models import study_covariates  # noqa: E402
from nonolab.stats.sensitivity import (  # noqa: E402
    check_pause_counts,
    sensitivity_thresholds,
    threshold_sensitivity,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("threshold_sensitivity")
p, inp = snakemake.params, snakemake.input

attempts = pd.read_csv(inp.attempts, dtype={"puzzle_id": str})
gaps = pd.read_csv(inp.gaps, dtype={"puzzle_id": str})
strengths = pd.read_csv(inp.strengths, dtype={"puzzle_id": str})
metrics = pd.read_csv(inp.metrics, dtype={"puzzle_id": str})
with open(inp.threshold, encoding="utf-8") as fh:
    record = json.load(fh)
check_pause_counts(attempts, gaps, record["threshold_used_s"])
thresholds = sensitivity_thresholds(p.thresholds, record)
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **p.covariates)
comp = expertise_composite(participant_items(attempts))
table = threshold_sensitivity(
    attempts, gaps, covs, thresholds, expertise=comp, strengths=strengths,
    rating_col=p.rating, metrics=p.covariates["metrics"], log=log.info,
)  # fmt: skip
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={"thresholds_s": thresholds, "rating": p.rating, **p.covariates},
    formats=("csv", "md", "tex"),
    caption="Pause-threshold sensitivity: pause counts recomputed from the within-puzzle gaps "
    "at each threshold (s); pause summaries over attempts, Spearman rho of pause counts with the "
    "rating, expertise and BT strength, and pauses ~ metric crossed LMMs.",
)
log.info("wrote %s (%d rows)", snakemake.output.table, len(table))
