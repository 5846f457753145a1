"""Snakemake entry point of rule `behaviour_per_puzzle_ols`: final difficulty ~ behaviour, OLS per
puzzle with the published diagnostics and BH-FDR over all puzzle x behaviour rows."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.behaviour_regressions import MIN_OBS, UNDERPOWERED_N, per_puzzle_regressions
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("behaviour_per_puzzle_ols")

attempts = read_table(snakemake.input.attempts, "features")
table = per_puzzle_regressions(attempts)
log.info("%s", table.drop(columns="puzzle_hash").to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(snakemake.input),
    params={"min_obs": MIN_OBS, "underpowered_n": UNDERPOWERED_N},
    formats=("csv", "md", "tex"),
    caption="Final difficulty ~ pauses + time to solve (s) + errors + hints, OLS per puzzle "
    f"(puzzles with fewer than {MIN_OBS} complete attempts skipped; underpowered: N < "
    f"{UNDERPOWERED_N}). Breusch-Pagan p, Shapiro-Wilk p of the residuals and the largest "
    f"Cook's distance per model; p_fdr: BH over all {len(table)} rows.",
)
