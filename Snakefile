# nonolab: reproduce the Nonogram difficulty study from raw logs to report.
# Table of contents only: every stage lives in workflow/rules/<stage>.smk, every computation in
# src/nonolab/.
import os

from snakemake.utils import min_version

min_version("8.20")


# The config lives beside this Snakefile, whatever --directory says.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/sat.smk"
include: "workflow/rules/linesolve.smk"
include: "workflow/rules/pool.smk"
include: "workflow/rules/pauses.smk"
include: "workflow/rules/ranking.smk"
include: "workflow/rules/expertise_tables.smk"
include: "workflow/rules/published_pool.smk"
include: "workflow/rules/themes.smk"
include: "workflow/rules/errata.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/behaviour_regressions.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/design.smk"
include: "workflow/rules/measures.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
        FIGURES,


rule figures:
    input:
        FIGURES,


# The paper's analyses only (`snakemake paper`): ingest, features, pause threshold, SAT metrics,
# expertise, Bradley-Terry strengths, Table 1 and its erratum, behaviour models, moderation,
# themes (when the study has coded themes) and the errata table. No power analysis, recovery,
# puzzle pool, line metrics, threshold sensitivity or figures.
PAPER_TARGETS = [
    "results/ingest/summary.json",
    "results/features/attempts.csv",
    "results/pauses/threshold.json",
    "results/sat/metrics.csv",
    "results/sat/uniqueness.csv",
    *(["results/sat/published_check.csv"] if SAT_PUBLISHED else []),
    "results/tables/expertise.csv",
    "results/tables/expertise_reliability.json",
    "results/tables/expertise_diagnostics.csv",
    "results/tables/expertise_loadings.csv",
    "results/tables/expertise_dimension_correlations.csv",
    "results/tables/adjustment_models.csv",
    "results/tables/adjusted_difficulty.csv",
    "results/tables/adjusted_difficulty_vs_sat.csv",
    "results/tables/bt_strengths.csv",
    "results/tables/bt_lr_test.json",
    "results/tables/table1_spearman.csv",
    "results/tables/table1_erratum.csv",
    "results/tables/sat_metric_correlation.csv",
    "results/tables/sat_metric_vif.csv",
    "results/tables/selection_representativeness.csv",
    "results/tables/bt_vs_behaviour.csv",
    "results/tables/ordered_selections.json",
    *(["results/tables/codebook_examples.csv"] if HAS_CODEBOOK else []),
    "results/tables/behaviour_models.csv",
    "results/tables/moderation.csv",
    "results/tables/simple_slopes.csv",
    "results/tables/behaviour_models_raw.csv",
    "results/tables/moderation_raw.csv",
    "results/tables/behaviour_pooled.csv",
    *(
        [
            "results/tables/themes_vs_difficulty.csv",
            "results/tables/theme_prevalence.csv",
            "results/tables/strategy_prevalence.csv",
            "results/tables/themes_convergent.csv",
        ]
        if HAS_THEMES  # coded themes are optional (common.smk)
        else []
    ),
    "results/tables/errata.csv",
]


rule paper:
    input:
        PAPER_TARGETS,
