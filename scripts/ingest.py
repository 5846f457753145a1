"""Snakemake entry point of rule `ingest`: study folder -> results/ingest/ tables."""

import json
import logging
from pathlib import Path

from nonolab.ingest import ingest_study, write_ingest
from nonolab.study import resolve_preset

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("ingest")

preset = resolve_preset(snakemake.params.study, snakemake.params.preset)
log.info("study %s, preset %s (%s)", snakemake.params.study, preset.name, preset.path)
result = ingest_study(snakemake.params.study, preset)
out_dir = Path(snakemake.output.summary).parent
write_ingest(result, out_dir, params={"preset": preset.name})
log.info("summary: %s", json.dumps(result.summary, indent=1, sort_keys=True))
