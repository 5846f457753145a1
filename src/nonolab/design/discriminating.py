"""Designs that can tell difficulty measures apart: choose puzzles on which named measures are
decorrelated, and the power of the contrast "which measure drives difficulty".

The paper's six puzzles could not separate SAT effort from footholds: over them the measures
rank the puzzles nearly alike. :func:`discriminating_selection` chooses ``k`` puzzles of a
measured pool (``results/measures/pool.csv``) by an exchange algorithm maximising the
*decorrelation criterion*: the determinant of the named measures' correlation matrix over the
selection (1 when they are uncorrelated, 0 when one is a linear function of the others), with
each measure kept spread out (its SD over the selection at least ``min_spread`` of its SD over
the pool; a selection that breaks this scores 0). :func:`d_optimal_selection` is the comparison:
the usual D-optimal choice, maximising ``det(X'X)`` of the standardised measures (spread and
decorrelation mixed). Measures are scaled by their registry transform first (``log1p`` for
counts).

:func:`contrast_power` is the power of the contrast on a fixed selection: studies are simulated
with each named measure in turn driving latent difficulty (the simulator's rating model,
:class:`nonolab.sim.model.SimParams`), and the share of studies in which the puzzle-level
Spearman picks the true driver among the named measures is reported per driver (the
identifiability of ``benchmarks/measures_identifiability.py``, on the chosen puzzles).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from nonolab.sim.model import SimParams


def scaled_measures(
    pool: pd.DataFrame, names: Sequence[str], transforms: Mapping[str, str] | None = None
) -> np.ndarray:
    """Return the named measures of every pool puzzle as an ``n x m`` array, transformed
    (``log1p`` or ``identity``, default ``identity``) and standardised over the pool
    (population SD). Raises ``ValueError`` for a measure that is undefined somewhere or
    constant over the pool (it cannot be decorrelated from anything)."""
    transforms = transforms or {}
    cols = []
    for n in names:
        x = pool[n].to_numpy(dtype=float)
        if not np.isfinite(x).all():
            raise ValueError(f"measure {n!r} is undefined for some pool puzzles")
        if transforms.get(n) == "log1p":
            x = np.log1p(x)
        if np.ptp(x) == 0:
            raise ValueError(f"measure {n!r} is constant over the pool")
        cols.append((x - x.mean()) / x.std())
    return np.column_stack(cols)


def decorrelation(x: np.ndarray, min_spread: float = 0.5) -> float:
    """Return the decorrelation criterion of a selection ``x`` (rows: puzzles, columns:
    pool-standardised measures): ``det`` of the measures' correlation matrix over the rows, or
    0 when some measure's SD over the rows is below ``min_spread`` (pool SD units)."""
    sd = x.std(axis=0)
    if (sd < min_spread).any():
        return 0.0
    return float(max(np.linalg.det(np.corrcoef(x, rowvar=False)), 0.0))


def d_criterion(x: np.ndarray) -> float:
    """Return the D-optimality criterion ``det(X'X) / n^m`` of the centred rows ``x``."""
    xc = x - x.mean(axis=0)
    n, m = x.shape
    return float(np.linalg.det(xc.T @ xc) / n**m)


def _exchange(
    x: np.ndarray, k: int, score, seed: int, max_passes: int = 20, candidates: int = 200
) -> list[int]:
    """Greedy exchange: from a random ``k``-subset, swap a selected row for the best of
    ``candidates`` random unselected rows whenever that raises ``score``; stop after a pass with
    no improvement or ``max_passes`` passes. Returns the selected row indices, sorted."""
    rng = np.random.default_rng(seed)
    n = len(x)
    if not 2 <= k <= n:
        raise ValueError(f"select between 2 and {n} puzzles, not {k}")
    sel = list(rng.choice(n, size=k, replace=False))
    best = score(x[sel])
    for _ in range(max_passes):
        improved = False
        for i in range(k):
            outside = np.setdiff1d(np.arange(n), sel)
            pool = rng.choice(outside, size=min(candidates, len(outside)), replace=False)
            for j in pool:
                trial = sel.copy()
                trial[i] = int(j)
                s = score(x[trial])
                if s > best + 1e-12:
                    sel, best, improved = trial, s, True
        if not improved:
            break
    return sorted(int(i) for i in sel)


