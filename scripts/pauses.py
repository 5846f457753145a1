"""Snakemake entry point of rules `pauses` (gap mixture -> threshold.json) and
`pause_sensitivity` (downstream results across thresholds)."""

import json
import logging

import pandas as pd

from nonolab.expertise import expertise_composite, participant_items
from nonolab.features import interaction_gaps
from nonolab.pauses import fit_pause_model, model_record, threshold_sensitivity, threshold_used
from nonolab.provenance import provenance, write_json, write_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger(snakemake.rule)
p = snakemake.params

if snakemake.rule == "pauses":
    events = pd.read_parquet(snakemake.input.events)
    gaps = interaction_gaps(events)
    log.info("%d within-puzzle gaps (%d zero-length)", len(gaps), int((gaps["gap_s"] == 0).sum()))
    model = fit_pause_model(gaps["gap_s"].to_numpy(), p.components, p.n_init, p.random_state)
    used, source = threshold_used(model, p.threshold, p.preset_threshold)
    log.info("fitted crossing %.4f s; threshold used %.4f s (%s)", model.threshold_s, used, source)
    rec = model_record(model, used, source)
    rec["provenance"] = provenance(
        list(snakemake.input),
        params={"threshold": p.threshold, "components": p.components, "n_init": p.n_init},
        seeds={"random_state": p.random_state},
    )
    write_json(rec, snakemake.output.threshold)
    write_table(
        gaps[["participant_id", "puzzle_id", "order", "gap_s"]],
        snakemake.output.gaps,
        inputs=list(snakemake.input),
        formats=("csv",),
    )
else:
    gaps = pd.read_csv(snakemake.input.gaps, dtype={"puzzle_id": str})
    attempts = pd.read_csv(snakemake.input.attempts, dtype={"puzzle_id": str})
    strengths = pd.read_csv(snakemake.input.strengths, dtype={"puzzle_id": str})
    with open(snakemake.input.threshold, encoding="utf-8") as fh:
        rec = json.load(fh)
    thresholds = sorted(
        set(map(float, p.thresholds)) | {rec["threshold_used_s"], rec["threshold_s"]}
    )
    comp = expertise_composite(participant_items(attempts))
    table = threshold_sensitivity(gaps, attempts, thresholds, comp, strengths, p.rating)
    log.info("%s", table.to_string())
    write_table(
        table,
        snakemake.output.table,
        inputs=list(snakemake.input),
        params={"thresholds_s": thresholds, "rating": p.rating},
        formats=("csv", "md", "tex"),
        caption="Sensitivity of pause-based results to the pause threshold (s).",
    )
