"""Snakemake entry point of rule `behaviour_models`: behaviour ~ SAT metric crossed-random-effects
LMMs (METHODS 9) under the corrected and, when available, the published alignment."""

import logging  # noqa: E402

import pandas as pd  # noqa: E402

from nonolab.report.provenance import write_table  # noqa: E402
from nonolab.stats.mixed_models import BEHAVIOURS, behaviour_models, study_covariates  # noqa: E402

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_models")
p = snakemake.params

attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
metrics = pd.read_csv(snakemake.input.metrics, dtype={"puzzle_id": str})
pool = snakemake.input.get("pool_statistics")
covs, mapping = study_covariates(
    attempts,
    metrics,
    pd.read_csv(pool) if pool else None,
    solver=p.solver,
    encoding=p.encoding,
    metrics_cols=p.metrics,
    transform=p.metric_transform,
)
if mapping:
    log.info("published alignment (served id -> source hash): %s", mapping)
else:
    log.info("no published pool-ordered statistics table in the preset: corrected alignment only")
behaviours = {c: BEHAVIOURS.get(c, c) for c in p.behaviours}
tables = []
for alignment, cov in covs.items():
    log.info("alignment %s: covariates\n%s", alignment, cov.to_string())
    t = behaviour_models(
        attempts,
        cov,
        behaviours=behaviours,
        metrics=p.metrics,
        n_boot=p.n_boot,
        seed=p.seed,
        satterthwaite=p.satterthwaite,
        log=log.info,
    )
    t.insert(0, "alignment", alignment)
    tables.append(t)
table = pd.concat(tables, ignore_index=True)
for _, r in table[table["warnings"] != ""].iterrows():
    log.warning("%s %s ~ %s: %s", r["alignment"], r["behaviour"], r["metric"], r["warnings"])
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={
        "solver": p.solver,
        "encoding": p.encoding,
        "metrics": list(p.metrics),
        "behaviours": list(p.behaviours),
        "metric_transform": p.metric_transform,
        "n_boot": p.n_boot,
        "satterthwaite": p.satterthwaite,
    },
    seeds={"bootstrap": p.seed},
    formats=("csv", "md", "tex"),
    caption=f"Behaviour ~ SAT metric ({p.solver}, {p.encoding}; {p.metric_transform}) with "
    "crossed random intercepts for participant and puzzle (REML). p: Wald; p_fdr: BH over the "
    f"{len(behaviours) * len(p.metrics)} tests of an alignment; p_satt: Satterthwaite t; p_boot: "
    f"parametric bootstrap ({p.n_boot} draws). Only {attempts['puzzle_hash'].nunique()} puzzles.",
)
log.info("wrote %s (%d rows)", snakemake.output.table, len(table))
