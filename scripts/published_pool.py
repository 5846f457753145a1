"""Snakemake entry point of rule `published_pool`: SAT-metric redundancy (pool and selected
puzzles), representativeness of the selection under both alignments, Spearman of difficulty
with mean behaviour, and the count of distinct puzzle sequences served."""

import json
import logging

from nonolab.core.tables import write_json, write_table
from nonolab.measure.tables import read_pool_statistics
from nonolab.stats.correlations import behaviour_spearman, raw_mean_rating
from nonolab.stats.pool_stats import ordered_selections, pool_tables
from nonolab.study.schemas import read_csv, read_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
inp, out, p = snakemake.input, snakemake.output, snakemake.params

attempts = read_table(inp.attempts, "features")
metrics = read_table(inp.metrics, "sat_metrics")
strengths = read_table(inp.strengths, "bt_strengths")
pool = read_pool_statistics(inp.pool) if "pool" in inp.keys() else None
source = (
    "the preset's published pool"
    if pool is not None
    else "none (a generated pool is a simulation extra: config `extras: [pool]`)"
)
if pool is None and "own_pool" in inp.keys():
    # the workflow's own candidate pool (the study's grid size), one solver x encoding
    own = read_csv(inp.own_pool)
    own = own[(own["solver"] == p.solver) & (own["encoding"] == p.encoding)]
    own = own[own["status"] != "unknown"] if "status" in own else own  # over budget
    hashes = read_csv(inp.own_pool_puzzles, usecols=["pool_index", "puzzle_hash"])
    pool = own.merge(hashes, on="pool_index", how="left").assign(
        pool_puzzle_id=lambda d: d["pool_index"].astype(str)
    )
    source = f"the workflow's own pool ({len(pool)} puzzles, results/pool)"
    if pool.empty:
        pool, source = None, f"none (the own pool has no {p.solver} x {p.encoding} runs)"
logging.info("pool: %s", source)
selected = read_pool_statistics(inp.selected) if "selected" in inp.keys() else None
tables = pool_tables(
    attempts, metrics, solver=p.solver, encoding=p.encoding, pool=pool, selected=selected
)
behaviour = behaviour_spearman(strengths, raw_mean_rating(attempts, p.rating), attempts)
schedule = None
if "schedule" in inp.keys():
    with open(inp.schedule, encoding="utf-8") as fh:
        schedule = json.load(fh)["sequences"]
idx = read_table(inp.participants, "participants")["schedule_idx"]
n_puzzles = metrics["puzzle_hash"].nunique()
selections = ordered_selections(attempts, n_puzzles, p.per_session, schedule, idx)
logging.info("ordered selections: %s", selections)
kw = {"inputs": list(inp), "params": {"solver": p.solver, "encoding": p.encoding}}
note = f"{p.solver}, {p.encoding}; pool: {source}."
caps = {
    "correlation": "Pairwise Pearson and Spearman correlations of the SAT metrics; ",
    "vif": "Variance inflation factor of each SAT metric in the three-metric design; ",
    "representativeness": "Percent of the pool strictly below each served puzzle's count, "
    "published (row-position) and corrected (clue-hash) alignment; ",
}
for name, cap in caps.items():
    write_table(tables[name], out[name], caption=cap + note, formats=("csv", "md"), **kw)
cap = "Spearman of BT strength and raw mean rating with per-puzzle mean behaviour (BH FDR)."
write_table(behaviour, out.behaviour, caption=cap, **kw)
write_json(selections, out.selections)
