"""Snakemake script: power of the study's own design (its puzzles and participants from
results/ingest, each rating the configured puzzles per session), for every configured rho."""

import logging
from pathlib import Path

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.report.captions import study_facts
from nonolab.sim.power import CELL_SEED_RULE, POWER_COLUMNS, power_table_from_settings

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_study")

cfg = snakemake.params.settings
facts = study_facts(Path(snakemake.input.study).parents[1])
per_session = int(cfg.get("per_session") or 3)
cell = {"n_puzzles": int(facts["puzzles"] or 0), "n_participants": int(facts["participants"] or 0)}
if cell["n_puzzles"] < max(3, per_session) or cell["n_participants"] < 1:
    # too small to simulate (Spearman needs 3 puzzles): an empty table, and the log says why
    log.info("study design %s with %d per session: no power cell", cell, per_session)
    table = pd.DataFrame(columns=POWER_COLUMNS)
else:
    log.info("study design %s, %d puzzles per participant: %s", cell, per_session, cfg)
    table = power_table_from_settings(cfg, cell["n_puzzles"], cell["n_participants"])
    log.info("%s", table.to_string(index=False))
params = {k: v for k, v in cfg.items() if k != "seed"} | cell
seeds = {"seed": int(cfg["seed"]), "per_cell": CELL_SEED_RULE}
write_table(table, snakemake.output[0], params=params, seeds=seeds)
