"""Snakemake script: generate one shard of the puzzle pool and compute its solver metrics."""

import logging
import time

from nonolab.measure.sweep import generate_shard, shard_bounds, shard_metrics, split_timing
from nonolab.report.provenance import write_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("pool_shard")

cfg = snakemake.params.settings
shard = snakemake.params.shard
start, stop = shard_bounds(int(cfg["size"]), int(cfg["shards"]))[shard]
log.info(
    "shard %d of %d: pool indices %d..%d, %dx%d grids with %d filled cells, seed %d",
    shard,
    cfg["shards"],
    start,
    stop - 1,
    cfg["height"],
    cfg["width"],
    cfg["filled"],
    cfg["seed"],
)
t0 = time.perf_counter()
pool = generate_shard(
    size=int(cfg["size"]),
    shards=int(cfg["shards"]),
    shard=shard,
    height=int(cfg["height"]),
    width=int(cfg["width"]),
    filled=int(cfg["filled"]),
    seed=int(cfg["seed"]),
)
log.info("generated %d unique puzzles in %.2f s", len(pool), time.perf_counter() - t0)
t0 = time.perf_counter()
metrics, timing = split_timing(
    shard_metrics(
        pool,
        solvers=cfg["solvers"],
        encodings=cfg["encodings"],
        conf_budget=cfg.get("conf_budget"),
    )
)
log.info(
    "%d solver runs (%s x %s) in %.2f s",
    len(metrics),
    ",".join(cfg["encodings"]),
    ",".join(cfg["solvers"]),
    time.perf_counter() - t0,
)
params = {k: v for k, v in cfg.items() if k != "seed"} | {"shard": shard}
seeds = {"pool_seed": int(cfg["seed"]), "per_puzzle": "SeedSequence(pool_seed, spawn_key=(i,))"}
write_table(pool, snakemake.output.pool, params=params, seeds=seeds)
write_table(metrics, snakemake.output.metrics, inputs=[snakemake.output.pool], params=params)
write_table(timing, snakemake.output.timing, inputs=[snakemake.output.pool], params=params)
