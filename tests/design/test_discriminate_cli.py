"""``nonolab design --discriminate`` end to end on the public study's pool (tiny settings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nonolab.cli import main
from nonolab.design.discriminate import measure_frame
from nonolab.design.plan import load_plan
from nonolab.design.prereg import selection_line
from nonolab.design.selection import load_pool


def _args(study, out, *extra: str) -> list[str]:
    return [
        "design",
        "--pool", str(study / "nonograms10x10.txt"),
        "--pool-metrics", str(study / "nonogram_solver_stats.csv"),
        "--puzzles", "12", "--participants", "12", "--k-curve", "12",
        "--replications", "40", "--lmm-replications", "10", "--random-selections", "20",
        "--allow-multiple", "--no-figures", "--out", str(out), *extra,
    ]  # fmt: skip


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own refusal
        return int(exc.code or 0)


@pytest.mark.slow
def test_discriminate_plans_the_contrast_and_decorrelates(study_dir, tmp_path) -> None:
    out = tmp_path / "d"
    args = _args(study_dir, out, "--discriminate", "conflicts,chain_rounds")
    assert main([*args, "--discriminate-weight", "0.25"]) == 0
    plan = load_plan(out / "plan.yaml")
    contrast = [a for a in plan.analyses if a["kind"] == "measure_contrast"]
    assert len(contrast) == 1 and 0 <= contrast[0]["power"]["power"] <= 1
    assert plan.selection["discriminate"] == ["conflicts", "chain_rounds"]
    assert plan.selection["discriminate_weight"] == 0.25
    text = (out / "preregistration.md").read_text()
    assert "## Which measure predicts better (measure contrast)" in text
    # the design sentence names the criterion that chose the puzzles (plan.yaml's record)
    assert plan.selection["criterion_id"] == "discriminating"
    assert selection_line(plan.selection) in text and "D-optimal for" not in selection_line(
        plan.selection
    )
    tab = pd.read_csv(out / "tables" / "design_discrimination.csv")
    disc, dopt = tab.iloc[0], tab.iloc[1]
    assert disc["selection"] == "discriminating_k12" and dopt["selection"] == "d_optimal_k12"
    assert disc["max_abs_correlation"] <= dopt["max_abs_correlation"]
    # the table's correlation is the one of the served puzzles, recomputed independently
    pool = load_pool(study_dir / "nonograms10x10.txt", study_dir / "nonogram_solver_stats.csv")
    served = pool[pool["puzzle_hash"].isin([p.puzzle_hash for p in plan.puzzles])]
    m = measure_frame(served.reset_index(drop=True), ["conflicts", "chain_rounds"])
    r = abs(np.corrcoef(m.to_numpy().T)[0, 1])
    assert r == pytest.approx(disc["max_abs_correlation"], abs=1e-9)
    # deterministic for a seed
    again = tmp_path / "again"
    assert main([*_args(study_dir, again, *args[-2:]), "--discriminate-weight", "0.25"]) == 0
    for name in ("plan.yaml", "preregistration.md", "tables/design_discrimination.csv"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name


@pytest.mark.parametrize(
    "value, message",
    [
        ("conflicts", "two or more distinct"),
        ("conflicts,conflicts", "two or more distinct"),
        ("conflicts,no_such_measure", "unknown measure"),
        ("conflicts;x", "two or more distinct"),
        ("", "--discriminate needs"),
    ],
)
def test_bad_discriminate_values_are_usage_errors(study_dir, tmp_path, capsys, value, message):
    assert _code(_args(study_dir, tmp_path / "x", "--discriminate", value)) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_discriminate_weight_is_bounded(study_dir, tmp_path, capsys):
    args = _args(study_dir, tmp_path / "x", "--discriminate", "a,b", "--discriminate-weight", "1.5")
    assert _code(args) == 2
    assert "--discriminate-weight needs" in capsys.readouterr().err
