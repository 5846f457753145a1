# Stage: published pool statistics. How redundant the three SAT metrics are (pool and selected
# puzzles), where the served puzzles fall in the candidate pool under both alignments, the
# Spearman of difficulty with per-puzzle mean behaviour, and how many distinct puzzle sequences
# the sessions were served. Library: nonolab.stats.pool_stats, nonolab.stats.correlations.


# The preset's candidate-pool statistics and the platform's schedule (he2026; absent: skipped).
PUBLISHED_POOL = study_path("published.pool_statistics")
ASSIGNMENT_SCHEDULE = study_path("assignment_schedule")
PUBLISHED_POOL_INPUTS = {
    "attempts": "results/features/attempts.csv",
    "participants": "results/ingest/participants.csv",
    "metrics": "results/sat/metrics.csv",
    "strengths": "results/tables/bt_strengths.csv",
    **({"pool": PUBLISHED_POOL} if PUBLISHED_POOL else {}),
    # without a published pool: the workflow's own pool, generated to match the study's puzzles,
    # when the run makes it (the simulation extra `pool`: config or preset `extras`)
    **(
        {
            "own_pool": "results/pool/metrics.csv",
            "own_pool_puzzles": "results/pool/pool.csv",
        }
        if not PUBLISHED_POOL and POOL_SKIPPED is None and "pool" in EXTRAS
        else {}
    ),
    **({"selected": PUBLISHED_POOL_STATISTICS} if PUBLISHED_POOL_STATISTICS else {}),
    **({"schedule": ASSIGNMENT_SCHEDULE} if ASSIGNMENT_SCHEDULE else {}),
}


rule published_pool:
    input:
        **PUBLISHED_POOL_INPUTS,
    output:
        correlation=report(
            "results/tables/sat_metric_correlation.csv",
            caption="../report/sat_metric_correlation.rst",
            category="Puzzle pool",
        ),
        vif="results/tables/sat_metric_vif.csv",
        representativeness=report(
            "results/tables/selection_representativeness.csv",
            caption="../report/selection_representativeness.rst",
            category="Puzzle pool",
        ),
        behaviour="results/tables/bt_vs_behaviour.csv",
        selections="results/tables/ordered_selections.json",
    log:
        "results/logs/published_pool.log",
    benchmark:
        "results/bench/rules/published_pool.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        solver=config["ranking"]["main_solver"],
        encoding=config["ranking"]["main_encoding"],
        rating=config["ranking"]["rating"],
        per_session=sorted(_PRESET.session_sizes),
    script:
        "../../scripts/published_pool.py"


# The codebook with one example answer per code (the paper's Table 4), when the preset names a
# codebook and coded responses.
CODEBOOK = study_path("themes.codebook")
HAS_CODEBOOK = HAS_THEMES and CODEBOOK is not None and Path(CODEBOOK).is_file()


rule codebook_examples:
    input:
        codebook=CODEBOOK or "(the preset names no codebook)",
        coded=CODED_RESPONSES or "(the preset names no coded-responses file)",
    output:
        table=report(
            "results/tables/codebook_examples.csv",
            caption="../report/codebook_examples.rst",
            category="Themes",
        ),
    log:
        "results/logs/codebook_examples.log",
    benchmark:
        "results/bench/rules/codebook_examples.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        overrides=PRESET.get("themes", {}).get("example_overrides", {}),
        max_chars=PRESET.get("themes", {}).get("example_max_chars", 180),
    script:
        "../../scripts/codebook_examples.py"


if HAS_CODEBOOK:
    ALL_TARGETS.append("results/tables/codebook_examples.csv")
ALL_TARGETS.extend(
    [
        "results/tables/sat_metric_correlation.csv",
        "results/tables/sat_metric_vif.csv",
        "results/tables/selection_representativeness.csv",
        "results/tables/bt_vs_behaviour.csv",
        "results/tables/ordered_selections.json",
    ]
)
