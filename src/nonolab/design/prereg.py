"""The pre-registration document (``preregistration.md``) of a planned study.

:func:`preregistration` writes it from the plan and the design's tables: hypotheses, the design
(puzzles with their hashes, schedule and its balance), primary and secondary analyses with their
exact models, tests and multiplicity families, the exclusion rules of the preset the study will
be analysed with, the stopping rule, the power table and curve, and every seed. Numbers come
from the tables; nothing is typed in by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from nonolab.core.tables import to_markdown
from nonolab.design.plan import Plan

#: the ingest's own exclusion rules (docs/data-format.md), whatever the preset
INGEST_RULES = (
    "A participant without a session start or a required survey (the pre-survey and one "
    "survey after each attempt) is left out of every analysis (a row of the ingest ledger says "
    "why).",
    "A line of a log that is not valid, or a repeat of an earlier line, is not used (ledgered); "
    "the rest of the log is read.",
    "An attempt without a final rating (no post-survey, a skipped puzzle, the rating left out) "
    "is left out of the rating analyses (Bradley-Terry, rating and moderation models); it stays "
    "in the behaviour analyses.",
    "A log file listed by the preset as excluded, or matched by one of its exclude globs, is not "
    "read (ledgered with the preset's reason).",
    "Two files that give the same participant id stop the analysis until one is excluded.",
)


def preset_exclusions(preset_path: str | Path | None) -> list[str]:
    """Return the exclusion reasons a preset file states (``participants.files[].exclude`` and
    ``participants.exclude_globs[].reason``), in file order, each once; [] without a preset."""
    if preset_path is None or not Path(preset_path).is_file():
        return []
    data = yaml.safe_load(Path(preset_path).read_text(encoding="utf-8")) or {}
    part = data.get("participants", {}) or {}
    out: list[str] = []
    for row in part.get("files", []) or []:
        if "exclude" in row:
            out.append(str(row["exclude"]))
    for row in part.get("exclude_globs", []) or []:
        out.append(str(row.get("reason", row.get("glob"))))
    return list(dict.fromkeys(out))


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def preregistration(
    plan: Plan,
    settings: Any,
    power: pd.DataFrame,
    curve: pd.DataFrame,
    criterion: pd.DataFrame,
    balance: pd.DataFrame,
    smallest: pd.DataFrame,
    reference_preset: str | Path | None = None,
) -> str:
    """Return the pre-registration as Markdown (module docstring). ``settings`` is the
    :class:`~nonolab.design.study.DesignSettings` the design ran with."""
    s = settings
    n_plan = plan.participants.get("planned")
    prim = next(a for a in plan.analyses if a["role"] == "primary")
    lines = [
        f"# Pre-registration: {plan.name}",
        "",
        f"Written by {plan.created_by or 'nonolab design'} from `plan.yaml`; every number below "
        "comes from the design's tables (`tables/`).",
        "",
        "## Hypotheses",
        "",
        f"* **H1 (primary).** Puzzles that need more solver {s.primary_metric} (MiniSat22, "
        "block-start encoding) are perceived as harder: the Spearman correlation between the "
        f"puzzles' Bradley-Terry difficulty (from final ratings) and {s.primary_metric} is "
        f"positive. Planned for a population rho of {s.rho}.",
        f"* **H2 (secondary).** Final difficulty ratings and behaviour (pauses, time to solve, "
        f"errors, hints) increase with {s.primary_metric} (crossed random intercepts).",
        f"* **H3 (secondary).** Expertise moderates the effect of {s.primary_metric} on final "
        "difficulty (metric x expertise interaction).",
        "",
        "## Design",
        "",
        f"* {len(plan.puzzles)} puzzles, {plan.puzzles_per_session} per session, "
        f"{n_plan} participants (one session each).",
        f"* Puzzles chosen from the pool by the D-optimal criterion over "
        f"{', '.join(plan.selection.get('metrics', []))} (log1p, standardised over the eligible "
        f"pool); constraints: {plan.selection.get('constraints')}.",
        f"* Schedule: {plan.schedule_extra.get('method')}, blocks of {plan.block_size} sessions; "
        "within each block every puzzle is served once in every position.",
        "",
        "### Puzzles",
        "",
    ]
    prows = [
        {
            "id": p.id,
            "puzzle_hash": p.puzzle_hash[:12],
            "size": f"{p.puzzle.height}x{p.puzzle.width}",
            **{k: _fmt(v) for k, v in p.metrics.items()},
        }
        for p in plan.puzzles
    ]
    lines += [to_markdown(pd.DataFrame(prows)), "", "### Selection criterion", ""]
    lines += [to_markdown(criterion), "", "### Schedule balance", ""]
    lines += [to_markdown(balance), ""]
    lines += ["## Analyses", ""]
    for a in plan.analyses:
        lines += [
            f"### {a['name']} ({a['role']}; family: {a.get('family', '-')})",
            "",
            f"* Model: `{a['model']}`",
            f"* Test: {a['test']}; alpha {a['alpha']}.",
            f"* Settings: {_inline(a.get('settings', {}))}",
            "",
        ]
    lines += [
        "### Multiplicity",
        "",
        f"* The primary family holds one test ({prim['name']}): no correction.",
        "* Secondary families are each corrected by Benjamini-Hochberg (FDR 0.05) over their "
        "tests (metric effects: the rating model and the four behaviours x the three metrics; "
        "moderation: the three metrics).",
        "",
        "## Exclusions",
        "",
        *[f"* {r}" for r in INGEST_RULES],
    ]
    extra = preset_exclusions(reference_preset)
    if extra:
        lines += [
            "* Reasons the reference study's preset gave for leaving sessions out, applied alike:",
            *[f"  * {r}" for r in extra],
        ]
    lines += [
        "",
        "## Stopping rule",
        "",
        str(plan.participants.get("stopping_rule", "")),
        "",
        "## Power",
        "",
        f"Simulated on the exact design (schedule and puzzles above), missing-rating rate "
        f"{s.missing}, alpha {s.alpha}; Monte-Carlo 95% intervals (Wilson). Effect sizes: "
        f"rating model {_inline(s.rating.record())}; behaviour model "
        f"{_inline(s.behaviour.record())}.",
        "",
        *_effect_sources(s),
        to_markdown(_power_view(power)),
        "",
        "### Power curves",
        "",
        "![Power over participants and over puzzles](figures/design_power_curve.png)",
        "",
        to_markdown(_power_view(curve)),
        "",
        "### Smallest design",
        "",
        to_markdown(smallest),
        "",
        "## Seeds",
        "",
        *[f"* {k}: {v}" for k, v in plan.seeds.items()],
        "",
    ]
    return "\n".join(lines)


def _effect_sources(s: Any) -> list[str]:
    """Return the lines saying where each effect size came from (none: the defaults)."""
    if not s.effect_sources:
        return []
    from nonolab.design.effects import source_text

    return [
        "Effect sizes taken from a study's fitted models (`--effects-from`; a value given in "
        "`--effects` replaces the fitted one). The observed Spearman rho of a small study is a "
        "noisy estimate of the population value:",
        "",
        *[f"* {source_text(e)}" for e in s.effect_sources],
        "",
    ]


def _inline(d: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in d.items())


def _power_view(df: pd.DataFrame) -> pd.DataFrame:
    cols = [
        c
        for c in (
            "design",
            "curve",
            "analysis",
            "n_participants",
            "n_puzzles",
            "per_session",
            "effect",
            "replications",
            "power",
            "ci_low",
            "ci_high",
        )
        if c in df
    ]
    return df[cols]
