"""Table 1 on a small study never prints p = 0: the p shown is the exact permutation p over all
n! orderings, the asymptotic p is only beside it (labelled), and the FDR adjusts the shown p."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from nonolab.stats.correlations import aligned_metrics, bh_fdr, erratum_table, table1


def study(n: int, order: list[int], seed: int = 0):
    """Strengths 1..n, raw means in ``order``, and metrics: decisions rise with the strengths
    (rho = 1), propagations fall (rho = -1), conflicts in a random order."""
    ids = [str(i) for i in range(n)]
    served = pd.DataFrame({"puzzle_id": ids, "puzzle_hash": [f"h{i}" for i in ids]})
    rng = np.random.default_rng(seed)
    metrics = pd.DataFrame(
        {
            "puzzle_hash": served["puzzle_hash"],
            "solver": "minisat22",
            "encoding": "block_start",
            "decisions": np.arange(n) * 10 + 5,
            "propagations": (n - np.arange(n)) * 7,
            "conflicts": rng.permutation(n) + 1,
        }
    )
    strengths = pd.DataFrame({"puzzle_id": ids, "strength": np.arange(1, n + 1, dtype=float)})
    raw = pd.Series([float(k) for k in order], index=pd.Index(ids, name="puzzle_id"))
    return strengths, raw, {"corrected": aligned_metrics(metrics, served)}


def exact_p(x, y) -> float:
    """Two-sided exact permutation p of Spearman's rho by brute force over all orderings."""
    obs = abs(stats.spearmanr(x, y)[0])
    rhos = [abs(stats.spearmanr(x, np.asarray(y)[list(p)])[0]) for p in itertools.permutations(
        range(len(y)))]  # fmt: skip
    return float(np.mean(np.asarray(rhos) >= obs - 1e-12))


def test_four_puzzles_rho_one_gives_the_exact_p():
    strengths, raw, aligned = study(4, [1, 2, 3, 4])
    t = table1(strengths, raw, aligned).set_index("metric")
    for metric, rho in (("decisions", 1.0), ("propagations", -1.0)):
        row = t.loc[metric]
        assert row["bt_rho"] == pytest.approx(rho)
        assert row["bt_p"] == pytest.approx(2 / 24)  # 0.083, not 0
        assert row["p_method"] == "exact permutation (all 24 orderings)"
        assert row["bt_p_asymptotic"] == pytest.approx(0.0, abs=1e-12)  # labelled, beside
    assert (t["bt_p"] > 0).all() and (t["bt_p_fdr"] > 0).all()
    assert t["bt_p_fdr"].to_numpy() == pytest.approx(bh_fdr(t["bt_p"]))


@pytest.mark.parametrize("n", [3, 4, 5, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shown_p_is_the_brute_force_exact_p(n, seed):
    order = list(np.random.default_rng(seed).permutation(n) + 1)
    strengths, raw, aligned = study(n, order, seed)
    t = table1(strengths, raw, aligned).set_index("metric")
    g = aligned["corrected"].set_index("puzzle_id")
    for metric in ("decisions", "propagations", "conflicts"):
        y = g.loc[strengths["puzzle_id"], metric].to_numpy(dtype=float)
        assert t.loc[metric, "bt_p"] == pytest.approx(exact_p(strengths["strength"], y))
        assert t.loc[metric, "raw_p"] == pytest.approx(exact_p(raw.to_numpy(), y))
        assert t.loc[metric, "bt_p"] >= 2 / math.factorial(n) - 1e-12


def test_many_puzzles_use_seeded_permutations_never_zero():
    strengths, raw, aligned = study(12, list(range(1, 13)))
    t = table1(strengths, raw, aligned, n_perm=999, seed=3).set_index("metric")
    assert t.loc["decisions", "p_method"] == "Monte Carlo permutation (999 seeded orderings)"
    assert t.loc["decisions", "bt_p"] == pytest.approx(1 / 1000)


def test_erratum_keeps_the_published_methods_asymptotic_p():
    strengths, raw, aligned = study(5, [2, 1, 3, 5, 4])
    t = table1(strengths, raw, aligned)
    e = erratum_table(t, "minisat22", "block_start").set_index("metric")
    t = t.set_index("metric")
    assert e["corrected_bt_p"].to_numpy() == pytest.approx(t["bt_p_asymptotic"].to_numpy())
    assert e["corrected_perm_p"].to_numpy() == pytest.approx(t["bt_p"].to_numpy())
    want = bh_fdr(t["bt_p_asymptotic"])
    assert e["corrected_bt_p_fdr"].to_numpy() == pytest.approx(want)
