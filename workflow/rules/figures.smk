# Stage: figures. Paper figures drawn from tables; nothing is refitted here (the trajectory
# table is replayed from the ingest events by rule `trajectories`, not by a figure rule).
# Each figure: PNG (in the report) + PDF, under results/figures/.


# PNG (wrapped for the report, caption workflow/report/fig_<name>.rst) and PDF outputs.
fig_out = lambda name, category: {
    "png": report(
        f"results/figures/{name}.png",
        caption=f"../report/fig_{name}.rst",
        category=category,
    ),
    "pdf": f"results/figures/{name}.pdf",
}


rule fig_pauses:
    input:
        gaps="results/pauses/gaps.csv",
        threshold="results/pauses/threshold.json",
        # the study's facts (drag events name the fastest component)
        study="results/ingest/study.json",
        events="results/ingest/events.parquet",
    output:
        **fig_out("pause_gaps", "Pauses"),
    log:
        "results/logs/fig_pauses.log",
    benchmark:
        "results/bench/rules/fig_pauses.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_pauses.py"


rule fig_strengths:
    input:
        strengths="results/tables/bt_strengths.csv",
    output:
        **fig_out("bt_strengths", "Ranking"),
    log:
        "results/logs/fig_strengths.log",
    benchmark:
        "results/bench/rules/fig_strengths.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_strengths.py"


rule fig_rank_metrics:
    input:
        points="results/ranking/table1_points.csv",
        table="results/tables/table1_spearman.csv",
    output:
        **fig_out("bt_rank_vs_metrics", "Ranking"),
    log:
        "results/logs/fig_rank_metrics.log",
    benchmark:
        "results/bench/rules/fig_rank_metrics.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        main_solver=config["ranking"]["main_solver"],
        main_encoding=config["ranking"]["main_encoding"],
    script:
        "../../scripts/fig_rank_metrics.py"


rule fig_theme_prevalence:
    input:
        themes="results/tables/theme_prevalence.csv",
        strategies="results/tables/strategy_prevalence.csv",
    output:
        **fig_out("theme_prevalence", "Themes"),
    log:
        "results/logs/fig_theme_prevalence.log",
    benchmark:
        "results/bench/rules/fig_theme_prevalence.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_theme_prevalence.py"


rule fig_theme_difficulty:
    input:
        tests="results/tables/themes_vs_difficulty.csv",
    output:
        **fig_out("themes_vs_difficulty", "Themes"),
    log:
        "results/logs/fig_theme_difficulty.log",
    benchmark:
        "results/bench/rules/fig_theme_difficulty.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        alpha=config["figures"]["fdr_alpha"],
    script:
        "../../scripts/fig_theme_difficulty.py"


rule fig_ratings:
    input:
        attempts="results/features/attempts.csv",
    output:
        **fig_out("ratings", "Ratings"),
    log:
        "results/logs/fig_ratings.log",
    benchmark:
        "results/bench/rules/fig_ratings.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_ratings.py"


rule trajectories:
    input:
        events="results/ingest/events.parquet",
        puzzles="results/ingest/puzzles.parquet",
    output:
        table="results/figures/solve_trajectories.csv",
    log:
        "results/logs/trajectories.log",
    benchmark:
        "results/bench/rules/trajectories.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        step_s=config["figures"]["trajectory_step_s"],
    script:
        "../../scripts/trajectories.py"


rule fig_trajectories:
    input:
        table="results/figures/solve_trajectories.csv",
    output:
        **fig_out("solve_trajectories", "Ratings"),
    log:
        "results/logs/fig_trajectories.log",
    benchmark:
        "results/bench/rules/fig_trajectories.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        max_minutes=config["figures"]["trajectory_max_minutes"],
    script:
        "../../scripts/fig_trajectories.py"


FIGURES.extend(
    expand(
        "results/figures/{name}.{ext}",
        name=[
            "pause_gaps",
            "bt_strengths",
            "bt_rank_vs_metrics",
            *(["theme_prevalence", "themes_vs_difficulty"] if HAS_THEMES else []),
            "ratings",
            "solve_trajectories",
        ],
        ext=["png", "pdf"],
    )
)
