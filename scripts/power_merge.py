"""Snakemake script: gather the power design cells into results/tables/power.csv (+ md, tex)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("power_merge")

cfg = snakemake.params.settings
# `design`: "grid" for the configured cells, "study" for the study's own design
frames = [read_csv(p).assign(design="grid") for p in snakemake.input.grid]
study = read_csv(snakemake.input.study)
if len(study):
    frames.append(study.assign(design="study"))
table = pd.concat(frames, ignore_index=True)
table = table.sort_values(
    ["rho_true", "method", "n_puzzles", "n_participants", "design"], kind="stable"
)
log.info("%d cells, %d rows", len(snakemake.input), len(table))
per = int(cfg.get("per_session") or 3)
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
        f"rates {per} puzzles; design = study marks the study's own numbers of puzzles and "
        "participants."
    ),
)
