# Stage: themes. Coded free-text answers: theme tests, prevalence, convergent checks (METHODS 10).


rule themes:
    input:
        coded=CODED_RESPONSES or "(the preset names no coded-responses file)",
        attempts="results/features/attempts.csv",
        events="results/ingest/events.parquet",
        participants="results/ingest/participants.csv",
    output:
        tests=report(
            "results/tables/themes_vs_difficulty.csv",
            caption="../report/themes_vs_difficulty.rst",
            category="Themes",
        ),
        theme_prevalence="results/tables/theme_prevalence.csv",
        strategy_prevalence="results/tables/strategy_prevalence.csv",
        convergent=report(
            "results/tables/themes_convergent.csv",
            caption="../report/themes_convergent.rst",
            category="Themes",
        ),
        behaviour=report(
            "results/tables/themes_behaviour.csv",
            caption="../report/themes_behaviour.rst",
            category="Themes",
        ),
    log:
        "results/logs/themes.log",
    benchmark:
        "results/bench/rules/themes.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        coded_path=PRESET.get("themes", {}).get("coded_responses"),
        convergent=config["themes"]["convergent"],
    script:
        "../../scripts/themes.py"


if HAS_THEMES:  # coded themes are optional (common.smk)
    ALL_TARGETS.extend(
        [
            "results/tables/themes_vs_difficulty.csv",
            "results/tables/theme_prevalence.csv",
            "results/tables/strategy_prevalence.csv",
            "results/tables/themes_convergent.csv",
            "results/tables/themes_behaviour.csv",
        ]
    )
