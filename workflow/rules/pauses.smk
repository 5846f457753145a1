# Stage: pauses. Within-puzzle gaps -> Gaussian mixtures -> pause threshold (METHODS 5).
# DAG: ingest -> pauses -> features (features counts pauses with `threshold_used_s`).


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
if PAUSES_ORDER_CHECK.pop("only_published", False) and PAUSES_PRESET_EM_TOL is None:
    PAUSES_ORDER_CHECK["n_orders"] = 0


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
        order=report(
            "results/tables/pause_order_dependence.csv",
            caption="../report/pause_order_dependence.rst",
            category="Pauses",
        ),
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
        fit=dict(
            threshold=config["pauses"]["threshold"],
            preset_threshold=PAUSES_PRESET_THRESHOLD,
            components=config["pauses"]["components"],
            n_init=config["pauses"]["n_init"],
            random_state=config["pauses"]["random_state"],
            em_tol=config["pauses"]["em_tol"],
            preset_em_tol=PAUSES_PRESET_EM_TOL,
            converged=config["pauses"]["converged"],
            max_fit_gaps=config["pauses"].get("max_fit_gaps"),
        ),
        order_check=PAUSES_ORDER_CHECK,
    script:
        "../../scripts/pauses.py"


ALL_TARGETS.append("results/pauses/threshold.json")
ALL_TARGETS.append("results/tables/pause_order_dependence.csv")
