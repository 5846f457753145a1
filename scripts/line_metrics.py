"""Snakemake script: human-like line-solving metrics of the study's puzzles (nonolab.sat.linesolver)."""

import logging

from nonolab.core.tables import write_table
from nonolab.measure.puzzle_files import read_puzzles
from nonolab.measure.tables import line_metrics_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("line_metrics")

puzzles = read_puzzles(snakemake.input.puzzles)
params = {
    "max_probe_depth": snakemake.params.max_probe_depth,
    "probe_time_limit_s": snakemake.params.probe_time_limit_s,
}
log.info("%d puzzles from %s; %s", len(puzzles), snakemake.input.puzzles, params)
table = line_metrics_table(
    puzzles,
    max_depth=snakemake.params.max_probe_depth,
    time_limit_s=snakemake.params.probe_time_limit_s,
)
write_table(
    table,
    snakemake.output.metrics,
    inputs=[snakemake.input.puzzles],
    params=params,
    formats=("csv", "md"),
    caption="Line-solving metrics per puzzle (propagation to a fixpoint, then probing).",
)
for r in table.to_dict("records"):
    log.info(
        "%s (%s): line_solvable=%s sweeps=%s line_updates=%s probing_depth=%s",
        r["puzzle_id"],
        r["puzzle_hash"][:12],
        r.get("line_solvable"),
        r.get("propagation_sweeps"),
        r.get("propagation_line_updates"),
        r.get("probing_depth"),
    )
