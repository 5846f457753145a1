"""Snakemake script: every registered measure of a set of puzzles (nonolab.measure.registry).

Used for the served puzzles (input ``puzzles``: the ingested puzzle table) and for one shard of
a pool (input ``pool``: a packed pool file such as ``nonograms10x10.txt`` or the workflow's own
``pool.csv``; params ``shard``/``shards`` pick a contiguous slice). Writes the measures table,
the registry (definitions) when asked, and the seconds spent per puzzle apart (wall times are not
reproducible, the measures are).
"""

import logging
import time
from pathlib import Path

import pandas as pd

from nonolab.core.tables import write_table
from nonolab.measure.registry import measures_table, registry, registry_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("measures")


def read_pool(path):
    """Puzzles of a packed pool file (.txt) or of the workflow's own pool table (.csv)."""
    if Path(path).suffix.lower() == ".txt":
        from nonolab.design.selection import read_packed_pool

        return read_packed_pool(path)
    from nonolab.measure.sweep import puzzle_from_record

    return [puzzle_from_record(r) for r in pd.read_csv(path, dtype=str).to_dict("records")]


if "puzzles" in snakemake.input.keys():
    from nonolab.measure.puzzle_files import read_puzzles

    source = snakemake.input.puzzles
    puzzles = read_puzzles(source)
else:
    from nonolab.measure.sweep import shard_bounds

    source = snakemake.input.pool
    everything = read_pool(source)
    start, stop = shard_bounds(len(everything), int(snakemake.params.shards))[
        int(snakemake.params.shard)
    ]
    puzzles = everything[start:stop]
measures = registry(snakemake.params.solvers, snakemake.params.encodings)
params = {"solvers": list(snakemake.params.solvers), "encodings": snakemake.params.encodings}
log.info("%d puzzles from %s; %d measures; %s", len(puzzles), source, len(measures), params)
t0 = time.perf_counter()
table = measures_table(puzzles, measures)
log.info("measured in %.2f s", time.perf_counter() - t0)
write_table(
    table.drop(columns=["measure_time_s"]),
    snakemake.output.table,
    inputs=[source],
    params=params,
    caption="Every registered difficulty measure per puzzle (docs/measures.md).",
)
write_table(table[["puzzle_hash", "puzzle_id", "measure_time_s"]], snakemake.output.timing)
if "registry" in snakemake.output.keys():
    write_table(pd.DataFrame(registry_table(measures)), snakemake.output.registry, params=params)
