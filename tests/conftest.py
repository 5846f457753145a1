"""Shared fixtures. ``study_dir``: the public study data in ../shared (fails under CI=true when
missing, skips with a visible reason otherwise)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NONOLAB_SHARED", REPO.parent / "shared")).resolve()
STUDY_DIR = SHARED / "study-data"
BENCH_DIR = SHARED / "benchmarks"


def _require(path: Path, what: str) -> Path:
    if path.exists():
        return path
    msg = f"{what} not found at {path} (set NONOLAB_SHARED to the shared/ folder)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(msg + "; under CI=true this is a failure, not a skip")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def study_dir() -> Path:
    """The public study data folder (../shared/study-data)."""
    return _require(STUDY_DIR, "study data")


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """The public Nonogram benchmark folder (../shared/benchmarks)."""
    return _require(BENCH_DIR, "benchmark puzzles")
