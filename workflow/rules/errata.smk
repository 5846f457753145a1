# Stage: errata. One row per published number that changes, from the workflow's own tables and
# the preset's published files (he2026: Table 1, pause threshold, BT intervals, theme FDR).
# DAG: ranking, table1, pauses, pause_order, themes -> errata.


# The preset's published files the errata compare with (absent keys: that cause is skipped).
ERRATA_PUBLISHED = {
    key: path
    for key, path in {
        "table1": study_path("published.bt_vs_sat"),
        "pause_report": study_path("published.pause_report"),
        "bt_published": study_path("published.bt_strengths"),
    }.items()
    if path
}
# Published tables that nonolab recomputes under both SAT alignments: the preset's `published`
# key -> nonolab's table (nonolab.stats.errata.ALIGNED_TABLES gives their rows).
ERRATA_ALIGNED = {
    key: ours
    for key, ours in {
        "behavioral_vs_decisions": "results/tables/behaviour_on_sat.csv",
        "behavioral_vs_conflicts": "results/tables/behaviour_on_sat.csv",
        "moderation_behavioral": "results/tables/behaviour_moderation.csv",
        "behavioral_vs_sat_metrics": "results/tables/behaviour_models_raw.csv",
        "moderation_expertise": "results/tables/moderation_raw.csv",
        "selection_representativeness": "results/tables/selection_representativeness.csv",
        "order_adjustment": "results/tables/adjustment_models.csv",
        "expertise_adjustment": "results/tables/adjustment_models.csv",
        "adjusted_difficulty": "results/tables/adjusted_difficulty.csv",
        "adjusted_difficulty_vs_sat": "results/tables/adjusted_difficulty_vs_sat.csv",
    }.items()
    if study_path(f"published.{key}")
}
# The published theme-test FDR family: themes with at least this many coded responses.
ERRATA_THEMES_MIN_PRESENT = PRESET.get("published", {}).get("themes_fdr_min_present")
# The paper's count of distinct ordered puzzle selections served (he2026: 67), when stated.
ERRATA_SELECTIONS = PRESET.get("published", {}).get("ordered_selections_served")


# The errata rule's inputs: only those whose published counterpart the preset names.
ERRATA_INPUTS = {}
if "table1" in ERRATA_PUBLISHED:
    ERRATA_INPUTS |= {
        "table1": ERRATA_PUBLISHED["table1"],
        "table1_erratum": "results/tables/table1_erratum.csv",
    }
if "pause_report" in ERRATA_PUBLISHED:
    ERRATA_INPUTS |= {
        "pause_report": ERRATA_PUBLISHED["pause_report"],
        "threshold": "results/pauses/threshold.json",
        # the data-order check of the fits (rule pause_order): which evidence a row cites
        "order_check": "results/pauses/order_dependence.json",
    }
if "bt_published" in ERRATA_PUBLISHED:
    ERRATA_INPUTS |= {
        "bt_published": ERRATA_PUBLISHED["bt_published"],
        "strengths": "results/tables/bt_strengths.csv",
    }
for key, ours in ERRATA_ALIGNED.items():
    ERRATA_INPUTS |= {key: study_path(f"published.{key}"), f"ours_{key}": ours}
if ERRATA_THEMES_MIN_PRESENT is not None:
    ERRATA_INPUTS["themes"] = "results/tables/themes_vs_difficulty.csv"
if ERRATA_SELECTIONS is not None:
    ERRATA_INPUTS["selections"] = "results/tables/ordered_selections.json"


rule errata:
    input:
        **ERRATA_INPUTS,
    output:
        table=report(
            "results/tables/errata.csv",
            caption="../report/errata.rst",
            category="Errata",
        ),
    log:
        "results/logs/errata.log",
    benchmark:
        "results/bench/rules/errata.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        preset=PRESET_NAME,
        published=sorted(
            ({"bt_published": "bt_strengths"}.get(k, k) for k in ERRATA_PUBLISHED)
        ),
        aligned=sorted(ERRATA_ALIGNED),
        themes_min_present=ERRATA_THEMES_MIN_PRESENT,
        selections_published=ERRATA_SELECTIONS,
        alpha=config["errata"]["alpha"],
    script:
        "../../scripts/errata.py"


ALL_TARGETS.append("results/tables/errata.csv")
