# Stage: behaviour regressions. The published OLS analyses of behaviour (final difficulty on
# behaviour pooled and per puzzle, predictor VIFs, SAT metric on behaviour) and the behavioural
# moderation models (outcome ~ metric x expertise for final difficulty and each behaviour), on
# the paper's scale (metric as a raw count). Library: nonolab.stats.behaviour_regressions.
# Include after models.smk (uses MODELS_INPUT and MODELS_COVARIATES_RAW).


# Participants whose final ratings the published pooled OLS file lacks (preset; he2026:
# Michael-p11, whose log was saved before the post survey when that file was computed).
BEHAV_RATINGS_MISSING = PRESET.get("published", {}).get(
    "pooled_ols_ratings_missing", []
)


rule behaviour_ols:
    input:
        **MODELS_INPUT,
    output:
        pooled=report(
            "results/tables/behaviour_pooled.csv",
            caption="../report/behaviour_pooled.rst",
            category="Behaviour regressions",
        ),
        per_puzzle=report(
            "results/tables/behaviour_per_puzzle.csv",
            caption="../report/behaviour_per_puzzle.rst",
            category="Behaviour regressions",
        ),
        vif=report(
            "results/tables/behaviour_vif.csv",
            caption="../report/behaviour_vif.rst",
            category="Behaviour regressions",
        ),
        on_sat=report(
            "results/tables/behaviour_on_sat.csv",
            caption="../report/behaviour_on_sat.rst",
            category="Behaviour regressions",
        ),
    log:
        "results/logs/behaviour_ols.log",
    benchmark:
        "results/bench/rules/behaviour_ols.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        covariates=MODELS_COVARIATES_RAW,
        ratings_missing=BEHAV_RATINGS_MISSING,
    script:
        "../../scripts/behaviour_ols.py"


rule behaviour_moderation:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/behaviour_moderation.csv",
            caption="../report/behaviour_moderation.rst",
            category="Behaviour regressions",
        ),
    log:
        "results/logs/behaviour_moderation.log",
    benchmark:
        "results/bench/rules/behaviour_moderation.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        covariates=MODELS_COVARIATES_RAW,
        outcomes=[
            config["models"]["moderation"]["outcome"],
            *config["models"]["behaviours"],
        ],
    script:
        "../../scripts/behaviour_moderation.py"


BEHAVIOUR_REGRESSION_TABLES = [
    "results/tables/behaviour_pooled.csv",
    "results/tables/behaviour_per_puzzle.csv",
    "results/tables/behaviour_vif.csv",
    "results/tables/behaviour_on_sat.csv",
    "results/tables/behaviour_moderation.csv",
]
ALL_TARGETS.extend(BEHAVIOUR_REGRESSION_TABLES)
