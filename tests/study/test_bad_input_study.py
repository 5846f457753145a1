"""Bad input on a faulty copy of the public study (../shared/study-data copied to a temporary
folder, then damaged): the published counts (67 participants, 201 attempts) must not move."""

from __future__ import annotations

import shutil

import pytest

from nonolab.study.ingest import ingest_study
from nonolab.study.presets import resolve_preset

pytestmark = pytest.mark.study


@pytest.fixture
def study_copy(study_dir, tmp_path):
    root = tmp_path / "study"
    shutil.copytree(study_dir, root)
    return root


def _counts(root):
    res = ingest_study(root, resolve_preset(root))
    s = res.summary
    assert s["events_read"] == s["events_used"] + s["events_excluded"] + s["events_ignored"]
    return res, (s["participants"], s["attempts"])


@pytest.mark.parametrize("copy", ["Bing-p1 (1).ndjson", "Copy-of-Bing-p1.ndjson"])
def test_copied_log_is_not_another_participant(study_copy, copy):
    logs = study_copy / "backend" / "logs"
    shutil.copyfile(logs / "Bing-p1.ndjson", logs / copy)
    res, counts = _counts(study_copy)
    assert counts == (67, 201)
    led = res.tables["ledger"]
    row = led[led["source"] == f"backend/logs/{copy}"]
    assert row["reason"].str.startswith("duplicate of backend/logs/Bing-p1.ndjson").tolist() == [
        True
    ]


def test_crlf_resaved_puzzle_file_keeps_the_preset(study_copy):
    path = study_copy / "nonograms_6.json"
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    assert resolve_preset(study_copy).name == "he2026"
    _, counts = _counts(study_copy)
    assert counts == (67, 201)
