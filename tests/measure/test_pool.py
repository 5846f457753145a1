"""Pool sweep library (nonolab.measure.sweep): sharding, seeding, merging, selection, study JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.measure.sweep import (
    METRIC_COLUMNS,
    SweepError,
    generate_shard,
    merge_shards,
    pool_duplicates,
    pool_record,
    puzzle_from_record,
    puzzle_rng,
    puzzle_seed_sequence,
    selection_table,
    shard_bounds,
    shard_metrics,
    split_timing,
    study_puzzle_json,
)
from nonolab.sat.puzzles import Puzzle, load_study_puzzles
from nonolab.sat.solvers import uniqueness

SMALL = dict(height=5, width=5, filled=13, seed=7)


@given(size=st.integers(1, 500), data=st.data())
def test_shard_bounds_partition_the_pool(size, data):
    shards = data.draw(st.integers(1, size))
    b = shard_bounds(size, shards)
    assert len(b) == shards
    assert b[0][0] == 0 and b[-1][1] == size
    assert all(b[k][1] == b[k + 1][0] for k in range(shards - 1))
    lengths = [stop - start for start, stop in b]
    assert max(lengths) - min(lengths) <= 1 and min(lengths) >= 1


def test_shard_bounds_hand_case():
    assert shard_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert shard_bounds(1, 1) == [(0, 1)]


@pytest.mark.parametrize(("size", "shards"), [(0, 1), (5, 0), (5, 6)])
def test_shard_bounds_rejects_bad_counts(size, shards):
    with pytest.raises(SweepError):
        shard_bounds(size, shards)


@given(seed=st.integers(0, 2**63), n=st.integers(1, 30), data=st.data())
@settings(max_examples=30)
def test_puzzle_seed_is_the_spawned_child(seed, n, data):
    i = data.draw(st.integers(0, n - 1))
    child = np.random.SeedSequence(seed).spawn(n)[i]
    ours = puzzle_seed_sequence(seed, i)
    assert (ours.generate_state(4) == child.generate_state(4)).all()
    a = puzzle_rng(seed, i).integers(0, 2**32, 5)
    b = np.random.default_rng(child).integers(0, 2**32, 5)
    assert (a == b).all()


def _pool(size: int, shards: int) -> pd.DataFrame:
    frames = [generate_shard(size=size, shards=shards, shard=k, **SMALL) for k in range(shards)]
    return merge_shards(frames, size)


def test_pool_does_not_depend_on_shard_count():
    one = _pool(9, 1)
    assert one["pool_index"].tolist() == list(range(9))
    for shards in (2, 4, 9):
        pd.testing.assert_frame_equal(_pool(9, shards), one)


def test_smaller_pool_is_a_prefix_of_a_larger_one():
    small = generate_shard(size=3, shards=1, shard=0, **SMALL)
    large = generate_shard(size=5, shards=2, shard=0, **SMALL)  # indices 0..2
    pd.testing.assert_frame_equal(small, large)


def test_pool_depends_on_seed():
    a = generate_shard(size=4, shards=1, shard=0, **SMALL)
    b = generate_shard(size=4, shards=1, shard=0, **(SMALL | {"seed": 8}))
    assert a["puzzle_hash"].tolist() != b["puzzle_hash"].tolist()


def test_generated_puzzles_are_unique_with_the_requested_fill():
    pool = generate_shard(size=6, shards=2, shard=1, **SMALL)
    assert pool["pool_index"].tolist() == [3, 4, 5]
    for _, row in pool.iterrows():
        p = puzzle_from_record(row)
        assert (p.height, p.width) == (5, 5)
        assert sum(map(sum, p.solution)) == 13
        assert Puzzle.from_grid(p.solution).hash == row["puzzle_hash"]
        # independent re-check of uniqueness with another solver
        assert uniqueness(p, "block_start", "cadical195").status == "unique"


def test_shard_metrics_reproduce_published_minisat_counts(study_dir):
    """Served puzzle 0 through the pool path gives the published 4/313/0 (METHODS 2)."""
    served = load_study_puzzles(Path(study_dir) / "nonograms_6.json")
    pool = pd.DataFrame([pool_record(i, p, 50) for i, p in enumerate(served)])
    m = shard_metrics(pool, ["minisat22"], ["block_start"])
    got = m.set_index("pool_index")[["variables", "clauses", "decisions", "propagations"]]
    assert got.loc[0].tolist() == [312, 1265, 4, 313]
    assert got.loc[3].tolist() == [319, 1256, 31, 1063]
    assert m.set_index("pool_index").loc[[0, 1, 2, 3, 4, 5], "conflicts"].tolist() == [
        0,
        0,
        4,
        15,
        15,
        4,
    ]


def test_split_timing_keeps_wall_time_out_of_metrics():
    pool = generate_shard(size=2, shards=1, shard=0, **SMALL)
    m = shard_metrics(pool, ["minisat22", "glucose42"], ["block_start"])
    assert m[["pool_index", "solver"]].values.tolist() == [
        [0, "minisat22"],
        [0, "glucose42"],
        [1, "minisat22"],
        [1, "glucose42"],
    ]
    det, timing = split_timing(m)
    assert list(det.columns) == METRIC_COLUMNS and "time_s" not in det
    assert list(timing.columns)[-1] == "time_s" and (timing["time_s"] >= 0).all()
    again, _ = split_timing(shard_metrics(pool, ["minisat22", "glucose42"], ["block_start"]))
    pd.testing.assert_frame_equal(det, again)


def _frame(indices, hashes=None):
    hashes = hashes or [f"h{i}" for i in indices]
    return pd.DataFrame({"pool_index": indices, "puzzle_hash": hashes})


def test_merge_sorts_and_checks_coverage():
    out = merge_shards([_frame([2, 3]), _frame([0, 1])], 4)
    assert out["pool_index"].tolist() == [0, 1, 2, 3]
    with pytest.raises(SweepError, match="missing"):
        merge_shards([_frame([0, 1]), _frame([3])], 4)
    with pytest.raises(SweepError, match=r"in a\.csv, b\.csv"):
        merge_shards([_frame([0, 1]), _frame([1, 2])], 3, names=["a.csv", "b.csv"])
    with pytest.raises(SweepError, match="outside"):
        merge_shards([_frame([0, 1, 2])], 2)
    with pytest.raises(SweepError, match="different puzzle hashes"):
        merge_shards(
            [_frame([0], ["x"]).assign(solver="a"), _frame([0], ["y"]).assign(solver="b")],
            1,
            keys=("pool_index", "solver"),
        )


def test_pool_duplicates_keep_the_first():
    pool = _frame([0, 1, 2, 3], ["a", "b", "a", "a"])
    d = pool_duplicates(pool)
    assert d["pool_index"].tolist() == [2, 3]
    assert all("pool entry 0" in r for r in d["reason"])
    assert pool_duplicates(_frame([0, 1])).empty


def _synthetic_metrics(conflicts):
    n = len(conflicts)
    return pd.DataFrame(
        {
            "pool_index": range(n),
            "puzzle_hash": [f"h{i}" for i in range(n)],
            "encoding": "block_start",
            "solver": "minisat22",
            "variables": 300,
            "clauses": 1200,
            "decisions": [2 * c for c in conflicts],
            "propagations": 300,
            "conflicts": conflicts,
            "restarts": 1,
            "status": "sat",
        }
    )


def test_selection_hand_case():
    # 20 puzzles; drop floor(20 * 0.05) = 1 (the 99); the other 19 sorted are
    # 0 0 1 2 3 4 5 6 7 [8] 9 9 10 11 12 13 14 15 16, median 8
    conflicts = [5, 0, 12, 7, 99, 3, 1, 9, 15, 2, 8, 11, 0, 4, 13, 6, 10, 9, 14, 16]
    m = _synthetic_metrics(conflicts)
    pool = m[["pool_index", "puzzle_hash"]]
    sel = selection_table(pool, m)
    assert sel["label"].tolist() == [0, 1, 2, 3, 4, 5]
    assert sel["selection"].tolist() == ["lowest"] * 2 + ["median"] * 2 + ["highest"] * 2
    # lowest: 0 at indices 1 and 12; nearest the median: 8 (index 10, distance 0), then the
    # first of the distance-1 values 7 (index 3), 9 (index 7), 9 (index 17) by pool order;
    # highest after dropping 99: 16 (index 19), 15 (index 8)
    assert sel["pool_index"].tolist() == [1, 12, 10, 3, 19, 8]
    assert (sel["pool_median"] == 8).all()


def test_selection_leaves_out_repeats_and_unfinished_runs():
    conflicts = [0, 0, 1, 2, 3, 4, 5, 6, 7]
    m = _synthetic_metrics(conflicts)
    m.loc[0, "status"] = "unknown"  # over budget: counters are lower bounds
    pool = m[["pool_index", "puzzle_hash"]]
    excluded = pd.DataFrame({"pool_index": [1], "puzzle_hash": ["h1"], "reason": ["repeat"]})
    sel = selection_table(pool, m, excluded=excluded, drop_top_frac=0.0)
    assert 0 not in sel["pool_index"].tolist() and 1 not in sel["pool_index"].tolist()
    assert sel["pool_index"].tolist()[:2] == [2, 3]
    with pytest.raises(SweepError, match="no metrics for solver"):
        selection_table(pool, m, solver="glucose42")


def test_study_json_round_trips_through_the_study_loader(tmp_path):
    pool = generate_shard(size=3, shards=1, shard=0, **SMALL)
    doc = study_puzzle_json(pool, labels=[4, 5, 6])
    assert [d["id"] for d in doc] == [4, 5, 6]
    assert all(d["density"] == 13 / 25 for d in doc)
    f = tmp_path / "nonograms_6.json"
    f.write_text(json.dumps(doc))
    loaded = load_study_puzzles(f)
    assert [p.hash for p in loaded] == pool["puzzle_hash"].tolist()
    assert [p.label for p in loaded] == ["4", "5", "6"]


def test_record_with_wrong_hash_is_refused():
    row = generate_shard(size=1, shards=1, shard=0, **SMALL).iloc[0].to_dict()
    row["puzzle_hash"] = "0" * 64
    with pytest.raises(SweepError, match="does not match"):
        puzzle_from_record(row)
