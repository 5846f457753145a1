"""Snakemake entry point of rule `errata`: one row per published number that changes
(nonolab.stats.errata), from the workflow's tables and the preset's published files; an empty
table on studies without published files."""

import logging

from nonolab.core.tables import write_table
from nonolab.stats.errata import (
    INFERENCE_RULE,
    errata_summary,
    errata_summary_text,
    study_errata,
)

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("errata")
inp, p = snakemake.input, snakemake.params

table = study_errata(
    dict(inp.items()),
    published=p.published,
    aligned=p.aligned,
    themes_min_present=p.themes_min_present,
    selections_published=p.selections_published,
    alpha=p.alpha,
    log=log.info,
)
if not (p.published or p.aligned or p.themes_min_present or p.selections_published):
    log.info("the preset (%s) names no published files: the errata table is empty", p.preset)
log.info("%d errata rows\n%s", len(table), table[["quantity", "change_category"]].to_string())
summary = errata_summary(table)
log.info("summary: %s", summary)
caption = (
    "Errata: published numbers that change (published value, nonolab's reproduction of the "
    "published method, corrected value), with change_category, cause_evidence, the verdict "
    f"columns, cause and evidence. {INFERENCE_RULE} {errata_summary_text(summary, p.alpha)}"
    if len(table)
    else "Errata: none (the study has no published files to compare with)."
)
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={
        "preset": p.preset,
        "alpha": p.alpha,
        "themes_min_present": p.themes_min_present,
        "summary": summary,
    },
    formats=("csv", "md", "tex"),
    caption=caption,
)
