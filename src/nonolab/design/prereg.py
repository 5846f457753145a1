"""The pre-registration document (``preregistration.md``) of a planned study.

:func:`preregistration` writes it from the plan and the design's tables: hypotheses, the design
(puzzles with their hashes, schedule and its balance), primary and secondary analyses with their
exact models, tests and multiplicity families, the exclusion rules of the preset the study will
be analysed with, the stopping rule, the power table and curve, and every seed. Numbers come
from the tables; nothing is typed in by hand.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


def _md(text: Any) -> str:
    """Return ``text`` with Markdown's inline markup characters escaped (user strings)."""
    out = str(text)
    for ch in "\\`*_{}[]<>#|!":
        out = out.replace(ch, "\\" + ch)
    return out


def _p(v: Any, digits: int = 2) -> str:
    """Return a share or power rounded to what a few hundred replications support."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{float(v):.{digits}f}"


def _title(plan: Plan, s: Any) -> str:
    k, m = len(plan.puzzles), plan.puzzles_per_session
    n = plan.participants.get("planned")
    return (
        f"Does solver {s.primary_metric} predict how hard people find Nonogram puzzles? "
        f"A within-participant study of {k} puzzles ({m} per participant, {n} participants)"
    )


_DIRECTION = {"positive": "increases", "negative": "decreases", "zero": "does not change"}
_HARDER = {"positive": "harder", "negative": "easier", "zero": "neither harder nor easier"}
_PLURAL = {"positive": "increase", "negative": "decrease", "zero": "do not change"}


def hypotheses(s: Any) -> list[str]:
    """Return the hypotheses' lines, each direction the sign of the effect the analysis is
    powered for (:func:`nonolab.design.sanity.directions`), then a blank line."""
    from nonolab.design.sanity import directions

    d = directions(s)
    metric = s.primary_metric
    return [
        f"* **H1 (primary).** Puzzles that need more solver {metric} (MiniSat22, block-start "
        f"encoding) are perceived as {_HARDER[d['H1']]}: the "
        "Spearman correlation between the puzzles' Bradley-Terry difficulty (from final "
        f"ratings) and {metric} is {d['H1']}. The test is two-sided.",
        f"* **H2 (secondary).** The final difficulty rating {_DIRECTION[d['H2_rating']]} with "
        f"{metric}, and the behaviours (pauses, time to solve, errors, hints) "
        f"{_PLURAL[d['H2_behaviour']]} with it (crossed random intercepts; two-sided).",
        f"* **H3 (secondary).** Expertise moderates the effect of {metric} on the final "
        f"difficulty rating; the planned interaction is {d['H3']} (two-sided).",
        "",
    ]


def selection_line(selection: Mapping[str, Any]) -> str:
    """Return the design's sentence on how the puzzles were chosen, from the plan's
    ``selection`` record only (the criterion that chose them, over the metrics or measures it
    used, with the tie cap when it applied), so that it cannot contradict ``plan.yaml``."""
    cid = str(selection.get("criterion_id", "")) or "not recorded"
    variables = ", ".join(_md(str(m)) for m in selection.get("metrics", []))
    scale = (
        "each on its analysis scale, standardised over the eligible puzzles where it is defined"
        if cid == "discriminating"
        else "log1p, standardised over the eligible pool"
    )
    kind = "measures" if cid == "discriminating" else "metrics"
    return (
        f"* Puzzles: chosen from the pool by the criterion {_md(cid)}: "
        f"{_md(str(selection.get('criterion', '')))}; over the "
        f"{kind} {variables} ({scale}). Eligibility: "
        f"{_constraints(selection.get('constraints', {}))}."
    )


def preregistration(
    plan: Plan,
    settings: Any,
    power: pd.DataFrame,
    curve: pd.DataFrame,
    criterion: pd.DataFrame,
    balance: pd.DataFrame,
    smallest: pd.DataFrame,
    reference_preset: str | Path | None = None,
    warnings: Sequence[str] = (),
) -> str:
    """Return the pre-registration as Markdown, in the sections of the OSF Preregistration
    template (AsPredicted's questions within them): data collection, hypotheses, dependent
    variables (how ratings, pauses, behaviours and expertise are measured), design, analyses
    (with the conventions that decide what counts as significant and their shares), outliers
    and exclusions, sample size (power with Monte-Carlo intervals, the estimand, the effect
    sizes beside the public study's fits, warnings), sample and recruitment, other (curves,
    seeds). Numbers are rounded to what they support. ``settings`` is the
    :class:`~nonolab.design.study.DesignSettings` the design ran with; ``warnings`` those of
    :func:`nonolab.design.sanity.effect_checks`."""
    from nonolab.design.sanity import effect_table
    from nonolab.design.schedule import balance_text

    s = settings
    n_plan = plan.participants.get("planned")
    prim = next(a for a in plan.analyses if a["role"] == "primary")
    lines = [
        f"# {_md(_title(plan, s))}",
        "",
        f"Plan `{_md(plan.name)}`, written by {_md(plan.created_by or 'nonolab design')} from "
        "`plan.yaml`. Sections follow the OSF Preregistration template; every number comes "
        "from the design's tables (`tables/`), rounded to what it supports.",
        "",
        "## 1. Data collection",
        "",
        "No data have been collected for this study when this plan is registered (the "
        "researcher confirms this on registering). The plan fixes the puzzles, the order in "
        "which sessions serve them and the number of participants before any data exist.",
        "",
        "## 2. Hypotheses",
        "",
        *hypotheses(s),
        "Each direction is the sign of the effect size the study is powered for (section 7).",
        "",
        "## 3. Dependent variables and how they are measured",
        "",
        "* **Final difficulty rating**: the 1-5 rating a participant gives in the survey after "
        "each puzzle (retrospective; a skipped puzzle or a missing answer has none).",
        "* **Bradley-Terry difficulty** (primary): within a participant, each pair of rated "
        "puzzles is one comparison (the higher rating wins; a tie gives half a win to each); "
        "the puzzles' log-strengths are fitted over all comparisons.",
        "* **Pauses**: the gaps between consecutive player actions (moves, drags, hints, "
        "checks, resets, undos, skips) within a puzzle's window, from the previous survey to "
        "this puzzle's survey. A pause is a gap longer than a threshold fitted to the study's "
        "own gaps: a three-component mixture of log-normal distributions is fitted to all "
        "positive gaps and the threshold is where the posterior of the slowest component "
        "equals that of the middle one (2.36 s in the public study). The behaviour is the "
        "number of pauses per attempt.",
        "* **Time to solve, errors, hints**: per attempt, from the same logs.",
        "* **Expertise composite**: the mean of six pre-survey items (Nonogram skill and puzzle "
        "skill on 1-10; how often Nonograms and puzzles are played, never/few/many/regular as "
        "0-3; how many Nonogram sizes and logic-puzzle kinds the participant knows), each "
        "z-scored over participants (population SD), the mean re-standardised.",
        "",
        "## 4. Conditions and design",
        "",
        f"* Within-participant: every participant solves {plan.puzzles_per_session} of the "
        f"{len(plan.puzzles)} puzzles in one session, in the order the schedule gives; there "
        "is no between-participant condition.",
        selection_line(plan.selection),
        f"* Schedule ({plan.schedule_extra.get('method')}): blocks of {plan.block_size} "
        "sessions; within each block every puzzle is served once in every position.",
        f"* Achieved balance at the planned {n_plan} sessions: "
        + balance_text(_row(balance, "planned: all sessions")),
    ]
    last = balance[balance["design"].astype(str).str.startswith("schedule:")]
    if len(last):
        lines.append(
            "* If the study ran on past the plan, the schedule stays balanced at every whole "
            f"block; at its end: {balance_text(last.iloc[-1].to_dict())}"
        )
    for _, r in balance[balance["design"].astype(str).str.contains("actually served")].iterrows():
        lines.append(
            f"* For comparison, the reference study's sessions as served: "
            f"{balance_text(r.to_dict())}"
        )
    lines += ["", "### Puzzles", ""]
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
    lines += [
        to_markdown(_criterion_view(criterion)),
        "",
        "D: the straight-line D-criterion per puzzle (comparable across selections); "
        "efficiency: D over that of the straight-line D-optimal selection.",
        "",
        "## 5. Analyses",
        "",
    ]
    for a in plan.analyses:
        lines += [
            f"### {_md(a['name'])} ({a['role']}; family: {_md(a.get('family', '-'))})",
            "",
            f"* Model: `{a['model']}`",
            f"* Test: {a['test']}; alpha {_fmt(a['alpha'])}.",
        ]
        pw = a.get("power", {})
        ns = pw.get("counted_not_significant")
        if ns:
            lines.append(
                f"* Counted as not significant when the test is undefined ({ns['reason']}): "
                f"{_p(ns['share'])} of the simulated studies at the planned design; the "
                "analysis reports such a result as undefined, with its reason."
            )
        if "boundary_share" in pw:
            lines.append(
                f"* A fit with a random-effect variance at 0 (the boundary; "
                f"{_p(pw['boundary_share'])} of simulated studies) has no Satterthwaite df in "
                f"this pipeline and counts as not significant"
                + (
                    " (the convention chosen for this plan)."
                    if s.boundary == "not_significant"
                    else "; this plan instead tests it as lmerTest does (the df of the model "
                    "without the zero component)."
                )
                + f" Power under lmerTest's convention: {_p(pw['power_lmertest_convention'])}."
            )
        lines.append("")
    lines += [
        "### Multiplicity",
        "",
        f"* The primary family holds one test ({prim['name']}): no correction.",
        "* Secondary families are each corrected by Benjamini-Hochberg (FDR 0.05) over their "
        "tests (metric effects: the rating model and the four behaviours x the three metrics; "
        "moderation: the three metrics).",
        "",
        "## 6. Outliers and exclusions",
        "",
        *[f"* {r}" for r in INGEST_RULES],
    ]
    extra = preset_exclusions(reference_preset)
    if extra:
        lines += [
            "* Reasons the reference study's preset gave for leaving sessions out, applied alike:",
            *[f"  * {_md(r)}" for r in extra],
        ]
    lines += [
        "* No other outliers are removed: every valid rating and attempt enters the analyses.",
        "",
        "## 7. Sample size",
        "",
        f"**{n_plan} participants**, one session each. "
        + _md(str(plan.participants.get("stopping_rule", ""))),
        "",
        "### Power",
        "",
        f"Simulated on the exact design (the schedule and puzzles above), missing-rating rate "
        f"{_fmt(s.missing)}, alpha {_fmt(s.alpha)}; every simulated study independent; 95% "
        "Monte-Carlo intervals (Wilson). 'Not significant: undefined' is the share of "
        "simulated studies counted as not significant because the test is undefined (no "
        "Bradley-Terry ranking, a boundary fit); 'lmerTest' is the power when boundary fits "
        "are tested as lmerTest tests them.",
        "",
        to_markdown(_power_view(power)),
        "",
        "### The estimand",
        "",
        f"The primary test is powered for rho = {_fmt(s.rho)}, the Spearman correlation "
        "between latent difficulty and the metric in the population of puzzles (the eligible "
        "pool). A study of the chosen puzzles estimates the correlation over those puzzles, "
        "whose expected value differs when the puzzles are not a random draw from the pool: ",
    ]
    est = (
        power[power.get("expected_sample_rho", pd.Series(dtype=float)).notna()]
        if ("expected_sample_rho" in power)
        else power.iloc[0:0]
    )
    parts = [
        f"{_md(r['design'])}: {_p(r['expected_sample_rho'])} (SD {_p(r['expected_sample_rho_sd'])})"
        for _, r in est.iterrows()
    ]
    lines[-1] += (
        "expected sample rho " + "; ".join(parts) + ". Compare a study's observed rho with "
        "these, not with the pool's rho."
        if parts
        else "not computed."
    )
    lines += [
        "",
        "### Effect sizes",
        "",
        to_markdown(
            pd.DataFrame(
                [
                    {
                        "effect": e.name,
                        "planned with": _p(e.used),
                        "public study's fit": _p(e.public, 3),
                        "source": e.source,
                    }
                    for e in effect_table(s)
                ]
            )
        ),
        "",
        *_effect_sources(s),
    ]
    if warnings:
        lines += ["### Warnings", "", *[f"* {_md(w)}" for w in warnings], ""]
    lines += [
        "## 8. Sample and recruitment",
        "",
        f"* Adults who consent on the platform; each takes part once (one session of "
        f"{plan.puzzles_per_session} puzzles after the tutorial). The {n_plan} sessions are "
        "served in schedule order.",
        "* The recruitment channel, the payment and the eligibility screen are the "
        "researcher's to state here before registering; the plan does not set them.",
        "",
        "## 9. Other",
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
        "### Seeds",
        "",
        *[f"* {k}: {v}" for k, v in plan.seeds.items()],
        "",
    ]
    return "\n".join(lines)


def _row(balance: pd.DataFrame, design: str) -> dict[str, Any]:
    return balance[balance["design"] == design].iloc[0].to_dict()


def _constraints(c: Mapping[str, Any]) -> str:
    parts = ["a unique solution" if c.get("unique") else "any number of solutions"]
    if c.get("size"):
        parts.append(f"size {c['size'][0]}x{c['size'][1]}")
    if c.get("line_solvable") is not None:
        parts.append("line-solvable" if c["line_solvable"] else "not line-solvable")
    lo, hi = (c.get("fill") or [0, 1])[:2]
    if (lo, hi) != (0, 1):
        parts.append(f"{_fmt(float(lo))}-{_fmt(float(hi))} of the cells filled")
    if c.get("drop_top"):
        parts.append(
            f"the {_fmt(100 * float(c['drop_top']))}% of the pool with the most "
            f"{c.get('drop_metric', 'conflicts')} left out"
        )
    return "; ".join(parts)


def _criterion_view(df: pd.DataFrame) -> pd.DataFrame:
    cols = {
        "selection": "selection",
        "n_puzzles": "K",
        "d_criterion": "D",
        "d_efficiency": "efficiency",
        "random_share_below": "random selections below",
        "distinct_values": "distinct values",
        "puzzles_sharing_a_value": "puzzles sharing a value",
    }
    out = df[[c for c in cols if c in df]].rename(columns=cols).copy()
    for c in ("D", "efficiency", "random selections below"):
        if c in out:
            out[c] = [_p(v) if v is not None and v == v else "-" for v in out[c]]
    return out


def _effect_sources(s: Any) -> list[str]:
    """Return the lines saying where each effect size came from (none: the defaults)."""
    if not s.effect_sources:
        return []
    from nonolab.design.effects import source_text

    return [
        "Effect sizes taken from a study's fitted models (`--effects-from`; a value given in "
        "`--effects` replaces the fitted one):",
        "",
        *[f"* {_md(source_text(e))}" for e in s.effect_sources],
        "",
    ]


def _power_view(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in df.iterrows():
        row: dict[str, Any] = {}
        for c in ("design", "curve"):
            if c in df:
                row[c] = r[c]
        row |= {
            "analysis": r["analysis"],
            "N": int(r["n_participants"]),
            "K": int(r["n_puzzles"]),
            "power": _p(r["power"]),
            "95% interval": f"{_p(r['ci_low'])}-{_p(r['ci_high'])}",
            "not significant: undefined": _p(r.get("undefined_share")),
            "boundary fits": _p(r.get("boundary_share")),
            "lmerTest": _p(r.get("power_lmertest")),
        }
        rows.append(row)
    return pd.DataFrame(rows)
