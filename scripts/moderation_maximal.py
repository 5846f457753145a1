"""Snakemake entry point of rule `moderation_maximal`: final difficulty ~ metric x expertise with
the maximal random-effects structure, reduced by a fixed rule when singular; Satterthwaite and
Kenward-Roger t tests, likelihood-ratio test (and its parametric bootstrap) of the interaction,
BH-FDR over the metrics; both alignments, the published (raw) scale and nonolab's transform."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.maximal_models import maximal_by_transform, moderation_maximal
from nonolab.stats.mixed_models import with_expertise
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("moderation_maximal")
p, cov, out = snakemake.params, snakemake.params.covariates, snakemake.output

attempts = with_expertise(read_table(snakemake.input.attempts, "features"))
metrics = read_table(snakemake.input.metrics, "sat_metrics")
kept, steps = maximal_by_transform(
    moderation_maximal,
    attempts,
    metrics,
    snakemake.input.get("pool_statistics"),
    cov,
    p.transforms,
    n_boot=p.n_boot,
    seed=p.seed,
    log=log.info,
    outcome=p.outcome,
    metrics=cov["metrics"],
)
kw = {"inputs": list(snakemake.input), "formats": ("csv", "md", "tex"), "seeds": {"lrt": p.seed}}
kw["params"] = {**cov, "transforms": list(p.transforms), "outcome": p.outcome, "n_boot": p.n_boot}
rule_text = "maximal, else uncorrelated, else by-participant slope only, else intercepts"
write_table(
    kept,
    out.table,
    **kw,
    caption=f"{p.outcome} ~ metric x expertise, interaction, metric {p.transforms[0]}; random "
    f"effects: first non-singular of {rule_text}. p_fdr: BH of p_kr over the metrics.",
)
write_table(
    steps,
    out.steps,
    **kw,
    caption=f"Every random-effects structure of the rule (kept: the one used), metric as "
    f"{', '.join(p.transforms)}.",
)
