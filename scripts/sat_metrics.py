"""Snakemake script: solver statistics and uniqueness of the study's puzzles (METHODS 2)."""

import logging

from nonolab.measure.tables import metrics_and_timings, read_puzzles, uniqueness_table
from nonolab.report.provenance import write_table
from nonolab.sat.encodings import ENCODINGS, get_encoding

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("sat_metrics")

puzzles = read_puzzles(snakemake.input.puzzles)
encodings = snakemake.params.encodings
if encodings == "registered":
    get_encoding("block_start")  # load every encoding module
    encodings = sorted(ENCODINGS, key=lambda e: (e != "block_start", e))
solvers = list(snakemake.params.solvers)
log.info(
    "%d puzzles from %s; encodings %s; solvers %s; conflict budget %s",
    len(puzzles),
    snakemake.input.puzzles,
    encodings,
    solvers,
    snakemake.params.conf_budget,
)
metrics, timings = metrics_and_timings(
    puzzles, encodings, solvers, conf_budget=snakemake.params.conf_budget
)
params = {
    "encodings": encodings,
    "solvers": solvers,
    "conf_budget": snakemake.params.conf_budget,
    "uniqueness_solver": snakemake.params.uniqueness_solver,
}
write_table(
    metrics,
    snakemake.output.metrics,
    inputs=[snakemake.input.puzzles],
    params=params,
    formats=("csv", "md", "tex"),
    caption="SAT solver statistics per puzzle, encoding and solver (python-sat accum_stats).",
)
write_table(timings, snakemake.output.timings, inputs=[snakemake.input.puzzles], params=params)
for r in metrics.itertuples(index=False):
    log.info(
        "%s (%s) %s %s: %d vars, %d clauses, %d decisions, %d propagations, %d conflicts, %s",
        r.puzzle_id,
        r.puzzle_hash[:12],
        r.encoding,
        r.solver,
        r.variables,
        r.clauses,
        r.decisions,
        r.propagations,
        r.conflicts,
        r.status,
    )
uniq = uniqueness_table(
    puzzles, encodings, snakemake.params.uniqueness_solver, conf_budget=snakemake.params.conf_budget
)
write_table(uniq, snakemake.output.uniqueness, inputs=[snakemake.input.puzzles], params=params)
for r in uniq.itertuples(index=False):
    log.info("uniqueness %s %s: %s", r.puzzle_id, r.encoding, r.status)
bad = uniq[uniq["status"] != "unique"]
if len(bad):
    log.warning(
        "NOT UNIQUE or undecided: %s", bad[["puzzle_id", "encoding", "status"]].to_dict("records")
    )
