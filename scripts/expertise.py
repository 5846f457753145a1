"""Snakemake entry point of rule `expertise`: composite, Spearman with outcomes, reliability and
the diagnostics tables (alpha and PCA, PC1 loadings, item correlations)."""

import logging

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.stats.expertise import expertise_tables
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("expertise")
out = snakemake.output

tables = expertise_tables(read_table(snakemake.input.attempts, "features"))
CAPTIONS = {
    "table": "Spearman correlation of the expertise composite with participant-level means; "
    "p_fdr: Benjamini-Hochberg over the outcomes.",
    "diagnostics": "Expertise diagnostics: Cronbach's alpha of the z-scored items, variance "
    "shares of the first two principal components, participant counts, and Spearman "
    "agreement of the composite with the PC1 score.",
    "loadings": "PC1 loading of each z-scored expertise item and its Pearson r with the composite.",
    "dimension_correlations": "Pearson correlations of the six expertise items.",
}
for key, caption in CAPTIONS.items():
    table = tables["outcomes" if key == "table" else key]
    log.info("%s\n%s", key, table.to_string())
    write_table(
        table,
        out[key],
        inputs=list(snakemake.input),
        formats=("csv", "md", "tex"),
        caption=caption,
    )
rel = tables["reliability"]
log.info(
    "alpha %(alpha).3f, PC1 share %(pc1_share).3f, r(PC1, composite) %(pc1_composite_r).3f", rel
)
rel["provenance"] = provenance(list(snakemake.input))
write_json(rel, out.reliability)
