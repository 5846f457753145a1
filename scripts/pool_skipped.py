"""Snakemake script: record why the pool stages were skipped (results/pool/skipped.json)."""

import logging

from nonolab.core.tables import write_json

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s", force=True)
logging.info("pool stages skipped: %s", snakemake.params.reason)
write_json({"pool": "skipped", "reason": snakemake.params.reason}, snakemake.output[0])
