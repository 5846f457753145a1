"""The pre-registration names the criterion that actually chose the puzzles and never
contradicts plan.yaml: generated over the criterion options (criterion x tie cap x K, the
fallbacks of a K too small among them), and end to end over the CLI's options."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.cli import main
from nonolab.design.plan import load_plan
from nonolab.design.prereg import _md, selection_line
from nonolab.design.selection import (
    CRITERIA,
    Constraints,
    design_matrix,
    eligible,
    load_pool,
    select_puzzles,
)
from nonolab.design.study import CRITERION_TEXT, criterion_used, selection_record

_METRICS = ("conflicts", "decisions", "propagations")


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(CRITERIA),
    st.booleans(),
    st.integers(2, 30),
    st.integers(1, 3),
)
def test_the_design_sentence_names_the_criterion_used(criterion, spread, k, n_metrics) -> None:
    metrics = _METRICS[:n_metrics]
    used, ms = criterion_used(k, criterion, metrics)
    # what is used can be run: K at least the parameters of its design matrix
    q = 1 + len(ms) + (used == "d_quadratic")
    assert k >= q or (len(ms) == 1 and used == "d_linear")
    assert used == criterion or used == "d_linear"
    rec = selection_record(used, ms, spread)
    line = selection_line(rec)
    assert f"criterion {_md(used)}:" in line
    assert _md(CRITERION_TEXT[used]) in line
    assert ("share a value" in line) == spread
    assert f"metrics {', '.join(ms)} " in line
    # a criterion that was not used is not named
    for other in {*CRITERIA} - {used}:
        assert _md(CRITERION_TEXT[other]) not in line and f"criterion {_md(other)}:" not in line


def test_the_discriminating_record_replaces_the_d_optimal_one() -> None:
    """The discriminating selection's record writes over every key of the D-optimal one that
    the design sentence reads: the sentence names the measures, not the SAT metrics."""
    import numpy as np
    import pandas as pd

    from nonolab.design.discriminate import DesignDiscrimination

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(20, 2))
    disc = DesignDiscrimination(
        ("conflicts", "chain_rounds"), pd.DataFrame(Z), np.arange(20), Z,
        np.arange(8), np.arange(8, 16), 1.0,
    )  # fmt: skip
    rec = {**selection_record("d_quadratic", list(_METRICS), True), **disc.record()}
    line = selection_line(rec)
    assert "criterion discriminating:" in line and "measures conflicts, chain\\_rounds" in line
    assert "D-optimal" not in line and "share a value" not in line and "log1p" not in line


def _design(study, out, *extra: str) -> int:
    return main(
        [
            "design",
            "--pool", str(study / "nonograms10x10.txt"),
            "--pool-metrics", str(study / "nonogram_solver_stats.csv"),
            "--participants", "12", "--k-curve", "6",
            "--replications", "20", "--lmm-replications", "4", "--random-selections", "10",
            "--no-figures", "--out", str(out), *extra,
        ]
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra, want",
    [
        (("--puzzles", "12", "--criterion", "d_linear"), "d_linear"),
        (("--puzzles", "12", "--criterion", "d_quadratic"), "d_quadratic"),
        (("--puzzles", "12", "--criterion", "d_quadratic", "--allow-ties"), "d_quadratic"),
        # too few puzzles for three metrics and the curvature: the primary metric alone
        (("--puzzles", "4", "--per-session", "4", "--criterion", "d_quadratic"), "d_quadratic"),
    ],
)
def test_preregistration_names_the_criterion_of_plan_yaml(study_dir, tmp_path, extra, want):
    """End to end: the pre-registration's design sentence is the one of plan.yaml's
    selection record, which names the criterion that chose the puzzles: re-selecting with the
    recorded criterion and metrics gives exactly the plan's puzzles."""
    out = tmp_path / "d"
    assert _design(study_dir, out, *extra) == 0
    plan = load_plan(out / "plan.yaml")
    sel = plan.selection
    assert sel["criterion_id"] == want
    assert sel["spread"] == ("--allow-ties" not in extra)
    assert sel["metrics"] == (["conflicts"] if "4" in extra else list(_METRICS))
    text = (out / "preregistration.md").read_text(encoding="utf-8")
    assert selection_line(sel) in text
    assert text.count("* Puzzles: chosen from the pool by the criterion") == 1
    pool = load_pool(study_dir / "nonograms10x10.txt", study_dir / "nonogram_solver_stats.csv")
    el = eligible(pool, Constraints(**{**_constraints(sel["constraints"])}))
    design_matrix(el, sel["metrics"], want)  # the recorded criterion is runnable
    again = select_puzzles(
        el,
        len(plan.puzzles),
        sel["metrics"],
        seed=plan.seeds["selection"],
        criterion=want,
        distinct=sel["spread"],
    )
    assert sorted(el.iloc[again]["puzzle_hash"]) == sorted(p.puzzle_hash for p in plan.puzzles)


def _constraints(rec: dict) -> dict:
    return {
        **rec,
        "size": tuple(rec["size"]) if rec.get("size") else None,
        "fill": tuple(rec["fill"]),
    }


def _sign(v: float) -> str:
    return "positive" if v > 0 else "negative"


@pytest.mark.slow
@pytest.mark.parametrize("rho, slope, inter", list(itertools.product((0.5, -0.5), repeat=3)))
def test_stated_directions_are_the_planned_effects_signs(study_dir, tmp_path, rho, slope, inter):
    """Generated over the signs of rho, the rating and behaviour slope and the interaction (the
    behaviour slope the opposite of the rating's, so that the two H2 parts differ): every
    direction the pre-registration states is the sign of the number it says the study is
    planned for, in its own text and in plan.yaml (no 'H1 ... is positive' beside a rho of
    -0.7), and a contradiction between rho and the rating slope is a stated warning."""
    eff = tmp_path / "effects.yaml"
    eff.write_text(
        f"rating:\n  metric_strength: {slope}\n  interaction: {inter / 5}\n"
        f"behaviour:\n  slope: {-slope}\n",
        encoding="utf-8",
    )
    out = tmp_path / "d"
    args = ("--puzzles", "8", "--rho", str(rho), "--effects", str(eff))
    assert _design(study_dir, out, *args) == 0
    text = (out / "preregistration.md").read_text(encoding="utf-8")
    plan = load_plan(out / "plan.yaml")
    h1 = re.search(r"\*\*H1 \(primary\)\.\*\* .* is (positive|negative)\. ", text)
    powered = re.search(r"powered for rho = (-?[0-9.]+),", text)
    assert h1 and powered
    assert h1.group(1) == _sign(float(powered.group(1))) == _sign(rho)
    est = plan.analyses[0]["power"]["estimand"]
    assert h1.group(1) == _sign(float(est.split()[-1]))
    # H2 / H3 against the effect-size table the same text prints
    table = dict(re.findall(r"^\| ([a-z][^|]*?) +\| (-?[0-9.]+) ", text, flags=re.M))
    rating_slope = float(table["rating slope per SD of the metric"])
    assert f"The final difficulty rating {'increases' if rating_slope > 0 else 'decreases'}" in text
    word = "increase" if -slope > 0 else "decrease"
    assert f"hints) {word} with it" in text
    inter_used = float(table["metric x expertise interaction"])
    assert f"the planned interaction is {_sign(inter_used)}" in text
    assert _sign(inter_used) == _sign(inter)
    warned = "The effects contradict one another" in text
    assert warned == (_sign(rho) != _sign(rating_slope))
