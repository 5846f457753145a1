# Stage: ranking. Bradley-Terry ranking (METHODS 7) and Table 1 (METHODS 8): Spearman of
# difficulty with SAT metrics under both alignments.


# Seed of the BT bootstrap and permutation draws: `ranking.seed`, else the master seed.
RANKING_SEED = (
    config["seed"]
    if config["ranking"].get("seed") is None
    else config["ranking"]["seed"]
)
# Table 1 inputs; the published pool-ordered statistics table only when the preset names it.
TABLE1_INPUTS = {
    "strengths": "results/tables/bt_strengths.csv",
    "attempts": "results/features/attempts.csv",
    "metrics": "results/sat/metrics.csv",
}
if PUBLISHED_POOL_STATISTICS:
    TABLE1_INPUTS["pool_statistics"] = PUBLISHED_POOL_STATISTICS


rule ranking:
    input:
        attempts="results/features/attempts.csv",
    output:
        strengths=report(
            "results/tables/bt_strengths.csv",
            caption="../report/bt_strengths.rst",
            category="Ranking",
        ),
        lr_test="results/tables/bt_lr_test.json",
        comparisons="results/ranking/bt_comparisons.csv",
    log:
        "results/logs/ranking.log",
    benchmark:
        "results/bench/rules/ranking.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        rating=config["ranking"]["rating"],
        n_boot=config["ranking"]["bootstrap"],
        ci_level=config["ranking"]["ci_level"],
        seed=RANKING_SEED,
        # the published analysis's k-squared intervals beside ours, only when it exists
        published=bool(PRESET.get("published")),
    script:
        "../../scripts/ranking.py"


rule table1:
    input:
        **TABLE1_INPUTS,
    output:
        table=report(
            "results/tables/table1_spearman.csv",
            caption="../report/table1.rst",
            category="Ranking",
        ),
        erratum=report(
            "results/tables/table1_erratum.csv",
            caption="../report/table1_erratum.rst",
            category="Ranking",
        ),
        points="results/ranking/table1_points.csv",
    log:
        "results/logs/table1.log",
    benchmark:
        "results/bench/rules/table1.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        rating=config["ranking"]["rating"],
        main_solver=config["ranking"]["main_solver"],
        main_encoding=config["ranking"]["main_encoding"],
        exact_max_n=config["ranking"].get("permutation_exact_max_n", 9),
        n_perm=config["ranking"].get("permutation_draws", 100000),
        seed=RANKING_SEED,
    script:
        "../../scripts/table1.py"


ALL_TARGETS.extend(
    [
        "results/tables/bt_strengths.csv",
        "results/tables/bt_lr_test.json",
        "results/tables/table1_spearman.csv",
        "results/tables/table1_erratum.csv",
    ]
)
