"""Study designs the simulator writes by reshaping its sessions (nonolab.sim.design): fewer
puzzles per session, missing ratings, missing surveys; the ingest reads each as intended."""

from __future__ import annotations

import json

import pytest

from nonolab.cli import main
from nonolab.sim.design import StudyDesign, reshape_study
from nonolab.sim.events import simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.writer import write_study
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import load_preset

PARAMS = SimParams(n_participants=6, n_puzzles=4, height=6, width=6, filled=18)


def ingest_design(tmp_path, design, seed=5):
    study = reshape_study(simulate_study(PARAMS, seed), design, seed)
    write_study(study, tmp_path / "study")
    (tmp_path / "preset.yaml").write_text(
        f"name: t\nextends: default\npuzzles_per_session: {design.per_session}\n"
    )
    res = ingest_study(tmp_path / "study", load_preset(tmp_path / "preset.yaml"))
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s.get("events_ignored", 0)
    return study, res


@pytest.mark.parametrize("k", [1, 2])
def test_fewer_puzzles_per_session(tmp_path, k):
    study, res = ingest_design(tmp_path, StudyDesign(per_session=k))
    for lines in study.logs.values():
        events = [json.loads(x) for x in lines]
        assert len(events[0]["queue"]) == k
        assert sum(e["type"] == "survey_submit" and e["survey_type"].startswith("puzzle_")
                   for e in events) == k  # fmt: skip
    assert len(res.tables["attempts"]) == k * PARAMS.n_participants
    assert res.summary["participants"] == PARAMS.n_participants


def test_every_rating_missing(tmp_path):
    _, res = ingest_design(tmp_path, StudyDesign(missing=1.0))
    rat = res.tables["ratings"]
    assert rat["initial_difficulty"].isna().all() and rat["final_difficulty"].isna().all()


def test_no_post_survey_and_no_surveys(tmp_path):
    _, res = ingest_design(tmp_path / "a", StudyDesign(surveys="no_post"))
    assert res.tables["ratings"]["final_difficulty"].isna().all()
    assert res.summary["participants"] == PARAMS.n_participants
    _, res = ingest_design(tmp_path / "b", StudyDesign(surveys="none"))
    assert res.summary["participants"] == 0
    assert res.summary["participants_excluded"] == PARAMS.n_participants


def test_default_design_changes_nothing():
    study = simulate_study(PARAMS, 1)
    assert reshape_study(study, StudyDesign(), 1) is study


@pytest.mark.parametrize(
    "kw",
    [
        {"per_session": 0},
        {"per_session": 3, "per_session_min": 4},
        {"per_session": 3, "per_session_min": 0},
        {"missing": 1.5},
        {"surveys": "some"},
    ],
)
def test_bad_design_is_refused(kw):
    with pytest.raises(ValueError):
        StudyDesign(**kw)


def test_cli_writes_the_preset_of_a_reshaped_study(tmp_path, capsys):
    out = tmp_path / "s"
    args = ["simulate", str(out), "--participants", "4", "--puzzles", "4", "--size", "6x6"]
    assert main([*args, "--per-session", "2", "--missing-ratings", "0.5"]) == 0
    assert "puzzles_per_session: 2" in (out / "preset.yaml").read_text()
    assert "preset.yaml" in capsys.readouterr().out
