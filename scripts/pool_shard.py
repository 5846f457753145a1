"""Snakemake script of rule `pool_shard`: generate one shard of the puzzle pool and compute its
solver metrics."""

import logging
import time

from nonolab.core.tables import write_table
from nonolab.measure.sweep import generate_shard, shard_bounds, shard_metrics, split_timing

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("pool_shard")

cfg, shard = snakemake.params.settings, snakemake.params.shard
start, stop = shard_bounds(int(cfg["size"]), int(cfg["shards"]))[shard]
log.info("shard %d: pool indices %d..%d; settings %s", shard, start, stop - 1, dict(cfg))
t0 = time.perf_counter()
grid = {k: int(cfg[k]) for k in ("size", "shards", "height", "width", "filled", "seed")}
pool = generate_shard(shard=shard, **grid)
log.info("generated %d unique puzzles in %.2f s", len(pool), time.perf_counter() - t0)
t0 = time.perf_counter()
runs = shard_metrics(
    pool, solvers=cfg["solvers"], encodings=cfg["encodings"], conf_budget=cfg.get("conf_budget")
)
metrics, timing = split_timing(runs)
log.info("%d solver runs in %.2f s", len(metrics), time.perf_counter() - t0)
params = {k: v for k, v in cfg.items() if k != "seed"} | {"shard": shard}
seeds = {"pool_seed": int(cfg["seed"]), "per_puzzle": "SeedSequence(pool_seed, spawn_key=(i,))"}
write_table(pool, snakemake.output.pool, params=params, seeds=seeds)
write_table(metrics, snakemake.output.metrics, inputs=[snakemake.output.pool], params=params)
write_table(timing, snakemake.output.timing, inputs=[snakemake.output.pool], params=params)
