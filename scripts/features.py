"""Snakemake entry point of rule `features`: ingest tables -> results/features/attempts.csv."""

import logging
from pathlib import Path

from nonolab.study.features import attempt_features, read_pause_model
from nonolab.study.ingest import read_ingest
from nonolab.study.schemas import write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("features")

threshold_s = read_pause_model(snakemake.input.threshold).threshold_used_s
keep = bool(snakemake.params.keep_initial_rating_sentinel)
log.info("pause threshold %.6g s; keep initial rating sentinel: %s", threshold_s, keep)
tables = read_ingest(Path(snakemake.input.tables[0]).parent)
features = attempt_features(tables, threshold_s, keep_initial_rating_sentinel=keep)
write_checked_table(
    features,
    snakemake.output.csv,
    "features",
    inputs=list(snakemake.input),
    params={"threshold_used_s": threshold_s, "keep_initial_rating_sentinel": keep},
    formats=("csv", "parquet"),
)
log.info("%d attempts, %d participants", len(features), features["participant_id"].nunique())
