"""Snakemake script of rule `sat_metrics`: solver statistics and uniqueness of the study's
puzzles (METHODS 2)."""

import logging

from nonolab.core.tables import write_table
from nonolab.measure.puzzle_files import read_puzzles
from nonolab.measure.tables import metrics_and_timings, uniqueness_table
from nonolab.sat.encodings import resolve_encodings
from nonolab.study.schemas import write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("sat_metrics")

p = snakemake.params
puzzles = read_puzzles(snakemake.input.puzzles)
params = {
    "encodings": resolve_encodings(p.encodings),
    "solvers": list(p.solvers),
    "conf_budget": p.conf_budget,
    "uniqueness_solver": p.uniqueness_solver,
}
log.info("%d puzzles from %s; %s", len(puzzles), snakemake.input.puzzles, params)
budget = {"conf_budget": p.conf_budget}
metrics, timings = metrics_and_timings(puzzles, params["encodings"], params["solvers"], **budget)
uniq = uniqueness_table(puzzles, params["encodings"], p.uniqueness_solver, **budget)
prov = {"inputs": [snakemake.input.puzzles], "params": params}
caption = "SAT solver statistics per puzzle, encoding and solver (python-sat accum_stats)."
out = snakemake.output
write_checked_table(
    metrics, out.metrics, "sat_metrics", formats=("csv", "md", "tex"), caption=caption, **prov
)
write_table(timings, out.timings, **prov)
write_table(uniq, out.uniqueness, **prov)
answers = uniq[["puzzle_id", "puzzle_hash", "encoding", "solver", "status"]]
log.info("metrics:\n%s", metrics.to_string(index=False))
log.info("uniqueness:\n%s", answers.to_string(index=False))
bad = uniq[uniq["status"] != "unique"]
if len(bad):
    log.warning(
        "NOT UNIQUE or undecided: %s", bad[["puzzle_id", "encoding", "status"]].to_dict("records")
    )
