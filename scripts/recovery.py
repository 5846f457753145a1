"""Snakemake script: parameter-recovery benchmark on simulated studies (results/bench/recovery.json)."""

import logging
import tempfile

from nonolab.provenance import write_json
from nonolab.simulate import recovery_benchmark

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
        log=log.info,
    )
write_json(rec, snakemake.output[0])
log.info("criteria: %s", rec["criteria"])
