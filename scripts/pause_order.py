"""Snakemake entry point of rule `pause_order`: the data-order check of the pause fits
(nonolab.stats.pauses.order_check: the published-settings and converged fits refitted to the
same within-puzzle gaps in random orders) -> results/tables/pause_order_dependence.csv and its
summary results/pauses/order_dependence.json. Off the critical path: `features` needs only the
`pauses` rule's threshold.json; the errata and the report read this record."""

import logging

import pandas as pd

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.stats.pauses import ORDER_COLUMNS, order_check
from nonolab.study.features import interaction_gaps

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("pause_order")
p = snakemake.params
order, fit = dict(p.order_check), p.fit

gaps = interaction_gaps(pd.read_parquet(snakemake.input.events))
log.info("%d within-puzzle gaps (%d zero-length)", len(gaps), int((gaps["gap_s"] == 0).sum()))
rows, record = order_check(
    gaps["gap_s"].to_numpy(),
    n_orders=int(order["n_orders"]),
    seed=int(order["seed"]),
    components=fit["components"],
    n_init=fit["n_init"],
    random_state=fit["random_state"],
    converged=fit["converged"],
    why_not=p.why_not,
)
if record["run"]:
    log.info("data-order check: %s", record["order_dependence"])
else:
    log.info("data-order check not run: %s", record["why"])
params = {"order_check": order} | {k: fit[k] for k in ("components", "n_init", "converged")}
seeds = {"order_seed": order["seed"], "random_state": fit["random_state"]}
record["provenance"] = provenance(list(snakemake.input), params=params, seeds=seeds)
write_json(record, snakemake.output.record)
summary = record.get("order_dependence") or {}
write_table(
    pd.DataFrame(rows, columns=ORDER_COLUMNS),
    snakemake.output.order,
    inputs=list(snakemake.input),
    params={"order_check": order},
    seeds=seeds,
    formats=("csv", "md"),
    caption=(
        "Pause mixtures refitted to the same gaps in other orders: order 0 = the order the "
        f"gaps are read in, 1-{summary.get('n_published_orders')} = random permutations (seed "
        f"{order['seed']}); published_settings = EM stopped at scikit-learn's default "
        "tolerance (as published), in every order; converged = the checked optimum, in orders "
        f"0-{order['n_orders']}, continuing that order's early-stopped 3-component fit. "
        "Crossing in seconds; delta BIC = BIC(1) - BIC(k)."
        if rows
        else f"Pause mixtures in other gap orders: not run ({record.get('why')})."
    ),
)
