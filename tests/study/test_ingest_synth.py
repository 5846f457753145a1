"""Ingest and features on a small synthetic study whose every number is computed by hand."""

from __future__ import annotations

import pandas as pd
import pytest
from synth_study import (  # noqa: F401
    GRIDS,
    PRE,
    T0,
    good_session,
    ingest,
    puzzle_file_content,
    write_log,
    write_study,
)

from nonolab.sat.puzzles import Puzzle  # noqa: F401
from nonolab.study.features import attempt_features, interaction_gaps  # noqa: F401
from nonolab.study.ingest import ingest_study, read_ingest, write_ingest  # noqa: F401
from nonolab.study.presets import load_preset, resolve_preset  # noqa: F401


def another_session(schedule_idx: int = 5) -> list[dict]:
    """good_session() with another schedule index: another participant's session (a file with
    the very same events is a copy of the same session and is used once)."""
    events = good_session()
    events[0] = {**events[0], "schedule_idx": schedule_idx}
    return events


@pytest.fixture()
def synth(tmp_path):
    return write_study(tmp_path / "study", {"Ann-p1": good_session(), "Bob-p2": another_session()})


def test_synthetic_study_uses_default_preset(synth):
    assert resolve_preset(synth).name == "default"


def test_tables_and_summary(synth):
    res = ingest(synth)
    s = res.summary
    assert s["participants"] == 2 and s["attempts"] == 6
    assert s["attempts_per_puzzle"] == {"0": 2, "1": 2, "2": 2}
    assert s["final_ratings"] == 4  # puzzle 2 has no post rating
    assert s["initial_ratings"] == 4  # -1 is not a rating
    n = len(good_session())
    assert s["events_read"] == 2 * n
    assert s["events_used"] == 2 * n and s["events_excluded"] == 0 and s["identity_ok"]
    ev = res.tables["events"]
    # the two drags expand to their 2 cells each, sharing the drag id (= line number)
    drags = ev[(ev.participant_id == "Ann-p1") & (ev.type == "drag")]
    assert len(drags) == 4 and drags.groupby("drag_id").size().tolist() == [2, 2]
    # cross_toggle of empty cells gives -1
    assert drags[drags.drag_mode == "cross_toggle"]["value"].tolist() == [-1, -1]
    # events carry the puzzle label and hash of their attempt
    m = ev[(ev.participant_id == "Ann-p1") & (ev.type == "move")]
    assert m.groupby("order")["puzzle_id"].first().tolist() == ["0", "1", "2"]
    p0 = Puzzle.from_grid(GRIDS[0])
    assert set(m[m.order == 1]["puzzle_hash"]) == {p0.hash}
    assert m["t_s"].iloc[0] == pytest.approx(12.0)
    rat = res.tables["ratings"].set_index(["participant_id", "order"]).loc["Ann-p1"]
    assert rat["initial_difficulty"].tolist()[0] == 2
    assert pd.isna(rat["initial_difficulty"].tolist()[1])
    assert rat["initial_difficulty_raw"].tolist()[1] == -1
    assert rat["final_difficulty"].tolist()[0] == 3 and pd.isna(rat["final_difficulty"].iloc[1])
    part = res.tables["participants"].set_index("participant_id").loc["Ann-p1"]
    assert (part.skill_nonogram, part.skill_puzzles) == (4, 7)
    assert (part.played_before_ord, part.puzzle_played_frequency_ord) == (1, 3)
    assert (part.n_nonogram_sizes, part.n_logic_puzzles) == (2, 1)
    texts = res.tables["survey_texts"]
    assert set(texts[texts.participant_id == "Ann-p1"]["question"]) == {
        "rating_reason",
        "strategy",
        "comments",
        "logic_experience_other",
    }
    att = res.tables["attempts"].set_index(["participant_id", "order"]).loc["Ann-p1"]
    assert att["solved"].tolist() == [True, False, True]
    assert att["skipped"].tolist() == [False, True, False]