def discriminating_selection(
    pool: pd.DataFrame,
    names: Sequence[str],
    k: int,
    *,
    transforms: Mapping[str, str] | None = None,
    min_spread: float = 0.5,
    seed: int = 0,
) -> list[int]:
    """Return the row positions of ``k`` pool puzzles chosen to decorrelate the named measures
    (module docstring; :func:`decorrelation`)."""
    x = scaled_measures(pool, names, transforms)
    return _exchange(x, k, lambda s: decorrelation(s, min_spread), seed)


def d_optimal_selection(
    pool: pd.DataFrame,
    names: Sequence[str],
    k: int,
    *,
    transforms: Mapping[str, str] | None = None,
    seed: int = 0,
) -> list[int]:
    """Return the row positions of ``k`` pool puzzles maximising :func:`d_criterion`."""
    x = scaled_measures(pool, names, transforms)
    return _exchange(x, k, d_criterion, seed)


def selection_summary(x: np.ndarray) -> dict[str, float]:
    """Return ``max_abs_r`` (largest absolute Pearson correlation between two measures over the
    selection), ``max_abs_rho`` (the same for Spearman), ``min_sd`` (smallest SD over the
    selection, pool SD units) and ``decorrelation`` (:func:`decorrelation` with no spread
    floor)."""
    m = x.shape[1]
    r = np.corrcoef(x, rowvar=False)
    rho = np.corrcoef(stats.rankdata(x, axis=0), rowvar=False)  # Spearman: Pearson of ranks
    off = ~np.eye(m, dtype=bool)
    return {
        "max_abs_r": float(np.abs(r[off]).max()),
        "max_abs_rho": float(np.abs(rho[off]).max()),
        "min_sd": float(x.std(axis=0).min()),
        "decorrelation": decorrelation(x, 0.0),
    }


def contrast_power(
    x: np.ndarray,
    n_participants: int,
    *,
    reps: int = 200,
    strength: float = 0.6,
    seed: int = 0,
    per_participant: int = 3,
) -> np.ndarray:
    """Return, per named measure (columns of ``x``, the selected puzzles' standardised
    measures), the share of simulated studies in which the puzzle-level Spearman of the mean
    final rating picks that measure when it is the true driver (latent difficulty
    ``difficulty_sd * (strength * z + sqrt(1 - strength^2) e)``; every participant rates
    ``per_participant`` puzzles; rating model of :class:`nonolab.sim.model.SimParams` at its
    defaults). A tie for the top counts as a miss."""
    p = SimParams(metric_strength=strength)
    rng = np.random.default_rng(seed)
    k, m = x.shape
    hits = np.zeros(m)
    sd_noise = float(np.hypot(p.noise_sd, p.final_noise_sd))
    for d in range(m):
        z = (x[:, d] - x[:, d].mean()) / x[:, d].std()
        for _ in range(reps):
            latent = p.difficulty_sd * (
                strength * z + np.sqrt(1 - strength**2) * rng.standard_normal(k)
            )
            total = np.zeros(k)
            count = np.zeros(k)
            for _ in range(n_participants):
                seen = rng.choice(k, size=per_participant, replace=False)
                bias = rng.normal(0, p.participant_sd) + p.expertise_effect * rng.standard_normal()
                y = p.rating_mean + latent[seen] + bias + rng.normal(0, sd_noise, per_participant)
                total[seen] += np.clip(np.floor(y + 0.5), 1, 5)
                count[seen] += 1
            ok = count > 0
            means = total[ok] / count[ok]
            rhos = [stats.spearmanr(x[ok, c], means).statistic for c in range(m)]
            best = np.nanmax(rhos)
            top = [c for c in range(m) if np.isclose(rhos[c], best)]
            hits[d] += top == [d]
    return hits / reps
