"""Shared helpers for tests on the public study data (../shared/study-data): one ingest per
session, the published tables and the published alignment's covariates."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from nonolab.measure.tables import parse_solver_statistics
from nonolab.sat.puzzles import load_study_puzzles
from nonolab.sat.solvers import solver_record
from nonolab.stats import mixed_models as mm
from nonolab.stats.correlations import published_alignment
from nonolab.study.features import attempt_features
from nonolab.study.ingest import IngestResult, ingest_study
from nonolab.study.presets import resolve_preset


@lru_cache(maxsize=1)
def study_ingest(study_dir: str) -> IngestResult:
    """Ingest the public study once per test session (shared with the features tests)."""
    return ingest_study(study_dir, resolve_preset(study_dir))


@lru_cache(maxsize=1)
def _published_features(study_dir: str) -> pd.DataFrame:
    preset = resolve_preset(study_dir).data
    return attempt_features(
        study_ingest(study_dir).tables,
        preset["published"]["pause_threshold_s"],
        keep_initial_rating_sentinel=preset["features"]["keep_initial_rating_sentinel"],
    )


def published_features(study_dir: str | Path) -> pd.DataFrame:
    """Return the public study's per-attempt features under the he2026 preset's published
    settings (pauses at 2.36 s, the -1 initial-rating sentinel kept), computed once per test
    session; each caller gets its own copy."""
    return _published_features(str(study_dir)).copy()


def minisat_metrics(study_dir: str | Path) -> pd.DataFrame:
    """Return MiniSat22 block-start solver records (:func:`nonolab.sat.solvers.solver_record`)
    of the study's puzzles, one row per puzzle."""
    puzzles = load_study_puzzles(Path(study_dir) / "nonograms_6.json")
    return pd.DataFrame([solver_record(p, "block_start", "minisat22") for p in puzzles])


# METHODS 2: published MiniSat22 decisions/propagations/conflicts by served id.
OWN = {"0": (4, 313, 0), "1": (2, 307, 0), "2": (8, 417, 4), "3": (31, 1063, 15)}
OWN |= {"4": (40, 1133, 15), "5": (13, 453, 4)}
# The published tables used the statistics of served ids 5, 2, 3, 4 for served ids 2-5.
PUBLISHED_SOURCE = {"0": "0", "1": "1", "2": "5", "3": "2", "4": "3", "5": "4"}


def study_tables(study_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(attempts in the contract's column names, metrics table, pool-ordered table)."""
    hashes = {p.label: p.hash for p in load_study_puzzles(study_dir / "nonograms_6.json")}
    att = pd.read_csv(
        study_dir / "analyze-data/out_features/behavioral_features.csv", dtype={"puzzle_id": str}
    ).rename(columns={"time_to_solve_sec": "time_to_solve_s"})
    att["puzzle_hash"] = att["puzzle_id"].map(hashes)
    met = parse_solver_statistics(study_dir / "solver_statistics.txt")
    met["puzzle_hash"] = met["puzzle_id"].map(hashes)
    met["encoding"] = "block_start"
    pool = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv")
    return att, met, pool


def covariates(tables, transform="log1p_z"):
    att, met, pool = tables
    served = att[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    mapping = published_alignment(pool, served, met[met["solver"] == "minisat22"])
    return mm.covariates_by_alignment(
        met,
        served,
        solver="minisat22",
        encoding="block_start",
        transform=transform,
        published_mapping=mapping,
    )
