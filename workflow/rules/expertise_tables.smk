# Stage: expertise tables. The expertise composite with its Spearman correlations, reliability
# and diagnostics (METHODS 6; library nonolab.stats.expertise), and the order / expertise + order
# OLS adjustment of final difficulty with the adjusted per-puzzle difficulty against SAT metrics
# (library nonolab.stats.adjustment), under both rating samples and SAT alignments.


# Options of nonolab.stats.adjustment.study_adjustment: the paper's main solver x encoding and
# the Table 1 permutation settings (seed: `ranking.seed`, else the master seed).
ADJUSTMENT = dict(
    solver=config["ranking"]["main_solver"],
    encoding=config["ranking"]["main_encoding"],
    exact_max_n=config["ranking"].get("permutation_exact_max_n", 8),
    n_perm=config["ranking"].get("permutation_draws", 100000),
    seed=(
        config["seed"]
        if config["ranking"].get("seed") is None
        else config["ranking"]["seed"]
    ),
)


rule expertise:
    input:
        attempts="results/features/attempts.csv",
    output:
        table=report(
            "results/tables/expertise.csv",
            caption="../report/expertise.rst",
            category="Expertise",
        ),
        reliability="results/tables/expertise_reliability.json",
        diagnostics=report(
            "results/tables/expertise_diagnostics.csv",
            caption="../report/expertise_diagnostics.rst",
            category="Expertise",
        ),
        loadings=report(
            "results/tables/expertise_loadings.csv",
            caption="../report/expertise_loadings.rst",
            category="Expertise",
        ),
        dimension_correlations=report(
            "results/tables/expertise_dimension_correlations.csv",
            caption="../report/expertise_dimension_correlations.rst",
            category="Expertise",
        ),
    log:
        "results/logs/expertise.log",
    benchmark:
        "results/bench/rules/expertise.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/expertise.py"


rule adjustment:
    input:
        **(
            {"pool_statistics": PUBLISHED_POOL_STATISTICS}
            if PUBLISHED_POOL_STATISTICS
            else {}
        ),
        attempts="results/features/attempts.csv",
        metrics="results/sat/metrics.csv",
    output:
        models=report(
            "results/tables/adjustment_models.csv",
            caption="../report/adjustment_models.rst",
            category="Expertise",
        ),
        difficulty=report(
            "results/tables/adjusted_difficulty.csv",
            caption="../report/adjusted_difficulty.rst",
            category="Expertise",
        ),
        vs_sat=report(
            "results/tables/adjusted_difficulty_vs_sat.csv",
            caption="../report/adjusted_difficulty_vs_sat.rst",
            category="Expertise",
        ),
    log:
        "results/logs/adjustment.log",
    benchmark:
        "results/bench/rules/adjustment.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        adjustment=ADJUSTMENT,
    script:
        "../../scripts/adjustment.py"


EXPERTISE_TARGETS = [
    "results/tables/expertise.csv",
    "results/tables/expertise_reliability.json",
    "results/tables/expertise_diagnostics.csv",
    "results/tables/expertise_loadings.csv",
    "results/tables/expertise_dimension_correlations.csv",
    "results/tables/adjustment_models.csv",
    "results/tables/adjusted_difficulty.csv",
    "results/tables/adjusted_difficulty_vs_sat.csv",
]
ALL_TARGETS.extend(EXPERTISE_TARGETS)
