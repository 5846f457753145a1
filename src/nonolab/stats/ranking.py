"""Bradley-Terry ranking of reported difficulty (METHODS 7).

Data format, stated once: a *comparisons* table with columns ``participant_id``, ``winner``,
``loser`` (item labels; the winner is the puzzle rated harder) and ``weight`` (1 for a decided
pair; a tie gives two rows, one each way, with weight 0.5). Within each participant every pair of
rated puzzles is one comparison.

The maximum-likelihood fit uses choix (``ilsr_pairwise`` with no regularisation, whose fixed point
is the ML estimate; about 30x faster than ``opt_pairwise``, which matters for the bootstrap) on
``(winner, loser)`` index pairs in which each decided comparison appears twice and each tie once
each way (so every data point has weight 1/2); the log-likelihood of the strengths is the weighted
sum of ``log sigmoid(theta_w - theta_l)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import choix
import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import log_expit

COMPARISON_COLUMNS = ["participant_id", "winner", "loser", "weight"]


def pairwise_comparisons(
    ratings: pd.DataFrame,
    rating_col: str = "final_difficulty",
    item_col: str = "puzzle_id",
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return the within-participant comparisons table (see module docstring).

    Rows with a missing rating are skipped. Raises ``ValueError`` when a participant rated the
    same item twice.
    """
    df = ratings[[participant_col, item_col, rating_col]].dropna(subset=[rating_col])
    dup = df.duplicated([participant_col, item_col])
    if dup.any():
        bad = df.loc[dup, [participant_col, item_col]].iloc[0].tolist()
        raise ValueError(f"participant {bad[0]!r} rated item {bad[1]!r} more than once")
    rows = []
    for pid, g in df.sort_values([participant_col, item_col]).groupby(participant_col, sort=True):
        recs = list(zip(g[item_col], g[rating_col], strict=True))
        for (a, ra), (b, rb) in itertools.combinations(recs, 2):
            if ra > rb:
                rows.append((pid, a, b, 1.0))
            elif rb > ra:
                rows.append((pid, b, a, 1.0))
            else:
                rows.append((pid, a, b, 0.5))
                rows.append((pid, b, a, 0.5))
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def _choix_data(comparisons: pd.DataFrame, items: Sequence) -> list[tuple[int, int]]:
    idx = {k: i for i, k in enumerate(items)}
    unknown = set(comparisons["winner"]).union(comparisons["loser"]) - set(idx)
    if unknown:
        raise ValueError(f"comparisons mention items not in the item list: {sorted(unknown)}")
    data: list[tuple[int, int]] = []
    for w, lo, wt in zip(
        comparisons["winner"], comparisons["loser"], comparisons["weight"], strict=True
    ):
        reps = int(round(wt * 2))
        if abs(reps - wt * 2) > 1e-9:
            raise ValueError(f"comparison weight {wt} is not a multiple of 1/2")
        data.extend([(idx[w], idx[lo])] * reps)
    return data


def log_likelihood(theta: np.ndarray, comparisons: pd.DataFrame, items: Sequence) -> float:
    """Return the Bradley-Terry log-likelihood (nats) of log-strengths ``theta`` (item order)."""
    idx = {k: i for i, k in enumerate(items)}
    w = comparisons["winner"].map(idx).to_numpy()
    lo = comparisons["loser"].map(idx).to_numpy()
    theta = np.asarray(theta, dtype=float)
    return float(np.sum(comparisons["weight"].to_numpy() * log_expit(theta[w] - theta[lo])))


def fit_log_strengths(comparisons: pd.DataFrame, items: Sequence, tol: float = 1e-10) -> np.ndarray:
    """Return the ML log-strengths (item order, centred to mean 0) fitted by choix.

    Raises ``ValueError`` when an item never wins or never loses (the ML estimate is infinite).
    """
    return _fit_data(_choix_data(comparisons, items), len(items), tol)


def _fit_data(data: list[tuple[int, int]], n_items: int, tol: float = 1e-10) -> np.ndarray:
    wins = {w for w, _ in data}
    losses = {lo for _, lo in data}
    for found, what in ((wins, "wins"), (losses, "loses")):
        absent = [k for k in range(n_items) if k not in found]
        if absent:
            raise ValueError(f"item index(es) {absent} never {what}: Bradley-Terry ML is unbounded")
    theta = choix.ilsr_pairwise(n_items, data, alpha=0.0, tol=tol, max_iter=10_000)
    return np.asarray(theta, dtype=float) - float(np.mean(theta))


