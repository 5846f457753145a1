"""`nonolab ingest` and `nonolab features` run outside Snakemake."""

from __future__ import annotations

import json

import pandas as pd
from synth_study import good_session, write_study

from nonolab.cli import main


def test_cli_ingest_and_features(tmp_path, capsys):
    root = write_study(tmp_path / "s", {"Ann-p1": good_session()})
    out = tmp_path / "ingest"
    assert main(["ingest", str(root), str(out)]) == 0
    assert "preset default: 1 log files, 1 participants, 3 attempts" in capsys.readouterr().out
    assert json.loads((out / "summary.json").read_text())["attempts"] == 3
    thr = tmp_path / "threshold.json"
    thr.write_text('{"threshold_used_s": 2.36}')
    feats = tmp_path / "features.csv"
    assert main(["features", str(out), str(feats), "--threshold-json", str(thr)]) == 0
    f = pd.read_csv(feats)
    assert f["pause_count"].tolist() == [2, 1, 0]
    assert main(["features", str(out), str(feats), "--threshold", "0.9"]) == 0
    assert pd.read_csv(feats)["pause_count"].tolist()[0] == 6


def test_cli_reports_errors(tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "missing"), str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
