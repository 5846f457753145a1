"""Snakemake script: which measures track difficulty (nonolab.stats.measure_evaluation): the
leaderboard, every test with its family q, the out-of-sample table and the figure."""

import logging
import time

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.report.measures_section import leaderboard_figure
from nonolab.stats.measure_evaluation import FAMILY, evaluate_measures
from nonolab.stats.mixed_models import with_expertise
from nonolab.study.schemas import read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("measure_evaluation")
p = snakemake.params

attempts = with_expertise(read_table(snakemake.input.attempts, "features"))
strengths = pd.read_csv(snakemake.input.strengths, dtype={"puzzle_id": str})
measures = pd.read_csv(snakemake.input.measures, dtype={"puzzle_id": str})
registry = pd.read_csv(snakemake.input.registry)
params = {"n_perm": p.n_perm, "seed": p.seed, "family": FAMILY}
t0 = time.perf_counter()
res = evaluate_measures(attempts, strengths, measures, registry, n_perm=p.n_perm, seed=p.seed)
log.info(
    "%d measures, %d tests in %.1f s",
    len(res["leaderboard"]),
    len(res["tests"]),
    time.perf_counter() - t0,
)
inputs = list(snakemake.input)
for key, caption in (
    ("leaderboard", "Which measures track difficulty: one row per registered measure."),
    ("tests", "Every test of every evaluated measure, with the family's BH q."),
    ("oos", "Leave-one-puzzle-out prediction per measure and outcome."),
):
    write_table(
        res[key],
        snakemake.output[key],
        inputs=inputs,
        params=params,
        seeds={"seed": p.seed},
        caption=caption,
    )
leaderboard_figure(res["leaderboard"], snakemake.output.figure)
