# Stage: pauses. Within-puzzle gaps -> Gaussian mixtures -> pause threshold (METHODS 5).
# DAG: ingest -> pauses -> features (features counts pauses with `threshold_used_s`);
# ingest -> pause_order (the data-order check of the fits) -> errata and the report, beside
# pauses: nothing on the way to features waits for the check.


# The preset's published pause threshold (seconds), or None.
PAUSES_PRESET_THRESHOLD = PRESET.get("published", {}).get("pause_threshold_s")
# The preset's published mixture-fit EM tolerance, or None (then the fit runs to convergence).
PAUSES_PRESET_EM_TOL = PRESET.get("published", {}).get("pause_em_tol")
# The data-order check of the fits (pauses.order_check); with only_published, run only when
# the preset names a published fit (the check judges the published numbers; it costs about 40
# refits).
PAUSES_ORDER_CHECK = dict(
    config["pauses"].get("order_check", {"n_orders": 0, "seed": 0})
)
# Why the check is not run (None: it runs), recorded in results/pauses/order_dependence.json.
PAUSES_ORDER_SKIPPED = None
if PAUSES_ORDER_CHECK.pop("only_published", False) and PAUSES_PRESET_EM_TOL is None:
    PAUSES_ORDER_CHECK["n_orders"] = 0
    PAUSES_ORDER_SKIPPED = (
        "pauses.order_check.only_published and the study's preset names no published "
        "pause fit"
    )
# The mixture settings both rules fit with.
PAUSES_FIT = dict(
    threshold=config["pauses"]["threshold"],
    preset_threshold=PAUSES_PRESET_THRESHOLD,
    components=config["pauses"]["components"],
    n_init=config["pauses"]["n_init"],
    random_state=config["pauses"]["random_state"],
    em_tol=config["pauses"]["em_tol"],
    preset_em_tol=PAUSES_PRESET_EM_TOL,
    converged=config["pauses"]["converged"],
    max_fit_gaps=config["pauses"].get("max_fit_gaps"),
)


rule pauses:
    input:
        events="results/ingest/events.parquet",
    output:
        threshold=report(
            "results/pauses/threshold.json",
            caption="../report/pauses_threshold.rst",
            category="Pauses",
        ),
        gaps="results/pauses/gaps.csv",
    log:
        "results/logs/pauses.log",
    benchmark:
        "results/bench/rules/pauses.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        # Keyword arguments of nonolab.stats.pauses.pause_threshold.
        fit=PAUSES_FIT,
    script:
        "../../scripts/pauses.py"


# The data-order check (nonolab.stats.pauses.order_check): its own rule, so that features
# (and everything after it) does not wait for its refits; it reads the same gaps as pauses.
rule pause_order:
    input:
        events="results/ingest/events.parquet",
    output:
        record="results/pauses/order_dependence.json",
        order=report(
            "results/tables/pause_order_dependence.csv",
            caption="../report/pause_order_dependence.rst",
            category="Pauses",
        ),
    log:
        "results/logs/pause_order.log",
    benchmark:
        "results/bench/rules/pause_order.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        # Keyword arguments of nonolab.stats.pauses.order_check.
        fit={
            k: PAUSES_FIT[k]
            for k in ("components", "n_init", "random_state", "converged")
        },
        order_check=PAUSES_ORDER_CHECK,
        why_not=PAUSES_ORDER_SKIPPED,
    script:
        "../../scripts/pause_order.py"


ALL_TARGETS.append("results/pauses/threshold.json")
ALL_TARGETS.append("results/pauses/order_dependence.json")
ALL_TARGETS.append("results/tables/pause_order_dependence.csv")
