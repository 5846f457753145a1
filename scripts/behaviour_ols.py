"""Snakemake entry point of rule `behaviour_ols`: the published OLS analyses of behaviour (final
difficulty on behaviour pooled and per puzzle, the behaviours' VIFs, SAT metric on behaviour)."""

import logging
from functools import partial

from nonolab.core.tables import write_table
from nonolab.stats import behaviour_regressions as br
from nonolab.stats.mixed_models import across_alignments, study_covariates
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_ols")
inp, out, cov = snakemake.input, snakemake.output, snakemake.params.covariates
missing = list(snakemake.params.ratings_missing)

attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
covs = study_covariates(attempts, metrics, inp.get("pool_statistics"), **cov, log=log.info)
pooled = br.pooled_regressions(attempts, ratings_missing=missing)
n = pooled.groupby("specification")["n"].first().to_dict()
per_puzzle = br.per_puzzle_regressions(attempts)
vif = br.predictor_vif(attempts, br.OLS_PREDICTORS)
on_sat = across_alignments(covs, partial(br.behaviour_on_sat, attempts, metrics=cov["metrics"]))
k = attempts["puzzle_hash"].nunique()
tables = {
    "pooled": (pooled, "Final difficulty ~ behaviour, pooled OLS over the rated attempts. paper: "
               f"pauses, time to solve (s), errors, hints (N = {n['paper']}); published_file: "
               f"with the pause rate per minute as well (N = {n['published_file']}"
               + (f"; final ratings of {', '.join(missing)} missing as in that file" if missing
                  else "") + "). p_fdr: BH over one specification's behaviours."),
    "per_puzzle": (per_puzzle, "Final difficulty ~ pauses + time to solve (s) + errors + hints, "
                   f"OLS per puzzle (fewer than {br.MIN_OBS} complete attempts: skipped; "
                   f"underpowered: N < {br.UNDERPOWERED_N}); Breusch-Pagan p, Shapiro-Wilk p, "
                   f"largest Cook's distance per model; p_fdr: BH over all {len(per_puzzle)} rows."),
    "vif": (vif, "Variance inflation factors of the behaviours (constant in the design) over "
            f"the {int(vif['n'].iloc[0]) if len(vif) else 0} attempts complete in all of them."),
    "on_sat": (on_sat, f"SAT metric ({cov['solver']}, {cov['encoding']}; raw count) ~ pauses + "
               "pause rate per minute + time to solve (s) + errors + hints, OLS over the "
               f"attempts: only {k} distinct metric values, so the OLS p-values (as published) "
               "treat repeated puzzle values as independent; se_cluster/p_cluster: cluster-robust "
               f"by puzzle (CR1, t on {k - 1} df), the inference the errata judge by. p_fdr, "
               "p_cluster_fdr: BH over one model's behaviours. alignment: corrected = by puzzle "
               "hash; published = row position."),
}  # fmt: skip
params = {**cov, "ratings_missing": missing, "min_obs": br.MIN_OBS}
for name, (table, caption) in tables.items():
    log.info("%s\n%s", name, table.to_string())
    kw = {"inputs": list(inp), "params": params, "formats": ("csv", "md", "tex")}
    write_table(table, out[name], caption=caption, **kw)
