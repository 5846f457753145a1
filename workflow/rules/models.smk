# Stage: models. Crossed-random-effects mixed models (METHODS 9): behaviour ~ SAT metric with a
# parametric bootstrap, final difficulty ~ metric x expertise with simple slopes, and the
# pause-threshold sensitivity table (pause summaries, correlations and the pause models at every
# threshold of `pauses.sensitivity_s` plus the used and fitted thresholds). Library:
# nonolab.stats.mixed_models (tables), nonolab.stats.lmm (engine), nonolab.stats.sensitivity.


# The preset's published pool-ordered statistics table drives the published alignment.
MODELS_POOL = PUBLISHED_POOL_STATISTICS
MODELS_INPUT = {
    "attempts": "results/features/attempts.csv",
    "metrics": "results/sat/metrics.csv",
    **({"pool_statistics": MODELS_POOL} if MODELS_POOL else {}),
}
# Seed of the parametric bootstrap: `models.seed`, else the master seed.
MODELS_SEED = (
    config["seed"] if config["models"].get("seed") is None else config["models"]["seed"]
)
# Covariate options (keyword arguments of nonolab.stats.mixed_models.study_covariates).
MODELS_COVARIATES = dict(
    solver=config["models"]["solver"],
    encoding=config["models"]["encoding"],
    metrics=config["models"]["metrics"],
    metric_transform=config["models"]["metric_transform"],
)


rule behaviour_models:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/behaviour_models.csv",
            caption="../report/behaviour_models.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/behaviour_models.log",
    benchmark:
        "results/bench/rules/behaviour_models.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        covariates=MODELS_COVARIATES,
        # Keyword arguments of nonolab.stats.mixed_models.behaviour_models.
        models=dict(
            behaviours=config["models"]["behaviours"],
            n_boot=config["models"]["bootstrap"],
            seed=MODELS_SEED,
            satterthwaite=config["models"]["satterthwaite"],
        ),
    script:
        "../../scripts/models.py"


rule moderation:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/moderation.csv",
            caption="../report/moderation.rst",
            category="Mixed models",
        ),
        slopes=report(
            "results/tables/simple_slopes.csv",
            caption="../report/simple_slopes.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/moderation.log",
    benchmark:
        "results/bench/rules/moderation.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        covariates=MODELS_COVARIATES,
        outcome=config["models"]["moderation"]["outcome"],
        at_sd=config["models"]["moderation"]["at_sd"],
    script:
        "../../scripts/moderation.py"


# The paper's scale: the metric entered raw (counts), no bootstrap. Under the published
# alignment these are the published mixed-model and moderation tables, recomputed.
MODELS_COVARIATES_RAW = dict(MODELS_COVARIATES, metric_transform="raw")


rule behaviour_models_raw:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/behaviour_models_raw.csv",
            caption="../report/behaviour_models_raw.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/behaviour_models_raw.log",
    benchmark:
        "results/bench/rules/behaviour_models_raw.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        covariates=MODELS_COVARIATES_RAW,
        models=dict(
            behaviours=config["models"]["behaviours"],
            n_boot=0,
            seed=MODELS_SEED,
            satterthwaite=config["models"]["satterthwaite"],
        ),
    script:
        "../../scripts/models.py"


rule moderation_raw:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/moderation_raw.csv",
            caption="../report/moderation_raw.rst",
            category="Mixed models",
        ),
        slopes="results/tables/simple_slopes_raw.csv",
    log:
        "results/logs/moderation_raw.log",
    benchmark:
        "results/bench/rules/moderation_raw.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        covariates=MODELS_COVARIATES_RAW,
        outcome=config["models"]["moderation"]["outcome"],
        at_sd=config["models"]["moderation"]["at_sd"],
    script:
        "../../scripts/moderation.py"


# The models a reviewer asks for: the maximal random-effects structure the design supports,
# reduced by a fixed rule when singular (nonolab.stats.maximal_models), Satterthwaite and
# Kenward-Roger df, LRT and its parametric bootstrap (`models.maximal_bootstrap` draws, else
# `models.bootstrap`; about 0.5 s of CPU per 100 draws of one test on the public study), BH-FDR over the
# metrics. Main table: the paper's raw metric scale; the steps table adds nonolab's transform.
rule moderation_maximal:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/moderation_maximal.csv",
            caption="../report/moderation_maximal.rst",
            category="Mixed models",
        ),
        steps="results/tables/moderation_maximal_steps.csv",
    log:
        "results/logs/moderation_maximal.log",
    benchmark:
        "results/bench/rules/moderation_maximal.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        covariates=MODELS_COVARIATES_RAW,
        transforms=["raw", config["models"]["metric_transform"]],
        outcome=config["models"]["moderation"]["outcome"],
        n_boot=config["models"].get("maximal_bootstrap", config["models"]["bootstrap"]),
        seed=MODELS_SEED,
    script:
        "../../scripts/moderation_maximal.py"


