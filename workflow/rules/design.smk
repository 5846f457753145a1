# Stage: design (not part of `all`). Plan the next study: puzzles chosen from a pool for the
# planned analyses (D-optimal), a balanced schedule, power of every planned analysis by
# simulating the exact design, plan.yaml and preregistration.md. Library: nonolab.design.
# `snakemake design` runs it on the workflow's pool (config design.pool null) or on any pool.


DESIGN = config.get("design", {})


DESIGN_POOL_INPUTS = (
    {
        "pool": "results/pool/pool.csv",
        "metrics": "results/pool/metrics.csv",
        "excluded": "results/pool/excluded.csv",
    }
    if not DESIGN.get("pool")
    else {
        "pool": DESIGN["pool"],
        **({"metrics": DESIGN["pool_metrics"]} if DESIGN.get("pool_metrics") else {}),
    }
)
DESIGN_SCHEDULE = study_path("assignment_schedule")
# design.effects_from_results: the effect sizes come from this run's fits (nonolab.design.effects)
DESIGN_EFFECT_INPUTS = (
    {
        "moderation": "results/tables/moderation.csv",
        "behaviour_models": "results/tables/behaviour_models.csv",
        "table1": "results/tables/table1_spearman.csv",
        "sat_metrics": "results/sat/metrics.csv",
        "study_record": "results/ingest/study.json",
    }
    if DESIGN.get("effects_from_results")
    else {}
)


rule design_study:
    input:
        **DESIGN_POOL_INPUTS,
        **DESIGN_EFFECT_INPUTS,
    output:
        plan="results/design/plan.yaml",
        prereg="results/design/preregistration.md",
        power=report(
            "results/design/tables/design_power.csv",
            caption="../report/design_power.rst",
            category="Study design",
        ),
        curve="results/design/tables/design_power_curve.csv",
        criterion=report(
            "results/design/tables/design_criterion.csv",
            caption="../report/design_criterion.rst",
            category="Study design",
        ),
        balance=report(
            "results/design/tables/design_balance.csv",
            caption="../report/design_balance.rst",
            category="Study design",
        ),
        smallest="results/design/tables/design_smallest.csv",
        selection="results/design/tables/design_selection.csv",
        figure=report(
            "results/design/figures/design_power_curve.png",
            caption="../report/design_power_curve.rst",
            category="Study design",
        ),
        balance_figure=report(
            "results/design/figures/design_balance.png",
            caption="../report/design_balance_figure.rst",
            category="Study design",
        ),
    log:
        "results/logs/design.log",
    benchmark:
        "results/bench/rules/design_study.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        settings=DESIGN,
        # the workflow's pool folder, or the configured pool file
        pool=lambda wildcards, input: (
            input.pool if DESIGN.get("pool") else str(Path(input.pool).parent)
        ),
        study=STUDY,
        preset=PRESET_FILE,
        puzzle_file=PRESET["puzzle_file"],
        schedule=DESIGN_SCHEDULE,
        seed=config["seed"],
    script:
        "../../scripts/design.py"


rule design:
    input:
        "results/design/plan.yaml",
        "results/design/preregistration.md",
        "results/design/figures/design_power_curve.png",
