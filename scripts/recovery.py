"""Snakemake script: parameter recovery on simulated studies -> the full record
(results/recovery/recovery.json) and the criteria table for the report (results/tables/recovery.csv)."""

import logging
import tempfile

from nonolab.core.tables import write_json, write_table
from nonolab.sim.recovery import recovery_benchmark, recovery_criteria_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
log = logging.getLogger("recovery")

cfg = snakemake.params.settings
log.info("recovery benchmark: %s", cfg)
with tempfile.TemporaryDirectory() as tmp:
    rec = recovery_benchmark(
        int(cfg["seed"]),
        tmp,
        replications=int(cfg["replications"]),
        n_participants=int(cfg["n_participants"]),
        n_puzzles=int(cfg["n_puzzles"]),
        pipeline_studies=int(cfg["pipeline_studies"]),
        pipeline_puzzles=int(cfg.get("pipeline_puzzles") or 6),
        log=log.info,
        jobs=snakemake.threads,
    )
write_json(rec, snakemake.output.record)
write_table(
    recovery_criteria_table(rec),
    snakemake.output.table,
    params=cfg,
    seeds={"master": int(cfg["seed"])},
    formats=("csv", "md", "tex"),
    caption="Parameter recovery on simulated studies (targets and results).",
)
log.info("criteria: %s", rec["criteria"])
