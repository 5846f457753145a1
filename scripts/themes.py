"""Snakemake entry point of rule `themes`: theme tests vs final difficulty, prevalence tables,
convergent checks against behaviour."""

import logging

import pandas as pd

from nonolab.report.provenance import write_table
from nonolab.stats.themes import (
    code_tests,
    coded_subset,
    convergent_checks,
    load_coded_responses,
    prevalence,
    strategy_codes,
    theme_codes,
    theme_test_responses,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("themes")
p = snakemake.params

coded = load_coded_responses(snakemake.input.coded)
attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
themes, strategies = theme_codes(coded), strategy_codes(coded)
resp = theme_test_responses(coded)
log.info(
    "coded export %s: %d responses; %d rating reasons with a final difficulty and >= 1 theme code",
    p.coded_path,
    len(coded),
    len(resp),
)
inputs = list(snakemake.input)
params = {"coded_responses": p.coded_path, "n_responses": len(resp)}
tests = code_tests(resp, themes)
write_table(
    tests,
    snakemake.output.tests,
    inputs=inputs,
    params=params,
    formats=("csv", "md", "tex"),
    caption=f"Difficulty themes vs final difficulty (n = {len(resp)} rating reasons): "
    "Mann-Whitney U of the theme-present group, rank-biserial r = 1 - 2U/(n1 n2) "
    "(positive: rated easier when present), Benjamini-Hochberg FDR.",
)
prev_t = pd.concat(
    [
        prevalence(resp, themes, "rating_reason"),
        prevalence(
            coded_subset(coded, ["rating_reason", "comments"], themes), themes, "all_theme_coded"
        ),
    ],
    ignore_index=True,
)
write_table(
    prev_t,
    snakemake.output.theme_prevalence,
    inputs=inputs,
    params=params,
    formats=("csv", "md", "tex"),
    caption="Prevalence of difficulty themes among coded responses.",
)
prev_s = prevalence(coded_subset(coded, ["strategy"], strategies), strategies, "strategy")
write_table(
    prev_s,
    snakemake.output.strategy_prevalence,
    inputs=inputs,
    params=params,
    formats=("csv", "md", "tex"),
    caption="Prevalence of strategies among coded strategy answers.",
)
checks = {k: list(v) for k, v in p.convergent.items() if k in themes}
conv = convergent_checks(resp, attempts, checks)
log.info("%s", conv.to_string())
write_table(
    conv,
    snakemake.output.convergent,
    inputs=inputs,
    params=params | {"checks": checks},
    formats=("csv", "md", "tex"),
    caption="Convergent checks: behaviour of attempts whose rating reason has the code vs not.",
)
