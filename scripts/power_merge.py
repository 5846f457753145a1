"""Snakemake script: gather the power design cells into results/tables/power.csv (+ md, tex)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_merge")

cfg = snakemake.params.settings
table = pd.concat([read_csv(p) for p in snakemake.input], ignore_index=True)
table = table.sort_values(["rho_true", "method", "n_puzzles", "n_participants"], kind="stable")
log.info("%d cells, %d rows", len(snakemake.input), len(table))
write_table(
    table,
    snakemake.output[0],
    inputs=list(snakemake.input),
    params={k: v for k, v in cfg.items() if k != "seed"},
    seeds={"seed": int(cfg["seed"])},
    formats=("csv", "md", "tex"),
    caption=(
        f"Power to detect a puzzle-level Spearman correlation (alpha {cfg['alpha']}, "
        f"{cfg['replications']} replications per cell, seed {cfg['seed']}); each participant "
        "rates 3 puzzles."
    ),
)
