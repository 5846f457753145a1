"""Run the `ingest` and `features` rules with Snakemake on the public study in a tmp folder."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from snake import CONFIG
from snake import snakemake as run_snakemake

from nonolab.study.features import compare_published

pytestmark = pytest.mark.study


def snakemake(workdir, study_dir, *targets):
    out = run_snakemake(
        *targets,
        directory=workdir,
        configfiles=[CONFIG],
        config={"study_dir": study_dir},
        opts=["--rerun-triggers", "mtime"],
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def test_ingest_and_features_rules(tmp_path, study_dir):
    snakemake(tmp_path, study_dir, "results/ingest/summary.json")
    s = json.loads((tmp_path / "results/ingest/summary.json").read_text())
    assert (s["participants"], s["attempts"], s["final_ratings"], s["solve_times"]) == (
        67,
        201,
        180,
        197,
    )
    assert s["attempts_per_puzzle"] == {"0": 28, "1": 36, "2": 29, "3": 34, "4": 31, "5": 43}
    for name in ("attempts", "participants", "ratings", "ledger"):
        assert (tmp_path / f"results/ingest/{name}.csv").exists()
        assert (tmp_path / f"results/ingest/{name}.provenance.json").exists()
    assert "preset he2026" in (tmp_path / "results/logs/ingest.log").read_text()
    # a results folder whose ingest has no manifest (written before the manifest existed, or
    # by hand) plans the ingest again instead of failing in `features`
    manifest = tmp_path / "results/ingest/manifest.json"

    def plans_ingest(target: str) -> bool:
        dry = run_snakemake(
            target,
            directory=tmp_path,
            configfiles=[CONFIG],
            config={"study_dir": study_dir},
            opts=["--rerun-triggers", "mtime", "-n"],
        )
        assert dry.returncode == 0, dry.stderr[-3000:]
        return "rule ingest:" in dry.stdout + dry.stderr

    assert not plans_ingest("results/features/attempts.csv")
    kept = manifest.read_bytes()
    manifest.unlink()
    assert plans_ingest("results/features/attempts.csv")
    assert plans_ingest("results/ingest/manifest.json")
    manifest.write_bytes(kept)
    # the pauses stage writes the threshold; here the published value stands in for it
    (tmp_path / "results/pauses").mkdir(parents=True, exist_ok=True)
    (tmp_path / "results/pauses/threshold.json").write_text('{"threshold_used_s": 2.36}')
    snakemake(tmp_path, study_dir, "results/features/attempts.csv")
    feats = pd.read_csv(tmp_path / "results/features/attempts.csv", dtype={"puzzle_id": str})
    pub = pd.read_csv(study_dir / "analyze-data/out_features/behavioral_features.csv")
    assert len(feats) == 201
    assert compare_published(feats, pub).empty
    prov = json.loads((tmp_path / "results/features/attempts.provenance.json").read_text())
    assert prov["params"]["threshold_used_s"] == 2.36
