"""``nonolab measures``: pooled evaluation of two results folders (study as a random effect)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from nonolab.cli import main
from nonolab.core.tables import write_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stats"))
from test_measure_evaluation import _study  # noqa: E402


def _results(base: Path, seed: int, n: int, shift: float) -> Path:
    att, _bt, meas, reg = _study(seed=seed, n_participants=n)
    att["final_difficulty"] = att["final_difficulty"] + shift
    root = base / "results"
    (root / "features").mkdir(parents=True)
    (root / "measures").mkdir()
    write_table(att, root / "features" / "attempts.csv")
    write_table(meas, root / "measures" / "served.csv")
    write_table(reg, root / "measures" / "registry.csv")
    return base


def test_pools_two_results_folders(tmp_path, capsys):
    a = _results(tmp_path / "lab_a", seed=1, n=24, shift=0.0)
    b = _results(tmp_path / "lab_b", seed=2, n=16, shift=-1.0)
    out = tmp_path / "pooled"
    assert (
        main(["measures", "--results", str(a), "--results", str(b / "results"), "--out", str(out)])
        == 0
    )
    assert "pooled 2 studies (lab_a, lab_b)" in capsys.readouterr().out
    t = pd.read_csv(out / "measures_pooled.csv")
    assert (out / "measures_pooled.provenance.json").is_file()
    drv = t[(t["measure"] == "driver") & (t["outcome"] == "final_difficulty")].iloc[0]
    # 24 + 16 participants kept apart (the ids repeat across the two labs), 6 puzzles shared
    assert drv["n_participants"] == 40 and drv["n_puzzles"] == 6 and drv["n_studies"] == 2
    assert drv["n"] == 40 * 6
    # the simulated slope (0.6 per unit, 1.708 units per SD) is recovered; the labs' offset of
    # one rating point goes to the study variance, not to the slope
    assert 0.6 < drv["estimate"] < 1.3 and drv["p"] < 0.05
    assert drv["var_study"] > 0.1
    flat = t[t["measure"] == "flat"].iloc[0]
    assert flat["status"].startswith("constant") and pd.isna(flat["p"])


def test_names_what_a_folder_lacks(tmp_path):
    a = _results(tmp_path / "lab_a", seed=1, n=8, shift=0.0)
    empty = tmp_path / "empty" / "results"
    empty.mkdir(parents=True)
    with pytest.raises(SystemExit, match="lacks results/features/attempts.csv"):
        main(["measures", "--results", str(a), "--results", str(empty)])
    with pytest.raises(SystemExit, match="at least two"):
        main(["measures", "--results", str(a)])