# The same for behaviour ~ metric: by-participant slopes for the metric (a puzzle-level metric
# cannot vary within a puzzle), no bootstrap (as behaviour_models_raw).
rule behaviour_maximal:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/behaviour_maximal.csv",
            caption="../report/behaviour_maximal.rst",
            category="Mixed models",
        ),
        steps="results/tables/behaviour_maximal_steps.csv",
    log:
        "results/logs/behaviour_maximal.log",
    benchmark:
        "results/bench/rules/behaviour_maximal.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        covariates=MODELS_COVARIATES_RAW,
        transforms=["raw", config["models"]["metric_transform"]],
        behaviours=config["models"]["behaviours"],
        n_boot=0,
        seed=MODELS_SEED,
    script:
        "../../scripts/behaviour_maximal.py"


rule threshold_sensitivity:
    input:
        **MODELS_INPUT,
        gaps="results/pauses/gaps.csv",
        threshold="results/pauses/threshold.json",
        strengths="results/tables/bt_strengths.csv",
    output:
        table=report(
            "results/tables/threshold_sensitivity.csv",
            caption="../report/threshold_sensitivity.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/threshold_sensitivity.log",
    benchmark:
        "results/bench/rules/threshold_sensitivity.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        covariates=MODELS_COVARIATES,
        thresholds=config["pauses"]["sensitivity_s"],
        rating=config["ranking"]["rating"],
    script:
        "../../scripts/sensitivity.py"


rule fig_simple_slopes:
    input:
        slopes="results/tables/simple_slopes.csv",
    output:
        png=report(
            "results/figures/moderation_simple_slopes.png",
            caption="../report/fig_moderation_simple_slopes.rst",
            category="Mixed models",
        ),
        pdf="results/figures/moderation_simple_slopes.pdf",
    log:
        "results/logs/fig_simple_slopes.log",
    benchmark:
        "results/bench/rules/fig_simple_slopes.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_simple_slopes.py"


rule fig_threshold_sensitivity:
    input:
        table="results/tables/threshold_sensitivity.csv",
        threshold="results/pauses/threshold.json",
    output:
        png=report(
            "results/figures/threshold_sensitivity.png",
            caption="../report/fig_threshold_sensitivity.rst",
            category="Mixed models",
        ),
        pdf="results/figures/threshold_sensitivity.pdf",
    log:
        "results/logs/fig_threshold_sensitivity.log",
    benchmark:
        "results/bench/rules/fig_threshold_sensitivity.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../../scripts/fig_threshold_sensitivity.py"


ALL_TARGETS.extend(
    [
        "results/tables/behaviour_models.csv",
        "results/tables/moderation.csv",
        "results/tables/simple_slopes.csv",
        "results/tables/behaviour_models_raw.csv",
        "results/tables/moderation_raw.csv",
        "results/tables/moderation_maximal.csv",
        "results/tables/behaviour_maximal.csv",
        "results/tables/threshold_sensitivity.csv",
    ]
)
FIGURES.extend(
    [
        "results/figures/moderation_simple_slopes.png",
        "results/figures/threshold_sensitivity.png",
    ]
)


# Ordinal sensitivity analysis of the moderation model (final difficulty is a 1-5 rating): a
# logit cumulative-link mixed model (nonolab.stats.clmm, cross-checked against R ordinal::clmm)
# on the paper's metric scale, and the table of how the moderation conclusion moves from the
# published table to this model (nonolab.stats.conclusion).
MODERATION_PUBLISHED = study_path("published.moderation_expertise")


rule moderation_ordinal:
    input:
        **MODELS_INPUT,
    output:
        table=report(
            "results/tables/moderation_ordinal.csv",
            caption="../report/moderation_ordinal.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/moderation_ordinal.log",
    benchmark:
        "results/bench/rules/moderation_ordinal.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        covariates=dict(MODELS_COVARIATES, metric_transform="raw"),
        outcome=config["models"]["moderation"]["outcome"],
    script:
        "../../scripts/moderation_ordinal.py"


rule moderation_conclusion:
    input:
        **({"published": MODERATION_PUBLISHED} if MODERATION_PUBLISHED else {}),
        raw="results/tables/moderation_raw.csv",
        maximal="results/tables/moderation_maximal.csv",
        ordinal="results/tables/moderation_ordinal.csv",
    output:
        table=report(
            "results/tables/moderation_conclusion.csv",
            caption="../report/moderation_conclusion.rst",
            category="Mixed models",
        ),
    log:
        "results/logs/moderation_conclusion.log",
    benchmark:
        "results/bench/rules/moderation_conclusion.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        preset=PRESET_NAME,
        metrics=config["models"]["metrics"],
        moderator="expertise_composite",
        alpha=0.05,
    script:
        "../../scripts/moderation_conclusion.py"


ALL_TARGETS.extend(
    [
        "results/tables/moderation_ordinal.csv",
        "results/tables/moderation_conclusion.csv",
    ]
)
