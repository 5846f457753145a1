"""Snakemake entry point of rule `codebook_examples`: the codebook's codes with one example
answer each (the paper's Table 4; nonolab.study.codebook.codebook_examples)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.stats.themes import load_coded_responses
from nonolab.study.codebook import codebook_examples

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
inp, p = snakemake.input, snakemake.params

coded = load_coded_responses(inp.coded)
ok = coded["codes_str"].notna() & coded["text"].notna()
responses = [
    (rid, str(codes).split("|"), text)
    for rid, codes, text in coded.loc[ok, ["response_id", "codes_str", "text"]].itertuples(
        index=False
    )
]
table = pd.DataFrame(codebook_examples(inp.codebook, responses, p.overrides, p.max_chars))
logging.info("%s", table.to_string())
write_table(
    table,
    snakemake.output.table,
    inputs=list(inp),
    params={"overrides": dict(p.overrides), "max_chars": p.max_chars},
    formats=("csv", "md", "tex"),
    caption="Codebook: difficulty themes and strategies with one example answer each (a "
    "single-code answer first, then the shortest; hand-chosen where the preset says).",
)
