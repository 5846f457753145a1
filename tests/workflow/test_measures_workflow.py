"""The measures stage: a packed pool measured in shard jobs and merged equals the registry's
table of the whole pool computed in one go (the sharding changes nothing)."""

from __future__ import annotations

import pandas as pd
import pytest
from snake import REPO, snakemake

from nonolab.design.selection import read_packed_pool
from nonolab.measure.registry import measures_table, registry
from nonolab.sat.puzzles import Puzzle

GRIDS = [
    [[1, 1, 1], [1, 0, 0], [1, 0, 1]],
    [[0, 0, 0, 0], [0, 0, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]],
    [[1, 0, 1], [0, 1, 0], [1, 1, 1]],
    [[0, 1, 1], [1, 1, 0], [0, 1, 0]],
    [[1, 1, 0], [0, 1, 1], [1, 0, 1]],
]


def _packed(grid) -> str:
    p = Puzzle.from_grid(grid)
    clue = lambda c: ".".join(map(str, c)) or "0"  # noqa: E731
    fields = [clue(c) for c in p.cols] + [clue(r) for r in p.rows]
    return ";".join(fields) + "|" + "".join(str(v) for row in grid for v in row)


@pytest.mark.slow
def test_pool_shards_merge_to_the_whole_pool(tmp_path):
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(_packed(g) for g in GRIDS) + "\n", encoding="utf-8")
    cfg = tmp_path / "measures.yaml"
    cfg.write_text(f"measures:\n  pool: {pool}\n  shards: 2\n", encoding="utf-8")
    res = snakemake(
        "results/measures/pool.csv",
        directory=tmp_path / "run",
        configfiles=[REPO / "config" / "config.yaml", cfg],
        config={"study_dir": REPO / "data" / "example-study"},
        cores=2,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    got = pd.read_csv(tmp_path / "run/results/measures/pool.csv", dtype={"puzzle_id": str})
    whole = measures_table(read_packed_pool(pool), registry())
    pd.testing.assert_frame_equal(
        got, whole.drop(columns=["measure_time_s"]), check_dtype=False, rtol=1e-9
    )
    timing = pd.read_csv(tmp_path / "run/results/measures/pool_timing.csv")
    assert len(timing) == len(GRIDS) and (timing["measure_time_s"] > 0).all()
