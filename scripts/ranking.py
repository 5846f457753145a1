"""Snakemake entry point of rule `ranking`: Bradley-Terry fit, bootstrap intervals (participant
bootstrap, and for a study with a published analysis its k-squared semantics side by side), LR
test."""

import logging

from nonolab.core.tables import provenance, write_json, write_table
from nonolab.core.undefined import NOT_CONNECTED
from nonolab.stats.ranking import (
    NotStronglyConnectedError,
    bootstrap_log_strengths,
    lr_test,
    pairwise_comparisons,
    strengths_table,
)
from nonolab.study.schemas import read_table, write_checked_table

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO, format="%(message)s")
log = logging.getLogger("ranking")
p = snakemake.params

attempts = read_table(snakemake.input.attempts, "features")
hashes = dict(zip(attempts["puzzle_id"], attempts["puzzle_hash"], strict=False))
items = sorted(attempts["puzzle_id"].unique(), key=lambda s: (len(s), s))
comparisons = pairwise_comparisons(attempts, rating_col=p.rating)
log.info(
    "%d participant pairs from %d participants",
    int(comparisons["weight"].sum()),
    comparisons["participant_id"].nunique(),
)
try:
    test = lr_test(comparisons, items)
    log.info("LR chi2 %.4f, df %d, p %.4g", test["chi2"], test["df"], test["p"])
except NotStronglyConnectedError as e:
    log.warning("Bradley-Terry point estimate undefined: %s", e)
    test = {
        "chi2": None,
        "df": len(items) - 1,
        "p": None,
        "n_comparisons": float(comparisons["weight"].sum()),
        "status": f"undefined: {e}",
        "undefined": NOT_CONNECTED,
    }

progress = lambda i, n: log.info("bootstrap %d/%d", i, n)  # noqa: E731
boots = {}
# the published analysis's k-squared bootstrap only for a study whose preset has one
for weighting in ("k", "k2") if p.published else ("k",):
    b = bootstrap_log_strengths(
        comparisons, items, p.n_boot, p.seed, progress=progress, weighting=weighting
    )
    log.info(
        "bootstrap (weighting %s): %d resamples fitted, %d skipped (win graph not strongly "
        "connected), %d skipped (choix did not converge)",
        weighting,
        b.n_used,
        b.n_not_connected,
        b.n_not_converged,
    )
    boots[weighting] = b
boot, published = boots["k"], boots.get("k2")
table = strengths_table(
    comparisons, items, boot, level=p.ci_level, hashes=hashes, published=published
)
params = {
    "rating": p.rating,
    "n_boot": p.n_boot,
    "ci_level": p.ci_level,
    "n_failed": boot.n_failed,
    "n_boot_used": boot.n_used,
    "n_boot_not_connected": boot.n_not_connected,
    "n_boot_not_converged": boot.n_not_converged,
    "status": table["status"].iloc[0] if len(table) else "no items",
}
if published is not None:
    params["published_semantics"] = {
        "weighting": "k2",
        "n_boot": p.n_boot,
        "n_boot_used": published.n_used,
        "n_boot_not_connected": published.n_not_connected,
        "n_boot_not_converged": published.n_not_converged,
    }
caption = (
    "Bradley-Terry strengths of reported difficulty (geometric mean 1) with "
    f"{100 * p.ci_level:g}% participant-bootstrap intervals"
)
if published is not None:
    caption += (
        " (and, for comparison, the published analysis's intervals in which a participant "
        "drawn k times counts k squared times)"
    )
caption += "; rank 1 = rated hardest."
write_checked_table(
    table,
    snakemake.output.strengths,
    "bt_strengths",
    inputs=list(snakemake.input),
    params=params,
    seeds={"bootstrap": p.seed},
    formats=("csv", "md", "tex"),
    caption=caption,
)
write_table(comparisons, snakemake.output.comparisons, inputs=list(snakemake.input), params=params)
test["provenance"] = provenance(list(snakemake.input), params={"rating": p.rating})
write_json(test, snakemake.output.lr_test)
