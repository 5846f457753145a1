"""Snakemake script of rule `pool_select`: the paper's selection from the merged pool (METHODS 1)."""

import logging

from nonolab.core.tables import write_json, write_table
from nonolab.measure.sweep import selection_table, study_puzzle_json
from nonolab.study.schemas import read_csv

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("pool_select")

cfg = snakemake.params.settings
sel = cfg["select"]
pool = read_csv(snakemake.input.pool)
metrics = read_csv(snakemake.input.metrics)
excluded = read_csv(snakemake.input.excluded)
selected = selection_table(
    pool,
    metrics,
    excluded=excluded,
    solver=sel["solver"],
    encoding=sel["encoding"],
    metric=sel["metric"],
    drop_top_frac=float(sel["drop_top_frac"]),
    per_group=int(sel["per_group"]),
)
log.info("selected:\n%s", selected.to_string(index=False))
params = {k: v for k, v in cfg.items() if k not in ("seed", "shards")}
write_table(
    selected,
    snakemake.output.selected,
    inputs=[snakemake.input.pool, snakemake.input.metrics, snakemake.input.excluded],
    params=params,
    seeds={"pool_seed": int(cfg["seed"])},
    formats=("csv", "md", "tex"),
    caption="Puzzles selected from the pool by the paper's procedure (METHODS 1).",
)
chosen = pool.set_index("pool_index").loc[selected["pool_index"]].reset_index()
write_json(study_puzzle_json(chosen, labels=selected["label"].tolist()), snakemake.output.puzzles)