def test_hand_computed_features(synth, tmp_path):
    res = ingest(synth)
    write_ingest(res, tmp_path / "out")
    tables = read_ingest(tmp_path / "out")
    f = attempt_features(tables, threshold_s=2.36).set_index(["participant_id", "order"])
    a = f.loc["Ann-p1"]
    # attempt 1: gaps 1,4,1,.5,.5,3,1,1 -> 2 pauses; solved at 24 s, first move 12 s
    assert a.loc[1, "pause_count"] == 2
    assert a.loc[1, "time_to_solve_s"] == pytest.approx(12.0, abs=1e-9)
    assert a.loc[1, "total_time_s"] == pytest.approx(12.0, abs=1e-9)
    assert (a.loc[1, "check_count"], a.loc[1, "error_count"], a.loc[1, "hint_count"]) == (2, 1, 1)
    assert a.loc[1, "percent_error"] == 0 and a.loc[1, "percent_incomplete"] == 0
    # attempt 2: final board (0,0)=1 only (undo removed (1,0)); 1 of 6 filled; 5 of 9 wrong
    assert a.loc[2, "pause_count"] == 1
    assert a.loc[2, "time_to_solve_s"] == pytest.approx(9.5, abs=1e-9)
    assert a.loc[2, "percent_incomplete"] == pytest.approx(5 / 6)
    assert a.loc[2, "percent_error"] == pytest.approx(5 / 9)
    assert not a.loc[2, "solved"]
    # attempt 3: reset undone, then completed; the marker event at 53.5 s ends total time
    assert a.loc[3, "pause_count"] == 0
    assert a.loc[3, "time_to_solve_s"] == pytest.approx(7.0, abs=1e-9)
    assert a.loc[3, "total_time_s"] == pytest.approx(7.5, abs=1e-9)
    assert a.loc[3, "percent_error"] == 0 and a.loc[3, "percent_incomplete"] == 0
    # threshold is a parameter: at 0.9 s every gap of 1 s or more counts
    f2 = attempt_features(tables, threshold_s=0.9).set_index(["participant_id", "order"])
    assert f2.loc[("Ann-p1", 1), "pause_count"] == 6
    # initial rating sentinel: missing by default, -1 when kept (published table behaviour)
    assert pd.isna(a.loc[2, "initial_difficulty"])
    f3 = attempt_features(tables, 2.36, keep_initial_rating_sentinel=True)
    assert f3.set_index(["participant_id", "order"]).loc[("Ann-p1", 2), "initial_difficulty"] == -1
    with pytest.raises(ValueError, match="positive"):
        attempt_features(tables, 0)


def test_interaction_gaps_hand_computed(synth):
    gaps = interaction_gaps(ingest(synth).tables["events"])
    g = gaps[gaps.participant_id == "Ann-p1"]
    assert g.groupby("order").size().tolist() == [8, 5, 8]
    assert g[g.order == 1]["gap_s"].round(9).tolist() == [1, 4, 1, 0.5, 0.5, 3, 1, 1]
    assert set(g.columns) == {"participant_id", "puzzle_id", "puzzle_hash", "order", "gap_s"}


def test_ingest_is_deterministic(synth, tmp_path):
    write_ingest(ingest(synth), tmp_path / "a")
    write_ingest(ingest(synth), tmp_path / "b")
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for n in names:
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes(), n


def test_preset_mapping_table_renames_and_excludes(tmp_path):
    root = write_study(
        tmp_path / "s",
        {"p4-Zed": good_session(), "Zed-p9": another_session(), "x": another_session(6)},
    )
    preset = tmp_path / "p.yaml"
    preset.write_text(
        "name: custom\npuzzle_file: nonograms_6.json\nlog_globs: [backend/logs/*.ndjson]\n"
        "puzzles_per_session: 3\nparticipants:\n  default_participant_id: stem\n  files:\n"
        "    - {file: backend/logs/p4-Zed.ndjson, participant_id: Zed-p1}\n"
        "    - {file: backend/logs/x.ndjson, exclude: pilot}\n"
    )
    res = ingest_study(root, load_preset(preset))
    assert sorted(res.tables["participants"]["participant_id"]) == ["Zed-p1", "Zed-p9"]
    led = res.tables["ledger"]
    # the two used sessions start at the same time with the same queue: flagged, both kept
    assert led[led.level == "file"][["source", "action"]].values.tolist() == [
        ["backend/logs/p4-Zed.ndjson", "kept"],
        ["backend/logs/x.ndjson", "excluded"],
    ]
    assert led[led.action == "excluded"][["source", "reason"]].values.tolist() == [
        ["backend/logs/x.ndjson", "pilot"]
    ]
    assert res.summary["events_excluded"] == len(good_session())
