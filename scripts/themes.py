"""Snakemake entry point of rule `themes`: theme tests vs final difficulty, prevalence tables,
convergent checks against behaviour (nonolab.stats.themes.theme_tables), on the coded responses
of the participants in the ingest's participants table, each response once
(nonolab.stats.themes.select_coded_responses; what is left out is logged)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.stats.themes import load_coded_responses, select_coded_responses, theme_tables
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("themes")
p = snakemake.params

coded = load_coded_responses(snakemake.input.coded)
participants = read_table(snakemake.input.participants, "participants")
coded, dropped = select_coded_responses(coded, set(participants["participant_id"]))
if len(dropped):
    log.info("coded responses left out (%d):\n%s", len(dropped), dropped.to_string(index=False))
attempts = read_table(snakemake.input.attempts, "features")
events = pd.read_parquet(snakemake.input.events)
tables, checks, n = theme_tables(coded, attempts, p.convergent, events)
log.info(
    "coded export %s: %d responses; %d rating reasons with a final difficulty and >= 1 theme "
    "code\n%s",
    p.coded_path,
    len(coded),
    n,
    tables["convergent"].to_string(),
)
captions = {
    "tests": f"Difficulty themes vs final difficulty (n = {n} rating reasons): Mann-Whitney U of "
    "the theme-present group, rank-biserial r = 1 - 2U/(n1 n2) (positive: rated easier when "
    "present), Benjamini-Hochberg FDR.",
    "theme_prevalence": "Prevalence of difficulty themes among coded responses.",
    "strategy_prevalence": "Prevalence of strategies among coded strategy answers.",
    "convergent": "Convergent validity: behaviour of attempts whose rating reason names the theme "
    "vs not (Mann-Whitney U, rank-biserial r = 1 - 2U/(n1 n2): positive = less of the behaviour "
    "when named); p_fdr: Benjamini-Hochberg over the configured theme-behaviour pairs.",
    "behaviour": "Every difficulty theme x every behaviour (solve time, pauses, hints, cell "
    "errors, incorrect submissions), within participants: each behaviour as its percentile "
    "within the puzzle; per participant with responses both with and without the theme, mean "
    "with minus mean without (mean_difference, 0-1); Wilcoxon signed-rank over participants, "
    "matched-pairs rank-biserial r (positive = more when named); p_fdr: Benjamini-Hochberg over "
    "all themes x behaviours.",
}
params = {"coded_responses": p.coded_path, "n_responses": n}
for name, table in tables.items():
    write_table(
        table,
        snakemake.output[name],
        inputs=list(snakemake.input),
        params=params | ({"checks": checks} if name == "convergent" else {}),
        formats=("csv", "md", "tex"),
        caption=captions[name],
    )
