"""Snakemake entry point of rule `pauses`: within-puzzle gaps -> Gaussian mixtures ->
threshold.json (nonolab.stats.pauses.pause_threshold), the gaps table, and the data-order check
of the published-settings and converged fits (nonolab.stats.pauses.order_dependence)."""

import logging

import pandas as pd

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.stats.pauses import ORDER_COLUMNS, order_dependence, pause_threshold
from nonolab.study.features import interaction_gaps
from nonolab.study.schemas import write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("pauses")
p = snakemake.params

gaps = interaction_gaps(pd.read_parquet(snakemake.input.events))
log.info("%d within-puzzle gaps (%d zero-length)", len(gaps), int((gaps["gap_s"] == 0).sum()))
rec = pause_threshold(gaps["gap_s"].to_numpy(), **p.fit, log=log.info)
order = p.order_check
rows, summary = [], None
if int(order["n_orders"]) > 0 and len(gaps):
    fit = p.fit
    rows, summary = order_dependence(
        gaps["gap_s"].to_numpy(),
        n_orders=int(order["n_orders"]),
        seed=int(order["seed"]),
        components=fit["components"],
        n_init=fit["n_init"],
        random_state=fit["random_state"],
        converged=fit["converged"],
    )
    rec["order_dependence"] = summary
    log.info("data-order check: %s", summary)
rec["provenance"] = provenance(
    list(snakemake.input),
    params={k: p.fit[k] for k in ("threshold", "components", "n_init", "converged", "max_fit_gaps")}
    | {"em_tol": rec["em_tol"], "order_check": dict(order)},
    seeds={"random_state": p.fit["random_state"]},
)
write_json(rec, snakemake.output.threshold)
write_checked_table(
    gaps[["participant_id", "puzzle_id", "order", "gap_s"]],
    snakemake.output.gaps,
    "gaps",
    inputs=list(snakemake.input),
    formats=("csv",),
)
write_table(
    pd.DataFrame(rows, columns=ORDER_COLUMNS),
    snakemake.output.order,
    inputs=list(snakemake.input),
    params={"order_check": dict(order)},
    seeds={"order_seed": order["seed"], "random_state": p.fit["random_state"]},
    formats=("csv", "md"),
    caption=(
        "Pause mixtures refitted to the same gaps in other orders: order 0 = the order the "
        f"gaps are read in, 1-{summary['n_published_orders']} = random permutations (seed "
        f"{order['seed']}); published_settings = EM stopped at scikit-learn's default "
        "tolerance (as published), in every order; converged = the checked optimum, in orders "
        f"0-{order['n_orders']}, continuing that order's early-stopped 3-component fit. "
        "Crossing in seconds; delta BIC = BIC(1) - BIC(k)."
        if rows
        else "Pause mixtures in other gap orders: not run (pauses.order_check: no orders, or "
        "only_published and the study's preset names no published pause fit)."
    ),
)
