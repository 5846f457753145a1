"""Snakemake entry point of rule `errata`: one row per published number that changes
(nonolab.stats.errata), from the workflow's tables and the preset's published files; an empty
table on studies without published files."""

import json
import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.stats import errata

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("errata")
inp, p = snakemake.input, snakemake.params

rows: list[dict] = []
pub = p.published
if not pub and p.themes_min_present is None:
    log.info("the preset (%s) names no published files: the errata table is empty", p.preset)
else:
    if "table1" in pub:
        erratum = pd.read_csv(inp.table1_erratum)
        rows += errata.table1_rows(erratum, pd.read_csv(inp.table1), alpha=p.alpha)
    if "pause_report" in pub:
        with open(inp.threshold, encoding="utf-8") as fh:
            record = json.load(fh)
        with open(inp.pause_report, encoding="utf-8") as fh:
            published_pauses = errata.parse_pause_report(fh.read())
        log.info("published pause numbers: %s", published_pauses)
        rows += errata.pause_rows(record, published_pauses)
    if "bt_strengths" in pub:
        strengths = pd.read_csv(inp.strengths, dtype={"puzzle_id": str})
        found = errata.bootstrap_rows(
            strengths, pd.read_csv(inp.bt_published, dtype={"puzzle_id": str})
        )
        if not found and "ci_low_published_semantics" not in strengths.columns:
            log.info(
                "bt_strengths.csv has no ci_low_published_semantics/ci_high_published_semantics "
                "columns: the bootstrap interval rows are skipped"
            )
        rows += found
    for m in ("decisions", "conflicts"):
        if f"behavioral_vs_{m}" in pub:
            on_sat = pd.read_csv(inp.behaviour_on_sat)
            published_ols = pd.read_csv(inp[f"behavioral_vs_{m}"])
            rows += errata.behaviour_on_sat_rows(on_sat, published_ols, m, alpha=p.alpha)
    if "moderation_behavioral" in pub:
        moderation = pd.read_csv(inp.behaviour_moderation)
        published_mod = pd.read_csv(inp.moderation_behavioral)
        rows += errata.behaviour_moderation_rows(moderation, published_mod, alpha=p.alpha)
    if p.themes_min_present is not None:
        themes = pd.read_csv(inp.themes)
        rows += errata.theme_fdr_rows(themes, p.themes_min_present, alpha=p.alpha)
table = errata.errata_table(rows)
log.info("%d errata rows\n%s", len(table), table.drop(columns=["cause", "evidence"]).to_string())
caption = (
    "Errata: published numbers that change (published value, nonolab's reproduction of the "
    "published method, corrected value), with cause, evidence and whether a conclusion changes."
    if len(table)
    else "Errata: none (the study has no published files to compare with)."
)
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={"preset": p.preset, "alpha": p.alpha, "themes_min_present": p.themes_min_present},
    formats=("csv", "md", "tex"),
    caption=caption,
)
