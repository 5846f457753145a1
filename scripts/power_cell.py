"""Snakemake script: power of one (puzzles, participants) design cell, for every configured rho."""

import logging

from nonolab.core.tables import write_table
from nonolab.sim.power import CELL_SEED_RULE, power_table_from_settings

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_cell")

cfg = snakemake.params.settings
cell = {"n_puzzles": snakemake.params.n_puzzles, "n_participants": snakemake.params.n_participants}
log.info("power cell %s: %s", cell, cfg)
table = power_table_from_settings(cfg, cell["n_puzzles"], cell["n_participants"])
log.info("%s", table.to_string(index=False))
params = {k: v for k, v in cfg.items() if k != "seed"} | cell
seeds = {"seed": int(cfg["seed"]), "per_cell": CELL_SEED_RULE}
write_table(table, snakemake.output[0], params=params, seeds=seeds)
