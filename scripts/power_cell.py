"""Snakemake script: power of one (puzzles, participants) design cell, for every configured rho."""

import logging
import time

from nonolab.report.provenance import write_table
from nonolab.sim.power import power_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_cell")

cfg = snakemake.params.settings
n_puzzles = snakemake.params.n_puzzles
n_participants = snakemake.params.n_participants
log.info(
    "power cell: %d puzzles, %d participants, rho %s, %d replications, seed %d",
    n_puzzles,
    n_participants,
    cfg["rho"],
    cfg["replications"],
    cfg["seed"],
)
t0 = time.perf_counter()
table = power_table(
    n_puzzles,
    n_participants,
    cfg["rho"],
    int(cfg["replications"]),
    int(cfg["seed"]),
    alpha=float(cfg["alpha"]),
    methods=cfg["methods"],
    missing=float(cfg.get("missing", 0.1)),
)
log.info("done in %.1f s\n%s", time.perf_counter() - t0, table.to_string(index=False))
params = {k: v for k, v in cfg.items() if k != "seed"}
params |= {"n_puzzles": n_puzzles, "n_participants": n_participants}
seeds = {
    "seed": int(cfg["seed"]),
    "per_cell": "SeedSequence([seed, n_puzzles, n_participants, round(1000 * rho)])",
}
write_table(table, snakemake.output[0], params=params, seeds=seeds)
