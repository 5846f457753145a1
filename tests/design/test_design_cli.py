"""``nonolab design`` end to end on the public study's pool (tiny settings)."""

from __future__ import annotations

import pandas as pd

from nonolab.cli import main
from nonolab.design.plan import load_plan
from nonolab.sat.puzzles import load_study_puzzles
from nonolab.study.presets import load_preset


def _run(study, out) -> int:
    return main(
        [
            "design",
            "--pool", str(study / "nonograms10x10.txt"),
            "--pool-metrics", str(study / "nonogram_solver_stats.csv"),
            "--puzzles", "12", "--participants", "12,24", "--k-curve", "6,12",
            "--replications", "60", "--lmm-replications", "20", "--random-selections", "50",
            "--reference-study", str(study), "--no-figures", "--out", str(out),
        ]
    )  # fmt: skip


def test_design_writes_a_plan_and_is_deterministic(study_dir, tmp_path, capsys) -> None:
    assert _run(study_dir, tmp_path / "a") == 0
    err = capsys.readouterr().err
    # not a terminal: one line per step and the effect-size warnings on stderr
    assert "design: power 1/" in err and "warning: Default effect sizes" in err
    a = tmp_path / "a"
    plan = load_plan(a / "plan.yaml")
    assert len(plan.puzzles) == 12 and plan.puzzles_per_session == 3
    assert len(plan.sessions) % plan.block_size == 0
    assert plan.analyses[0]["role"] == "primary" and "power" in plan.analyses[0]
    for a_ in plan.analyses:  # the conventions' shares are in the plan
        assert 0 <= a_["power"]["counted_not_significant"]["share"] <= 1
        if a_["kind"] != "spearman_bt":
            assert "power_lmertest_convention" in a_["power"] and "boundary_share" in a_["power"]
    prim = plan.analyses[0]["power"]
    assert -1 <= prim["expected_sample_rho"] <= 1 and "pool" in prim["estimand"]
    assert "not significant" in plan.analyses[1]["test"]
    text = (a / "preregistration.md").read_text()
    for section in ("## 1. Data collection", "## 2. Hypotheses", "## 3. Dependent variables",
                    "## 4. Conditions and design", "## 5. Analyses",
                    "## 6. Outliers and exclusions", "## 7. Sample size",
                    "## 8. Sample and recruitment", "## 9. Other", "### The estimand",
                    "### Effect sizes", "### Warnings", "**Pauses**",
                    "**Expertise composite**"):  # fmt: skip
        assert section in text, section
    assert "# Pre-registration: next-study" not in text and "{'" not in text
    assert "expected sample rho planned:" in text and "curved truth" in text
    assert "lmerTest" in text and "puzzle pairs meets in a session" in text
    # the reference is the sessions the public study served (exposures 28/36/29/34/31/43)
    bal = pd.read_csv(a / "tables" / "design_balance.csv")
    served = bal[bal["design"] == "paper: sessions actually served"].iloc[0]
    assert served["sessions"] == 67
    assert (served["exposures_min"], served["exposures_max"]) == (28, 43)
    blocks = bal[bal["design"].str.startswith("schedule:")]
    assert (
        blocks["sessions"].max() >= 600 and (blocks["position_min"] == blocks["position_max"]).all()
    )
    power = (a / "tables" / "design_power.csv").read_text()
    assert "paper,spearman_bt,67,6,3" in power
    crit = (a / "tables" / "design_criterion.csv").read_text()
    assert "paper_k6" in crit and "random_k12_median" in crit
    puzzles = load_study_puzzles(a / "study" / "nonograms_6.json")
    assert [p.hash for p in puzzles] == [p.puzzle_hash for p in plan.puzzles]
    assert load_preset(a / "study" / "preset.yaml").puzzles_per_session == 3
    assert _run(study_dir, tmp_path / "b") == 0
    for name in ("design_power.csv", "design_power_curve.csv", "design_criterion.csv",
                 "design_balance.csv", "design_selection.csv"):  # fmt: skip
        assert (a / "tables" / name).read_bytes() == (tmp_path / "b" / "tables" / name).read_bytes()
    assert (a / "plan.yaml").read_bytes() == (tmp_path / "b" / "plan.yaml").read_bytes()
