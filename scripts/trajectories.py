"""Snakemake script of rule `trajectories`: share of cells correct over time per puzzle, replayed
from the ingest events (the table behind the solve-trajectory figure)."""

import logging

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.study.summaries import solve_trajectories

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
step_s = snakemake.params.step_s
events = pd.read_parquet(snakemake.input.events)
puzzles = pd.read_parquet(snakemake.input.puzzles)
traj = solve_trajectories(events, puzzles, step_s=step_s)
write_table(traj, snakemake.output.table, inputs=list(snakemake.input), params={"step_s": step_s})
logging.info("%d trajectory points for %d puzzles", len(traj), traj["puzzle_id"].nunique())
