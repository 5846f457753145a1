"""Snakemake entry point of rule `behaviour_maximal`: behaviour ~ SAT metric with by-participant
random slopes for the metric, reduced by a fixed rule when singular; Satterthwaite and
Kenward-Roger t tests and the likelihood-ratio test of the metric, BH-FDR over the behaviour x
metric family; both alignments, the published (raw) scale and nonolab's transform."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.maximal_models import behaviour_maximal, maximal_by_transform
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_maximal")
p, cov, out = snakemake.params, snakemake.params.covariates, snakemake.output

attempts = read_table(snakemake.input.attempts, "features")
metrics = read_table(snakemake.input.metrics, "sat_metrics")
kept, steps = maximal_by_transform(
    behaviour_maximal,
    attempts,
    metrics,
    snakemake.input.get("pool_statistics"),
    cov,
    p.transforms,
    n_boot=p.n_boot,
    seed=p.seed,
    log=log.info,
    behaviours=p.behaviours,
    metrics=cov["metrics"],
)
kw = {"inputs": list(snakemake.input), "formats": ("csv", "md", "tex"), "seeds": {"lrt": p.seed}}
kw["params"] = {**cov, "transforms": list(p.transforms), "n_boot": p.n_boot}
write_table(
    kept,
    out.table,
    **kw,
    caption=f"Behaviour ~ metric ({p.transforms[0]}), metric slope; random effects: first "
    "non-singular of maximal, uncorrelated, intercepts. p_fdr: BH of p_kr over all rows.",
)
write_table(
    steps,
    out.steps,
    **kw,
    caption=f"Every random-effects structure of the rule (kept: the one used), metric as "
    f"{', '.join(p.transforms)}.",
)