def normalised_strengths(theta: np.ndarray) -> np.ndarray:
    """Return strengths ``exp(theta)`` scaled to geometric mean 1 (unitless)."""
    theta = np.asarray(theta, dtype=float)
    return np.exp(theta - theta.mean(axis=-1, keepdims=True))


def lr_test(comparisons: pd.DataFrame, items: Sequence) -> dict[str, float]:
    """Return the likelihood-ratio test of the fitted model against equal strengths.

    Keys: ``chi2`` (2 x log-likelihood difference), ``df`` (items - 1), ``p`` (chi-square upper
    tail), ``loglik`` and ``loglik_null`` (nats), ``n_comparisons`` (participant pairs).
    """
    theta = fit_log_strengths(comparisons, items)
    ll1 = log_likelihood(theta, comparisons, items)
    ll0 = log_likelihood(np.zeros(len(items)), comparisons, items)
    chi2 = max(2.0 * (ll1 - ll0), 0.0)
    df = len(items) - 1
    return {
        "chi2": chi2,
        "df": df,
        "p": float(stats.chi2.sf(chi2, df)),
        "loglik": ll1,
        "loglik_null": ll0,
        "n_comparisons": float(comparisons["weight"].sum()),
    }


@dataclass(frozen=True)
class Bootstrap:
    """Participant-bootstrap log-strengths: ``theta`` (n_ok x items) and failed resample count."""

    theta: np.ndarray
    n_failed: int
    seed: int


def bootstrap_log_strengths(
    comparisons: pd.DataFrame,
    items: Sequence,
    n_boot: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = 500,
) -> Bootstrap:
    """Resample participants with replacement ``n_boot`` times and refit each time.

    Uses ``numpy.random.default_rng(seed)``; a resample in which an item never wins or never
    loses is counted in ``n_failed`` and skipped. ``progress(i, n_boot)`` is called every
    ``progress_every`` resamples.
    """
    rng = np.random.default_rng(seed)
    parts = sorted(comparisons["participant_id"].unique())
    by_part = {
        p: _choix_data(g, items) for p, g in comparisons.groupby("participant_id", sort=True)
    }
    per = [by_part[p] for p in parts]
    out, failed = [], 0
    for i in range(n_boot):
        draw = rng.integers(0, len(parts), size=len(parts))
        sample = [pair for j in draw for pair in per[j]]
        try:
            out.append(_fit_data(sample, len(items), tol=1e-9))
        except ValueError:
            failed += 1
        if progress is not None and (i + 1) % progress_every == 0:
            progress(i + 1, n_boot)
    theta = np.array(out) if out else np.empty((0, len(items)))
    return Bootstrap(theta=theta, n_failed=failed, seed=seed)


def strengths_table(
    comparisons: pd.DataFrame,
    items: Sequence,
    boot: Bootstrap | None = None,
    level: float = 0.95,
    hashes: dict | None = None,
) -> pd.DataFrame:
    """Return one row per item: ``puzzle_id``, ``puzzle_hash``, ``strength`` (geometric mean 1),
    ``log_strength`` (natural log), ``ci_low``/``ci_high`` (percentile bootstrap interval of
    the normalised strength at ``level``) and ``rank`` (1 = rated hardest)."""
    theta = fit_log_strengths(comparisons, items)
    s = normalised_strengths(theta)
    lo = hi = np.full(len(items), np.nan)
    if boot is not None and len(boot.theta):
        bs = normalised_strengths(boot.theta)
        a = (1 - level) / 2
        lo, hi = np.quantile(bs, [a, 1 - a], axis=0)
    df = pd.DataFrame(
        {
            "puzzle_id": [str(k) for k in items],
            "puzzle_hash": [(hashes or {}).get(k, "") for k in items],
            "strength": s,
            "log_strength": np.log(s),
            "ci_low": lo,
            "ci_high": hi,
        }
    )
    df["rank"] = df["strength"].rank(ascending=False, method="min").astype(int)
    return df
