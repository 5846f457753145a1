"""Snakemake entry point of rule `behaviour_pooled_ols`: final difficulty ~ behaviour, pooled OLS
over the rated attempts, in the paper's and the published file's specification."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.behaviour_regressions import pooled_regressions
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_pooled_ols")
missing = list(snakemake.params.ratings_missing)

attempts = read_table(snakemake.input.attempts, "features")
table = pooled_regressions(attempts, ratings_missing=missing)
log.info("%s", table.to_string())
n = table.groupby("specification")["n"].first().to_dict()
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={"ratings_missing": missing},
    formats=("csv", "md", "tex"),
    caption=f"Final difficulty ~ behaviour, pooled OLS over the rated attempts. paper: pauses, "
    f"time to solve (s), errors, hints (N = {n['paper']}); published_file: with the pause rate "
    f"per minute as well (N = {n['published_file']}"
    + (f"; final ratings of {', '.join(missing)} missing as in that file" if missing else "")
    + "). p_fdr: BH over the behaviours of one specification; the attempts of one participant "
    "or puzzle are treated as independent.",
)
