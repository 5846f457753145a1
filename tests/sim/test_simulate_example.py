"""The embedded example study is exactly what its committed seed regenerates (data/README.md)."""

from __future__ import annotations

from pathlib import Path

from nonolab.sim.events import simulate_study
from nonolab.sim.model import SimParams
from nonolab.sim.writer import write_study

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
# Keep in sync with data/README.md: nonolab simulate --participants 30 --puzzles 6 --seed 20260301
EXAMPLE_PARAMS = SimParams(n_participants=30, n_puzzles=6)
EXAMPLE_SEED = 20260301


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_example_study_regenerates_exactly(tmp_path):
    write_study(simulate_study(EXAMPLE_PARAMS, EXAMPLE_SEED), tmp_path / "ex")
    got, committed = _tree(tmp_path / "ex"), _tree(EXAMPLE)
    assert sorted(got) == sorted(committed)
    changed = [name for name in got if got[name] != committed[name]]
    assert not changed, f"regenerate data/example-study (see data/README.md); differs: {changed}"


def test_example_study_is_small():
    total = sum(len(b) for b in _tree(EXAMPLE).values())
    assert total < 2_000_000
