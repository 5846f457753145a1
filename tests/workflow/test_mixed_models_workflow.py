"""The models stage runs as Snakemake jobs on small synthetic upstream tables (attempts, SAT
metrics, gaps, threshold, BT strengths) in a temporary folder, and reruns byte-identically."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from snake import CONFIG, snakemake

from nonolab.study.schemas import columns

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODEL_RULES = [
    "behaviour_models",
    "moderation",
    "threshold_sensitivity",
    "fig_simple_slopes",
    "fig_threshold_sensitivity",
]
TARGETS = [
    "results/tables/behaviour_models.csv",
    "results/tables/moderation.csv",
    "results/tables/simple_slopes.csv",
    "results/tables/threshold_sensitivity.csv",
    "results/figures/moderation_simple_slopes.png",
    "results/figures/threshold_sensitivity.png",
]
ITEMS = [
    "skill_nonogram",
    "skill_puzzles",
    "played_before_ord",
    "puzzle_played_frequency_ord",
    "n_nonogram_sizes",
    "n_logic_puzzles",
]


def write_upstream(root: Path, threshold: float = 2.36) -> None:
    """Synthetic upstream outputs: 24 participants x 3 of 6 puzzles, gaps and metrics."""
    rng = np.random.default_rng(5)
    hashes = [hashlib.sha256(f"p{i}".encode()).hexdigest() for i in range(6)]
    att, gaps = [], []
    for k in range(24):
        items = rng.integers(0, 5, len(ITEMS))
        for order, q in enumerate(rng.choice(6, 3, replace=False), start=1):
            g = rng.lognormal(0.3, 1.0, 30 + 5 * q)
            gaps += [(f"P{k}", str(q), order, float(x)) for x in g]
            row = {
                "participant_id": f"P{k}",
                "puzzle_id": str(q),
                "puzzle_hash": hashes[q],
                "order": order,
                "pause_count": int((g >= threshold).sum()),
                "time_to_solve_s": float(100 + 30 * q + rng.normal(0, 20)),
                "error_count": int(rng.poisson(2 + q)),
                "hint_count": int(rng.poisson(1)),
                "final_difficulty": float(np.clip(round(2 + q / 2 + rng.normal()), 1, 5)),
            }
            row.update(dict(zip(ITEMS, map(int, items), strict=True)))
            att.append(row)
    (root / "results/features").mkdir(parents=True)
    (root / "results/sat").mkdir(parents=True)
    (root / "results/pauses").mkdir(parents=True)
    attempts = pd.DataFrame(att)
    tt = attempts["time_to_solve_s"]
    attempts = attempts.assign(
        total_time_s=tt + 5.0,
        check_count=1,
        percent_error=0.0,
        percent_incomplete=0.0,
        solved=True,
        initial_difficulty=attempts["final_difficulty"].astype(int),
    )
    attempts[columns("features")].to_csv(root / "results/features/attempts.csv", index=False)
    pd.DataFrame(gaps, columns=["participant_id", "puzzle_id", "order", "gap_s"]).to_csv(
        root / "results/pauses/gaps.csv", index=False
    )
    met = pd.DataFrame(
        {
            "puzzle_hash": hashes,
            "puzzle_id": [str(i) for i in range(6)],
            "encoding": "block_start",
            "solver": "minisat22",
            "decisions": [4, 2, 8, 31, 40, 13],
            "propagations": [313, 307, 417, 1063, 1133, 453],
            "conflicts": [0, 0, 4, 15, 15, 4],
            "variables": [312, 306, 333, 319, 333, 305],
            "clauses": [1265, 1180, 1314, 1256, 1294, 1208],
            "restarts": 0,
            "status": "SAT",
        }
    )[columns("sat_metrics")]
    met.to_csv(root / "results/sat/metrics.csv", index=False)
    (root / "results/tables").mkdir(parents=True)
    strength = np.linspace(2, 0.5, 6)
    pd.DataFrame(
        {
            "puzzle_id": [str(i) for i in range(6)],
            "puzzle_hash": hashes,
            "strength": strength,
            "log_strength": np.log(strength),
            "ci_low": strength / 2,
            "ci_high": strength * 2,
            "rank": np.arange(1, 7),
            "ci_low_published_semantics": strength / 3,
            "ci_high_published_semantics": strength * 3,
            "n_boot_used": 100,
            "n_boot_not_connected": 0,
            "n_boot_not_converged": 0,
            "status": "ok",
        }
    ).reindex(columns=columns("bt_strengths")).to_csv(
        root / "results/tables/bt_strengths.csv", index=False
    )
    rec = {"threshold_used_s": threshold, "threshold_s": 2.0}
    (root / "results/pauses/threshold.json").write_text(json.dumps(rec))


def small_config(root: Path) -> Path:
    """The repository config with a 5-draw bootstrap and three sensitivity thresholds (the
    fitted 2.0 s of the threshold record is added to them), in ``root``."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["models"].update(bootstrap=5, seed=3)
    cfg["pauses"].update(sensitivity_s=[1.5, 2.36, 4.0])
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_models(root: Path, *extra: str) -> subprocess.CompletedProcess:
    return snakemake(
        *TARGETS,
        opts=["--allowed-rules", *MODEL_RULES, *extra],
        configfiles=[small_config(root)],
        cwd=root,
        timeout=600,
    )


@pytest.mark.slow
def test_models_stage_runs_and_reruns_identically(tmp_path):
    write_upstream(tmp_path)
    res = run_models(tmp_path)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    bm = pd.read_csv(tmp_path / "results/tables/behaviour_models.csv")
    assert len(bm) == 12 and set(bm["alignment"]) == {"corrected"}
    assert (bm["n_boot"] == 5).all()
    ts = pd.read_csv(tmp_path / "results/tables/threshold_sensitivity.csv")
    assert sorted(ts["threshold_s"].unique()) == [1.5, 2.0, 2.36, 4.0]
    assert len(ts) == 4 * 3 and ts[["rho_rating", "rho_expertise", "rho_bt"]].notna().all().all()
    for ext in ("md", "tex"):
        assert (tmp_path / f"results/tables/behaviour_models.{ext}").exists()
    before = {t: (tmp_path / t).read_bytes() for t in TARGETS}
    res = run_models(tmp_path, "--forceall")
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    for t in TARGETS:
        assert (tmp_path / t).read_bytes() == before[t], t


@pytest.mark.slow
def test_pause_counts_inconsistent_with_gaps_stop_the_rule(tmp_path):
    write_upstream(tmp_path)
    att = pd.read_csv(tmp_path / "results/features/attempts.csv")
    att.loc[0, "pause_count"] += 1
    att.to_csv(tmp_path / "results/features/attempts.csv", index=False)
    res = snakemake(
        "results/tables/threshold_sensitivity.csv",
        opts=["--allowed-rules", "threshold_sensitivity"],
        configfiles=[CONFIG],
        cwd=tmp_path,
        timeout=600,
    )
    assert res.returncode != 0
    log = (tmp_path / "results/logs/threshold_sensitivity.log").read_text()
    assert "differ from" in res.stderr + res.stdout + log
