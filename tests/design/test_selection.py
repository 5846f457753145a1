"""Puzzle selection: the D-criterion, the exchange against brute force, pools, constraints."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.design.selection import (
    Constraints,
    d_criterion,
    design_matrix,
    eligible,
    load_pool,
    pool_scales,
    read_packed_pool,
    select_puzzles,
)
from nonolab.sat.puzzles import Puzzle


def _pool(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(values)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.integers(8, 12), st.integers(1, 2), st.data())
def test_exchange_finds_the_brute_force_optimum(seed: int, n: int, p: int, data) -> None:
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(p + 1, min(n - 1, p + 3)))
    cols = {f"m{i}": rng.integers(0, 60, n).astype(float) for i in range(p)}
    pool = _pool(cols)
    names = list(cols)
    if any(np.log1p(pool[c]).std() == 0 for c in names):
        return
    X = design_matrix(pool, names)
    best = max(d_criterion(X[list(c)]) for c in itertools.combinations(range(n), k))
    sel = select_puzzles(pool, k, names, seed=seed, starts=10)
    assert d_criterion(X[sel]) == pytest.approx(best, rel=1e-9)


def test_single_metric_criterion_is_the_sd() -> None:
    pool = _pool({"m": [0, 1, 2, 3, 10, 30, 100]})
    X = design_matrix(pool, ["m"])
    sel = [0, 3, 6]
    x = X[sel, 1]
    assert d_criterion(X[sel]) == pytest.approx(x.std(), rel=1e-12)  # det(X'X/K) = var
    # the optimum of two takes the two extremes
    assert sorted(select_puzzles(pool, 2, ["m"])) == [0, 6]


def test_correlated_metrics_are_separated() -> None:
    """Two strongly correlated metrics: the selection spreads the puzzles along the direction
    that separates the two effects (x_a - x_b) as well as along their common one, and beats
    every one of 2,000 random selections."""
    rng = np.random.default_rng(0)
    a = rng.normal(3, 1, 300)
    b = a + rng.normal(0, 0.3, 300)
    pool = _pool({"a": np.expm1(np.abs(a)), "b": np.expm1(np.abs(b))})
    X = design_matrix(pool, ["a", "b"])
    sel = select_puzzles(pool, 20, ["a", "b"])
    diff = X[:, 1] - X[:, 2]
    assert diff[sel].std() > 1.5 * diff.std()
    rand = [d_criterion(X[rng.choice(300, 20, replace=False)]) for _ in range(2000)]
    assert d_criterion(X[sel]) > max(rand)


def test_pool_scales() -> None:
    pool = _pool({"m": [0, 0, 1, 2, 3]})
    scores, z = pool_scales(pool, "m", [0, 3])
    assert scores[0] < 0 < scores[1]
    lx = np.log1p(np.array([0, 0, 1, 2, 3.0]))
    assert z == pytest.approx((np.log1p([0, 3]) - lx.mean()) / lx.std())


def test_packed_pool_roundtrip(tmp_path) -> None:
    rng = np.random.default_rng(1)
    lines = []
    puzzles = []
    for _ in range(5):
        g = rng.integers(0, 2, (4, 6)).tolist()
        p = Puzzle.from_grid(g)
        puzzles.append(p)
        f = lambda c: ".".join(map(str, c)) if c else "0"  # noqa: E731
        clues = ";".join([*(f(c) for c in p.cols), *(f(c) for c in p.rows)])
        bits = "".join(str(v) for row in g for v in row)
        lines.append(f"{clues}|{bits}")
    path = tmp_path / "pool.txt"
    path.write_text("\n".join(lines) + "\n")
    assert [p.hash for p in read_packed_pool(path)] == [p.hash for p in puzzles]


def test_public_pool_and_constraints(study_dir) -> None:
    txt = study_dir / "nonograms10x10.txt"
    pool = load_pool(txt, study_dir / "nonogram_solver_stats.csv")
    assert len(pool) == 1000 and pool["puzzle_hash"].is_unique
    sub = pool.iloc[:60].reset_index(drop=True)
    el = eligible(sub, Constraints(drop_top=0.1, fill=(0.0, 0.55)))
    assert len(el) <= 54
    assert (el["fill"] <= 0.55).all()
    kept = set(el["pool_id"])
    top = sub.sort_values("conflicts", ascending=False, kind="stable").iloc[:6]["pool_id"]
    assert not kept & set(top)
    assert el["unique"].all()
    ls = eligible(sub, Constraints(drop_top=0, line_solvable=True))
    nls = eligible(sub, Constraints(drop_top=0, line_solvable=False))
    assert len(ls) + len(nls) == len(eligible(sub, Constraints(drop_top=0)))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.integers(8, 11), st.integers(1, 2), st.data())
def test_quadratic_and_tie_capped_selections_find_the_brute_force_optimum(
    seed: int, n: int, p: int, data
) -> None:
    """Generated small pools with many ties: the exchange reaches the brute-force optimum of
    the quadratic criterion among the selections that respect the tie cap, and never exceeds
    the cap."""
    rng = np.random.default_rng(seed)
    k = data.draw(st.integers(p + 2, min(n - 1, p + 4)))
    cap = data.draw(st.integers(1, 3))
    cols = {f"m{i}": rng.integers(0, 6, n).astype(float) for i in range(p)}
    pool = _pool(cols)
    names = list(cols)
    if any(np.log1p(pool[c]).std() == 0 for c in names):
        return
    v = pool[names[0]].to_numpy()
    counts = np.unique(v, return_counts=True)[1]
    if np.minimum(counts, cap).sum() < k or -(-k // len(counts)) > cap:
        return  # the cap the selection would use is another one
    X = design_matrix(pool, names, "d_quadratic")
    ok = [
        c
        for c in itertools.combinations(range(n), k)
        if np.unique(v[list(c)], return_counts=True)[1].max() <= cap
    ]
    best = max(d_criterion(X[list(c)]) for c in ok)
    sel = select_puzzles(
        pool, k, names, seed=seed, starts=10, criterion="d_quadratic", distinct=True, max_tied=cap
    )
    assert np.unique(v[sel], return_counts=True)[1].max() <= cap
    if best > 0:
        assert d_criterion(X[sel]) == pytest.approx(best, rel=1e-6)


def test_quadratic_selection_spreads_over_the_middle() -> None:
    """One metric, values 0..20: the straight-line optimum takes only the two ends; the
    quadratic one also the middle (the D-optimal design for a quadratic: thirds at the two ends
    and the middle, on the log scale), and the tie cap spreads each group."""
    pool = _pool({"m": [float(x) for x in range(21)] * 3})
    x = np.log1p(pool["m"].to_numpy())
    lin = select_puzzles(pool, 9, ["m"], seed=1)
    quad = select_puzzles(pool, 9, ["m"], seed=1, criterion="d_quadratic")
    mid = (x > x.min() + 0.25 * np.ptp(x)) & (x < x.max() - 0.25 * np.ptp(x))
    assert not mid[lin].any() and mid[quad].sum() >= 2
    capped = select_puzzles(pool, 9, ["m"], seed=1, criterion="d_quadratic", distinct=True)
    assert np.unique(pool["m"].to_numpy()[capped], return_counts=True)[1].max() <= 2
    with pytest.raises(Exception, match="criterion"):
        design_matrix(pool, ["m"], "d_cubic")
