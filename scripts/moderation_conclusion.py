"""Snakemake entry point of rule `moderation_conclusion`: the metric x expertise interaction
from the published table to the corrected ordinal model, one row per metric x step."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.stats.conclusion import conclusion_sentences, moderation_conclusion
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("moderation_conclusion")
inp, p = snakemake.input, snakemake.params


def read(key: str) -> pd.DataFrame | None:
    """The input table ``key``, or None when the workflow or preset has none."""
    if key not in inp.keys():
        log.info("no %s table (preset %s): its rows are left out", key, p.preset)
        return None
    return read_csv(inp[key])


table, summary = moderation_conclusion(
    read("raw"),
    read("ordinal"),
    read("maximal"),
    read("published"),
    metrics=p.metrics,
    moderator=p.moderator,
    alpha=p.alpha,
)
sentences = conclusion_sentences(table, p.metrics, p.alpha)
log.info("%s\n%s\n%s", table.to_string(), summary, sentences)
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={"preset": p.preset, "alpha": p.alpha, "summary": summary, "sentences": sentences},
    formats=("csv", "md", "tex"),
    caption="Metric x expertise interaction on final difficulty, step by step: published, "
    "reproduced, corrected alignment, maximal random effects, ordinal model. significant_at_05: "
    f"BH-adjusted p over the metrics of a step < {p.alpha:g}. {sentences}",
)
