"""What the study report shows: every table and figure of a results folder, with its title, its
section and the caption template that describes it (``workflow/report/<caption>.rst``).

The workflow's rules name the same caption templates in their ``report(...)`` outputs; a test
keeps the two lists in step (every caption template has an entry here).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One table or figure of the report.

    ``pattern``: path relative to the results folder (a glob: ``*`` matches a pool's name or an
    alignment); ``caption``: stem of the caption template; ``title``: what the report calls it;
    ``section``: key of :data:`SECTIONS`.
    """

    pattern: str
    caption: str
    title: str
    section: str

    @property
    def kind(self) -> str:
        """``"figure"`` for a PNG, ``"json"`` for a JSON record, else ``"table"`` (a CSV)."""
        if self.pattern.endswith(".png"):
            return "figure"
        if self.pattern.endswith(".json"):
            return "json"
        return "table"


#: section key -> heading, in the order the report shows them
SECTIONS: dict[str, str] = {
    "ingest": "Participants, attempts and exclusions",
    "pauses": "Pauses",
    "features": "Behaviour per attempt",
    "ratings": "Difficulty ratings",
    "sat": "SAT metrics",
    "ranking": "Ranking and Table 1",
    "expertise": "Expertise and adjusted difficulty",
    "models": "Mixed models",
    "regressions": "Behaviour regressions",
    "themes": "Themes",
    "pool": "Puzzle pool",
    "simulation": "Simulation: power and recovery",
    "design": "Designing the next study",
    "errata": "Errata",
}

