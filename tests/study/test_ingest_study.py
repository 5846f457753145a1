"""Ingest of the public study (../shared/study-data): METHODS 3 targets and the preset mapping."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from public_study import study_ingest

from nonolab.study.ingest import IngestResult
from nonolab.study.presets import log_sources, puzzle_file_hashes, resolve_preset

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def res(study_dir) -> IngestResult:
    return study_ingest(str(study_dir))


def test_auto_preset_is_he2026_by_fingerprint(study_dir):
    p = resolve_preset(study_dir)
    assert p.name == "he2026"
    assert p.data["fingerprint"]["puzzle_hashes"] == puzzle_file_hashes(study_dir / p.puzzle_file)


def test_methods3_targets(res):
    s = res.summary
    assert s["participants"] == 67
    assert s["attempts"] == 201
    assert s["final_ratings"] == 180
    assert s["solve_times"] == 197
    assert s["attempts_per_puzzle"] == {"0": 28, "1": 36, "2": 29, "3": 34, "4": 31, "5": 43}
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]
    assert s["identity_ok"]
    # every event type present is used or counted as ignored; none is unknown
    assert "(unknown)" not in s["events_by_type"]
    # line/kept: the coded rating reasons whose rating differs from the log's (kept as coded)
    assert s["ledger_by_level"] == {
        "file/excluded": 7,
        "attempt/kept": 10,
        "line/excluded": 6,
        "line/kept": 14,
    }
    assert sum(s["events_by_type"].values()) == s["events_read"]


def test_every_unused_file_is_ledgered_with_a_reason(res, study_dir):
    led = res.tables["ledger"]
    files = led[led.level == "file"].set_index("source")["reason"]
    assert set(files.index) == {
        "backend/logs/Bing-p21.ndjson",
        "backend/logs/p3-Michael.ndjson",
        "backend/logs/p5-partial-2-Michael.ndjson",
        "backend/old_logs/old-p1-Michael.ndjson",
        "backend/old_logs/old-p2-Michael.ndjson",
        "backend/unfinished_logs/p5-partial-1-Michael.ndjson",
        "backend/unfinished_logs/p5-partial-3-Michael.ndjson",
    }
    assert files.str.len().min() > 10
    used = set(res.tables["participants"]["source_file"])
    every = {
        p.relative_to(study_dir).as_posix()
        for p in (study_dir / "backend").rglob("*")
        if p.is_file() and p.suffix in (".ndjson", ".json")
    }
    assert used | set(files.index) == every and not used & set(files.index)
    assert "backend/logs-history/p6-Michael@1b53bdc.ndjson" in used


def _raw_session(path: Path) -> tuple[list[int], list, list]:
    """Queue, initial and final ratings read straight from a log (independent of nonolab)."""
    events = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    queue = next(e["queue"] for e in events if e["type"] == "session_start_three")
    surveys = {e["survey_type"]: e["answers"] for e in events if e["type"] == "survey_submit"}
    ini = [surveys.get(f"puzzle_{k}", {}).get("difficulty") for k in (1, 2, 3)]
    fin = [surveys.get("post", {}).get(f"puzzle_{k}_rate_again") for k in (1, 2, 3)]
    return queue, ini, fin


def test_participant_mapping_matches_published_queues_and_ratings(study_dir):
    """METHODS 3: each used file's puzzle queue and ratings equal its published participant's."""
    preset = resolve_preset(study_dir)
    pub = pd.read_csv(study_dir / preset.data["published"]["behavioral_features"])
    pub_by_id = {
        pid: (
            g.sort_values("order")["puzzle_id"].tolist(),
            g.sort_values("order")["initial_difficulty"].tolist(),
            [None if pd.isna(x) else int(x) for x in g.sort_values("order")["final_difficulty"]],
        )
        for pid, g in pub.groupby("participant_id")
    }
    used = [s for s in log_sources(study_dir, preset) if s.participant_id]
    assert sorted(s.participant_id for s in used) == sorted(pub_by_id)
    for s in used:
        assert _raw_session(s.path) == pub_by_id[s.participant_id], s.rel
    # an excluded file matches no published session (so nothing published is left out)
    published_sessions = list(pub_by_id.values())
    for s in log_sources(study_dir, preset):
        if s.participant_id is None:
            try:
                sess = _raw_session(s.path)
            except StopIteration:
                continue
            assert sess not in published_sessions, s.rel


def test_tables_are_keyed_by_hash_and_label(res, study_dir):
    puz = res.tables["puzzles"]
    assert puz["puzzle_id"].tolist() == ["0", "1", "2", "3", "4", "5"]
    assert puz["puzzle_hash"].is_unique
    att = res.tables["attempts"].merge(puz[["puzzle_id", "puzzle_hash"]], on="puzzle_id")
    assert (att["puzzle_hash_x"] == att["puzzle_hash_y"]).all()
    ev = res.tables["events"]
    assert ev["t"].dt.tz is not None
    assert set(ev["phase"]) == {"pre", "puzzle", "post"}
    drags = ev[ev.type == "drag"]
    assert drags["drag_id"].notna().all()
    assert (
        drags.groupby(["participant_id", "drag_id"]).size()
        == drags.groupby(["participant_id", "drag_id"])["drag_cells"].first()
    ).all()


def test_rating_sentinels_are_ledgered(res):
    led = res.tables["ledger"]
    rows = led[(led.level == "attempt") & led.reason.str.contains("skipped puzzle")]
    rat = res.tables["ratings"]
    assert len(rows) == int((rat["initial_difficulty_raw"] == -1).sum()) == 10
    assert rows["action"].eq("kept").all()
