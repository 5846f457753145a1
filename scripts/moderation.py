"""Snakemake entry point of rule `moderation`: final difficulty ~ metric x expertise with crossed
random intercepts, simple slopes at expertise -1/0/+1 SD (METHODS 9), both alignments."""

import logging  # noqa: E402

import pandas as pd  # noqa: E402

from nonolab.report.provenance import write_table  # noqa: E402
from nonolab.stats.mixed_models import (  # noqa: E402
    moderation_models,
    study_covariates,
    with_expertise,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("moderation")
p = snakemake.params

attempts = with_expertise(pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str}))
metrics = pd.read_csv(snakemake.input.metrics, dtype={"puzzle_id": str})
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
mods, slopes = [], []
for alignment, cov in covs.items():
    m, s = moderation_models(attempts, cov, outcome=p.outcome, metrics=p.metrics, at=p.at_sd)
    m.insert(0, "alignment", alignment)
    s.insert(0, "alignment", alignment)
    mods.append(m)
    slopes.append(s)
    log.info("alignment %s:\n%s\n%s", alignment, m.to_string(), s.to_string())
mod = pd.concat(mods, ignore_index=True)
slo = pd.concat(slopes, ignore_index=True)
for _, r in mod[mod["warnings"] != ""].drop_duplicates(["alignment", "metric"]).iterrows():
    log.warning("%s %s: %s", r["alignment"], r["metric"], r["warnings"])
params = {
    "solver": p.solver,
    "encoding": p.encoding,
    "metrics": list(p.metrics),
    "outcome": p.outcome,
    "metric_transform": p.metric_transform,
    "at_sd": list(p.at_sd),
}
write_table(
    mod,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params=params,
    formats=("csv", "md", "tex"),
    caption=f"{p.outcome} ~ metric x expertise (composite, SD units) with crossed random "
    "intercepts (REML); variance components as rows var_*. Wald p; df_satt: Satterthwaite df.",
)
write_table(
    slo,
    snakemake.output.slopes,
    inputs=list(snakemake.input),
    params=params,
    formats=("csv", "md", "tex"),
    caption=f"Simple slopes of each metric on {p.outcome} at expertise "
    f"{', '.join(f'{v:+g}' for v in p.at_sd)} SD (Wald 95% CI).",
)
log.info("wrote %s and %s", snakemake.output.table, snakemake.output.slopes)
