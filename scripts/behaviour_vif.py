"""Snakemake entry point of rule `behaviour_vif`: variance inflation factors of the behaviours
used as regressors (pooled over the attempts complete in them)."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.behaviour_regressions import OLS_PREDICTORS, predictor_vif
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_vif")

attempts = read_table(snakemake.input.attempts, "features")
table = predictor_vif(attempts, OLS_PREDICTORS)
log.info("%s", table.to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={"predictors": list(OLS_PREDICTORS)},
    formats=("csv", "md", "tex"),
    caption="Variance inflation factors of the behaviours (with a constant in the design) over "
    f"the {int(table['n'].iloc[0])} attempts complete in all of them.",
)
