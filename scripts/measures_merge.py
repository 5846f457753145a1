"""Snakemake script: merge the measure shards of a pool into one table (shard order)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("measures_merge")

for kind in ("tables", "timings"):
    frames = [pd.read_csv(p, dtype={"puzzle_id": str}) for p in snakemake.input[kind]]
    merged = pd.concat(frames, ignore_index=True)
    out = snakemake.output.table if kind == "tables" else snakemake.output.timing
    write_table(merged, out, inputs=list(snakemake.input[kind]))
    log.info("%s: %d rows from %d shards", out, len(merged), len(frames))
