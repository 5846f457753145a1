"""Snakemake entry point of rule `ingest`: study folder -> results/ingest/ tables."""

import json
import logging
import os
from pathlib import Path

# Large studies are read by a process pool: use exactly the cores Snakemake booked for the rule.
os.environ["NONOLAB_INGEST_WORKERS"] = str(snakemake.threads)

from nonolab.study.identity import study_identity
from nonolab.study.ingest import ingest_study, write_ingest
from nonolab.study.presets import load_preset

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("ingest")

preset = load_preset(snakemake.input.preset)
# the study folder is the puzzle file's path less the preset's relative puzzle_file
study = Path(snakemake.input.puzzles).resolve().parents[len(Path(preset.puzzle_file).parts) - 1]
log.info("study %s, preset %s (%s)", study, preset.name, preset.path)
result = ingest_study(study, preset)
summary = result.summary
counts = {
    "participants": summary["participants"],
    "attempts": summary["attempts"],
    "puzzles": len(summary["attempts_per_puzzle"]),
    # whether the preset has a published analysis (captions: nonolab.report.captions)
    "published": bool(preset.data.get("published")),
}
# study.json goes into the same folder swap as the tables: one run's files or the previous ones
out = Path(snakemake.output.summary).parent
assert Path(snakemake.output.study).parent == out
write_ingest(
    result,
    out,
    params={"preset": preset.name},
    extra_json={Path(snakemake.output.study).name: study_identity(study, preset) | counts},
)
log.info("summary: %s", json.dumps(result.summary, indent=1, sort_keys=True))
