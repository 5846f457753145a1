"""Snakemake entry point of rule `threshold_sensitivity`: pause counts recomputed from the
within-puzzle gaps at each configured threshold; pause summaries and pauses ~ metric LMMs."""

import json  # noqa: E402
import logging  # noqa: E402

import pandas as pd  # noqa: E402

from nonolab.report.provenance import write_table  # noqa: E402
from nonolab.stats.mixed_models import (  # noqa: E402
    pause_counts_at,
    study_covariates,
    threshold_sensitivity,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("threshold_sensitivity")
p = snakemake.params

attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
gaps = pd.read_csv(snakemake.input.gaps, dtype={"puzzle_id": str})
metrics = pd.read_csv(snakemake.input.metrics, dtype={"puzzle_id": str})
with open(snakemake.input.threshold, encoding="utf-8") as fh:
    used = json.load(fh)["threshold_used_s"]
# Consistency: the gaps at the threshold used by the features stage give its pause counts.
recount = pause_counts_at(gaps, attempts, used)
bad = attempts.loc[recount != attempts["pause_count"], ["participant_id", "order"]]
if len(bad):
    raise ValueError(
        f"pause counts recomputed from {snakemake.input.gaps} at {used} s differ from "
        f"{snakemake.input.attempts} for {len(bad)} attempts, e.g. {bad.head(3).to_dict('records')}"
    )
log.info("recomputed pause counts at the used threshold %g s match the attempts table", used)
pool = snakemake.input.get("pool_statistics")
covs, _mapping = study_covariates(
    attempts,
    metrics,
    pd.read_csv(pool) if pool else None,
    solver=p.solver,
    encoding=p.encoding,
    metrics_cols=p.metrics,
    transform=p.metric_transform,
)
tables = []
for alignment, cov in covs.items():
    t = threshold_sensitivity(attempts, gaps, cov, p.thresholds, metrics=p.metrics, log=log.info)
    t.insert(0, "alignment", alignment)
    tables.append(t)
table = pd.concat(tables, ignore_index=True)
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={
        "thresholds_s": list(p.thresholds),
        "solver": p.solver,
        "encoding": p.encoding,
        "metrics": list(p.metrics),
        "metric_transform": p.metric_transform,
    },
    formats=("csv", "md", "tex"),
    caption="Pause-threshold sensitivity: pause counts recomputed from the within-puzzle gaps "
    "at each threshold (s); pause summaries over attempts and pauses ~ metric crossed LMMs.",
)
log.info("wrote %s (%d rows)", snakemake.output.table, len(table))
