"""Snakemake script: merge the pool shards (checked complete) and list repeated puzzles."""

import logging

from nonolab.core.tables import write_table
from nonolab.measure.sweep import merge_shards, pool_duplicates
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("pool_merge")

cfg = snakemake.params.settings
size = int(cfg["size"])
names = [str(p) for p in snakemake.input.pool]
pool = merge_shards([read_csv(p) for p in snakemake.input.pool], size, names=names)
keys = ("pool_index", "encoding", "solver")
metrics = merge_shards([read_csv(p) for p in snakemake.input.metrics], size, keys=keys, names=names)
timing = merge_shards([read_csv(p) for p in snakemake.input.timing], size, keys=keys, names=names)
excluded = pool_duplicates(pool)
log.info(
    "merged %d shards: %d puzzles, %d solver runs, %d repeated puzzles",
    len(names),
    len(pool),
    len(metrics),
    len(excluded),
)
params = {k: v for k, v in cfg.items() if k not in ("seed", "shards")}
seeds = {"pool_seed": int(cfg["seed"])}
inp = snakemake.input
write_table(pool, snakemake.output.pool, inputs=inp.pool, params=params, seeds=seeds)
write_table(metrics, snakemake.output.metrics, inputs=inp.metrics, params=params, seeds=seeds)
write_table(timing, snakemake.output.timing, inputs=inp.timing, params=params, seeds=seeds)
write_table(excluded, snakemake.output.excluded, inputs=inp.pool, params=params, seeds=seeds)