E = Entry
ENTRIES: tuple[Entry, ...] = (
    E("ingest/participants.csv", "ingest_participants", "Participants", "ingest"),
    E("ingest/attempts.csv", "ingest_attempts", "Attempts", "ingest"),
    E("ingest/ratings.csv", "ingest_ratings", "Ratings", "ingest"),
    E("ingest/ledger.csv", "ingest_ledger", "Exclusion ledger", "ingest"),
    E("pauses/threshold.json", "pauses_threshold", "Pause threshold and mixture fits", "pauses"),
    E(
        "figures/pause_gaps.png",
        "fig_pause_gaps",
        "Gaps between interactions and the pause mixture",
        "pauses",
    ),
    E(
        "tables/pause_order_dependence.csv",
        "pause_order_dependence",
        "Pause threshold under other orders of the gaps",
        "pauses",
    ),
    E("features/attempts.csv", "features_attempts", "Behavioural features per attempt", "features"),
    E("figures/ratings.png", "fig_ratings", "Difficulty ratings", "ratings"),
    E("figures/solve_trajectories.png", "fig_solve_trajectories", "Solve trajectories", "ratings"),
    E("sat/metrics.csv", "sat_metrics", "SAT solver statistics per puzzle", "sat"),
    E("sat/uniqueness.csv", "sat_uniqueness", "Uniqueness of each puzzle's solution", "sat"),
    E(
        "sat/published_check.csv",
        "sat_published_check",
        "SAT statistics against the published ones",
        "sat",
    ),
    E("sat/line_metrics.csv", "line_metrics", "Line-solver metrics", "sat"),
    E("tables/table1_spearman.csv", "table1", "Table 1: difficulty and SAT metrics", "ranking"),
    E("tables/table1_erratum.csv", "table1_erratum", "Table 1, corrected join only", "ranking"),
    E("tables/bt_strengths.csv", "bt_strengths", "Bradley-Terry difficulty strengths", "ranking"),
    E("figures/bt_strengths.png", "fig_bt_strengths", "Bradley-Terry strengths", "ranking"),
    E(
        "figures/bt_rank_vs_metrics*.png",
        "fig_bt_rank_vs_metrics",
        "Difficulty against SAT metrics",
        "ranking",
    ),
    E("tables/expertise.csv", "expertise", "Expertise scores", "expertise"),
    E(
        "tables/expertise_diagnostics.csv",
        "expertise_diagnostics",
        "Expertise composite: diagnostics",
        "expertise",
    ),
    E(
        "tables/expertise_loadings.csv",
        "expertise_loadings",
        "Expertise items: loadings",
        "expertise",
    ),
    E(
        "tables/expertise_dimension_correlations.csv",
        "expertise_dimension_correlations",
        "Correlations between expertise dimensions",
        "expertise",
    ),
    E(
        "tables/adjustment_models.csv",
        "adjustment_models",
        "Difficulty adjustment models",
        "expertise",
    ),
    E(
        "tables/adjusted_difficulty.csv",
        "adjusted_difficulty",
        "Order- and expertise-adjusted difficulty",
        "expertise",
    ),
    E(
        "tables/adjusted_difficulty_vs_sat.csv",
        "adjusted_difficulty_vs_sat",
        "Adjusted difficulty and SAT metrics",
        "expertise",
    ),
    E(
        "tables/behaviour_models.csv",
        "behaviour_models",
        "Behaviour and SAT metrics: mixed models",
        "models",
    ),
    E(
        "tables/moderation.csv",
        "moderation",
        "Difficulty, SAT metric and expertise: moderation models",
        "models",
    ),
    E("tables/simple_slopes.csv", "simple_slopes", "Simple slopes by expertise", "models"),
    E(
        "figures/moderation_simple_slopes*.png",
        "fig_moderation_simple_slopes",
        "Simple slopes of the moderation",
        "models",
    ),
    E(
        "tables/behaviour_models_raw.csv",
        "behaviour_models_raw",
        "Behaviour models on the raw measures",
        "models",
    ),
    E(
        "tables/moderation_raw.csv",
        "moderation_raw",
        "Moderation models on the raw ratings",
        "models",
    ),
    E(
        "tables/moderation_maximal.csv",
        "moderation_maximal",
        "Moderation with maximal random effects",
        "models",
    ),
    E(
        "tables/behaviour_maximal.csv",
        "behaviour_maximal",
        "Behaviour models with maximal random effects",
        "models",
    ),
    E(
        "tables/moderation_ordinal.csv",
        "moderation_ordinal",
        "Moderation as an ordinal (cumulative-link) model",
        "models",
    ),
    E(
        "tables/moderation_conclusion.csv",
        "moderation_conclusion",
        "How the moderation conclusion moves between models",
        "models",
    ),
    E(
        "tables/threshold_sensitivity.csv",
        "threshold_sensitivity",
        "Sensitivity to the pause threshold",
        "models",
    ),
    E(
        "figures/threshold_sensitivity*.png",
        "fig_threshold_sensitivity",
        "Sensitivity to the pause threshold",
        "models",
    ),
    E(
        "tables/behaviour_pooled.csv",
        "behaviour_pooled",
        "Difficulty on behaviour, pooled",
        "regressions",
    ),
    E(
        "tables/behaviour_per_puzzle.csv",
        "behaviour_per_puzzle",
        "Difficulty on behaviour, per puzzle",
        "regressions",
    ),
    E(
        "tables/behaviour_vif.csv",
        "behaviour_vif",
        "Variance inflation of the behaviour predictors",
        "regressions",
    ),
    E(
        "tables/behaviour_on_sat.csv",
        "behaviour_on_sat",
        "SAT metrics on behaviour",
        "regressions",
    ),
    E(
        "tables/behaviour_moderation.csv",
        "behaviour_moderation",
        "Behavioural moderation models",
        "regressions",
    ),
    E(
        "tables/themes_vs_difficulty.csv",
        "themes_vs_difficulty",
        "Themes and reported difficulty",
        "themes",
    ),
    E(
        "tables/themes_convergent.csv",
        "themes_convergent",
        "Themes and behaviour: convergent validity",
        "themes",
    ),
    E(
        "tables/themes_behaviour.csv",
        "themes_behaviour",
        "Every theme against every behaviour, within participants",
        "themes",
    ),
    E("tables/codebook_examples.csv", "codebook_examples", "Codebook examples", "themes"),
    E("figures/theme_prevalence.png", "fig_theme_prevalence", "Theme prevalence", "themes"),
    E(
        "figures/themes_vs_difficulty.png",
        "fig_themes_vs_difficulty",
        "Themes and reported difficulty",
        "themes",
    ),
    E(
        "tables/sat_metric_correlation.csv",
        "sat_metric_correlation",
        "Correlations between SAT metrics",
        "pool",
    ),
    E(
        "tables/selection_representativeness.csv",
        "selection_representativeness",
        "How representative the served puzzles are of the pool",
        "pool",
    ),
    E("*/selected.csv", "pool_selected", "Puzzles selected from the pool", "pool"),
    E("tables/power.csv", "power_table", "Power of the design", "simulation"),
    E("figures/power.png", "power_figure", "Power of the design", "simulation"),
    E("tables/recovery.csv", "recovery", "Parameter recovery on simulated studies", "simulation"),
    E("design/tables/design_power.csv", "design_power", "Power of the planned study", "design"),
    E(
        "design/figures/design_power_curve.png",
        "design_power_curve",
        "Power over participants and over puzzles",
        "design",
    ),
    E(
        "design/tables/design_criterion.csv",
        "design_criterion",
        "Information of the puzzle selection (D-criterion)",
        "design",
    ),
    E("design/tables/design_balance.csv", "design_balance", "Schedule balance", "design"),
    E(
        "design/figures/design_balance.png",
        "design_balance_figure",
        "Schedule balance beside the study's",
        "design",
    ),
    E("tables/errata.csv", "errata", "Errata: every published number that changes", "errata"),
)
del E

__all__ = ["ENTRIES", "SECTIONS", "Entry"]
