"""Designs that can tell measures apart: a selection criterion that decorrelates named difficulty
measures across the K puzzles, and the power of the contrast "which measure predicts better".

The paper's six puzzles could not separate SAT effort from footholds: over a selection where
two measures move together, whichever drives difficulty, both correlate with it. ``nonolab design
--discriminate A,B`` chooses the puzzles so that the named measures are decorrelated while each
keeps its spread (the information about its own slope).

Measures (:func:`measure_frame`): a pool column (the SAT counts ``conflicts``, ``decisions``,
``propagations`` of the pool's metrics table, transformed by ``log1p``) or any name of the
measure registry (:mod:`nonolab.measure.registry`, computed here for every eligible puzzle, put on
the registry's scale by its ``transform``). Each is z-scored over the eligible pool (mean 0,
population SD 1), so the spreads below are in pool SD units. Puzzles where a named measure is
undefined (empty in the registry) cannot be placed and are left out of the candidates.

Criterion (:func:`criterion`). With ``C_S`` the covariance matrix of the z-scored measures over
the selection ``S``, ``v_i`` its diagonal (each measure's variance) and ``R_S`` the correlation
matrix, ``log det C_S = log det R_S + sum_i log v_i``: the D-criterion of the puzzle-level
regression on the measures (intercept included, :func:`nonolab.design.selection.d_criterion`)
weighs decorrelation and spread equally. The discriminating criterion is::

    phi(S) = log det R_S + w sum_i log v_i - 10 sum_i max(0, log(s_min^2) - log v_i)

``det R_S`` is 1 exactly when the measures are uncorrelated over the selection and falls to 0
as they become collinear; ``w`` weighs each measure's spread against that (``w = 1``, the
default, is D-optimality over the named measures; ``w < 1`` buys lower correlation at the cost
of spread: ``--discriminate-weight``); the last term makes ``SD >= s_min`` (default 1: at least
the spread of a random selection) a near-hard floor for every measure. On the public pool the
default gave the contrast more power than ``w = 0.25`` (spread matters as much as
decorrelation) and far more than the D-optimal selection over the SAT metrics alone
(docs/designing-a-study.md, ``benchmarks/discriminate_bench.py``). It is maximised by a Fedorov exchange
(:func:`nonolab.design.selection.exchange`, the same exchange as the D-optimal selection's, with
the score :func:`criterion_scores`: each selected puzzle in turn swapped for the candidate that
most increases ``phi``, evaluated for every candidate at once by rank-one updates of the
selection's sums, until no swap helps) from seeded random starts, the best kept
(:func:`select_discriminating`).

Contrast (:func:`williams_test`, :func:`zou_interval`, :func:`contrast_power`). The planned test
compares the two measures' Spearman correlations with the puzzles' Bradley-Terry difficulty,
which share the BT ranking: Williams' t (Williams 1959; Steiger 1980, eq. 7) on ``K - 3`` df, with
Zou's (2007) interval for the difference. Power is simulated on the exact design (schedule and
selected puzzles) as :func:`nonolab.design.power.spearman_power` does for one metric: latent
difficulty driven by one measure (normal scores of its pool percentiles, population Spearman
``rho``), ratings by the same rating model, BT strengths per replication; a replication counts
when Williams' two-sided p is below alpha and the driver's correlation is the larger. Both
measures take the driver's role in turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from nonolab.design.power import PowerResult, RatingModel, _ratings, _seed
from nonolab.design.selection import DEFAULT_METRICS, SelectionError, exchange
from nonolab.stats.power import bt_win_counts, pearson_for_spearman, regularised_bt
from nonolab.stats.ranking import strongly_connected_batch

#: weight of the spread term (``w``; 1 = D-optimal over the named measures, the default: it
#: gave the contrast the most power on the public pool, docs/designing-a-study.md), the spread
#: floor in pool SDs (``s_min``) and its penalty
SPREAD_WEIGHT = 1.0
MIN_SD = 1.0
FLOOR_PENALTY = 10.0

#: pool columns usable as measures (the pool's SAT counts, log1p-transformed)
POOL_COLUMNS = (*DEFAULT_METRICS, "restarts")


# ----------------------------------------------------------------------------------------------
# measures over the pool


def parse_measures(text: str | Sequence[str]) -> tuple[str, ...]:
    """Return the measure names of ``--discriminate`` (``A,B[,C...]``); raise ``ValueError``
    for fewer than two distinct names or a name that is neither a pool SAT column
    (:data:`POOL_COLUMNS`) nor a registered measure (the message lists the known ones)."""
    names = [t.strip() for t in (text.split(",") if isinstance(text, str) else text)]
    names = [n for n in names if n]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"--discriminate needs two or more distinct measure names, not {text!r}")
    from nonolab.measure.registry import registry

    known = {*POOL_COLUMNS, *(m.name for m in registry())}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--discriminate: unknown measure(s) {unknown}; known: {sorted(known)}")
    return tuple(names)


def measure_frame(pool: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """Return one column per measure of ``names`` for the rows of ``pool``, on the measure's
    analysis scale (pool SAT columns: ``log1p``; registry measures: their ``transform``), not
    yet standardised; NaN where undefined. Raises ``KeyError`` for a name that is neither a
    pool column nor a registered measure (listing the registered names)."""
    from nonolab.measure.registry import get_measures, measures_table

    out = pd.DataFrame(index=pool.index)
    todo = [n for n in names if not (n in POOL_COLUMNS and n in pool.columns)]
    reg = get_measures(todo) if todo else []
    if reg:
        tab = measures_table(list(pool["puzzle"]), reg)
        tab.index = pool.index
    for n in names:
        if n in POOL_COLUMNS and n in pool.columns:
            out[n] = np.log1p(pool[n].to_numpy(dtype=float))
        else:
            m = next(m for m in reg if m.name == n)
            v = tab[n].to_numpy(dtype=float)
            out[n] = np.log1p(v) if m.transform == "log1p" else v
    return out


def standardise(frame: pd.DataFrame) -> np.ndarray:
    """Return ``frame`` z-scored per column (mean 0, population SD 1) as an array; raise
    :class:`SelectionError` for a constant measure."""
    z = frame.to_numpy(dtype=float)
    sd = z.std(axis=0)
    if not (sd > 0).all():
        bad = [c for c, s in zip(frame.columns, sd, strict=True) if not s > 0]
        raise SelectionError(f"measure(s) {bad} constant over the eligible pool")
    return (z - z.mean(axis=0)) / sd


# ----------------------------------------------------------------------------------------------
# criterion and exchange


def criterion(
    Z: np.ndarray,
    w: float = SPREAD_WEIGHT,
    min_sd: float = MIN_SD,
) -> float:
    """Return ``phi`` (module docstring) of the selection whose z-scored measures are the rows
    of ``Z`` (K x p); ``-inf`` when the covariance is singular."""
    return float(_phi(Z.sum(0)[None], (Z.T @ Z)[None], len(Z), w, min_sd)[0])


def _phi(s1: np.ndarray, s2: np.ndarray, k: int, w: float, min_sd: float) -> np.ndarray:
    """``phi`` from the sums ``s1`` (n x p) and cross-products ``s2`` (n x p x p) of n
    selections of ``k`` puzzles each."""
    cov = s2 / k - np.einsum("ni,nj->nij", s1, s1) / (k * k)
    sign, logdet = np.linalg.slogdet(cov)
    v = np.einsum("nii->ni", cov)
    with np.errstate(divide="ignore", invalid="ignore"):
        logv = np.log(np.where(v > 0, v, np.nan))
    floor = np.maximum(0.0, 2 * math.log(min_sd) - logv).sum(1)
    out = logdet - (1 - w) * logv.sum(1) - FLOOR_PENALTY * floor
    return np.where((sign > 0) & np.isfinite(out), out, -np.inf)


def criterion_scores(
    Z: np.ndarray, w: float = SPREAD_WEIGHT, min_sd: float = MIN_SD
) -> Callable[[np.ndarray], np.ndarray]:
    """Return ``score(rest)``: ``phi`` of the selection ``rest`` (row indices of ``Z``) plus
    each row of ``Z`` in turn, for all rows at once (rank-one updates of the sums)."""

    def score(rest: np.ndarray) -> np.ndarray:
        r = Z[rest]
        s1 = r.sum(0)[None] + Z
        s2 = (r.T @ r)[None] + np.einsum("ni,nj->nij", Z, Z)
        return _phi(s1, s2, len(rest) + 1, w, min_sd)

    return score


def select_discriminating(
    Z: np.ndarray,
    k: int,
    *,
    seed: int = 0,
    starts: int = 20,
    w: float = SPREAD_WEIGHT,
    min_sd: float = MIN_SD,
) -> np.ndarray:
    """Return the row positions of ``Z`` (z-scored measures of the candidates, n x p) of the K
    puzzles that maximise :func:`criterion` (exchange from ``starts`` seeded random starts; the
    best kept, ties by the lowest sorted positions). Raises :class:`SelectionError` when there
    are fewer than ``k`` candidates or ``k <= p``."""
    n, p = Z.shape
    if k > n:
        raise SelectionError(f"{k} puzzles requested from {n} candidates")
    if k <= p:
        raise SelectionError(f"{k} puzzles cannot decorrelate {p} measures: need > {p}")
    score = criterion_scores(Z, w, min_sd)
    rng = np.random.default_rng(np.random.SeedSequence([seed, k, 7]))
    best, best_val = None, -np.inf
    for _ in range(starts):
        sel = exchange(score, n, rng.choice(n, k, replace=False))
        val = criterion(Z[sel], w, min_sd)
        if (
            best is None
            or val > best_val + 1e-12
            or (abs(val - best_val) <= 1e-12 and tuple(sel) < tuple(best))
        ):
            best, best_val = sel, val
    assert best is not None
    return best


def selection_row(name: str, Z: np.ndarray, names: Sequence[str]) -> dict[str, object]:
    """Return the decorrelation and spread of one selection (rows of pool-z-scored measures):
    ``max_abs_correlation`` (largest |Pearson r| between two named measures over it),
    ``max_abs_spearman``, ``det_correlation`` (det R_S: 1 = uncorrelated), ``<name>_sd`` (SD
    in pool SDs), ``d_criterion`` (``det(C_S)^(1/(p+1))``, the D-criterion of ``[1, z...]``)
    and ``phi`` (:func:`criterion`). A correlation over a constant measure is empty."""
    c = np.corrcoef(Z.T) if Z.std(0).min() > 0 else None
    iu = np.triu_indices(Z.shape[1], 1)
    sp = stats.spearmanr(Z).statistic if Z.shape[1] > 1 and c is not None else None
    sp_m = np.atleast_2d(sp) if sp is not None else None
    if sp_m is not None and sp_m.shape == (1, 1):
        sp_m = np.array([[1.0, float(sp)], [float(sp), 1.0]])
    cov = np.cov(Z.T, bias=True)
    sign, logdet = np.linalg.slogdet(cov)
    row: dict[str, object] = {
        "selection": name,
        "n_puzzles": int(len(Z)),
        "max_abs_correlation": float(np.abs(c[iu]).max()) if c is not None else None,
        "max_abs_spearman": float(np.abs(sp_m[iu]).max()) if sp_m is not None else None,
        "det_correlation": float(np.linalg.det(c)) if c is not None else None,
        "d_criterion": float(math.exp(logdet / (Z.shape[1] + 1))) if sign > 0 else 0.0,
        "phi": criterion(Z),
    }
    for j, n in enumerate(names):
        row[f"{n}_sd"] = float(Z[:, j].std())
    return row


# ----------------------------------------------------------------------------------------------
# the contrast: dependent correlations sharing the BT ranking


def williams_test(r_a: float, r_b: float, r_ab: float, n: int) -> tuple[float, float]:
    """Return Williams' t and its two-sided p for H0 rho(y, a) = rho(y, b), where ``r_a`` =
    r(y, a), ``r_b`` = r(y, b) share y, and ``r_ab`` = r(a, b), over ``n`` observations (Steiger
    1980, eq. 7; df ``n - 3``)::

        t = (r_a - r_b) sqrt((n - 1)(1 + r_ab) / (2 (n - 1)/(n - 3) |R| + rbar^2 (1 - r_ab)^3))

    with ``|R| = 1 - r_a^2 - r_b^2 - r_ab^2 + 2 r_a r_b r_ab`` and ``rbar = (r_a + r_b)/2``.
    NaN (undefined) when ``n <= 3`` or a correlation is NaN."""
    t, p = williams_batch(np.array([r_a]), np.array([r_b]), np.array([r_ab]), n)
    return float(t[0]), float(p[0])


def williams_batch(
    r_a: np.ndarray, r_b: np.ndarray, r_ab: np.ndarray | float, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return Williams' t and two-sided p (:func:`williams_test`) for arrays of correlations."""
    r_a, r_b = np.asarray(r_a, dtype=float), np.asarray(r_b, dtype=float)
    r_ab = np.broadcast_to(np.asarray(r_ab, dtype=float), r_a.shape)
    if n <= 3:
        nan = np.full(r_a.shape, np.nan)
        return nan, nan
    det = 1 - r_a**2 - r_b**2 - r_ab**2 + 2 * r_a * r_b * r_ab
    rbar = (r_a + r_b) / 2
    den = 2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r_ab) ** 3
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (r_a - r_b) * np.sqrt((n - 1) * (1 + r_ab) / den)
    p = 2 * stats.t.sf(np.abs(t), n - 3)
    return t, p


def zou_interval(
    r_a: float, r_b: float, r_ab: float, n: int, level: float = 0.95
) -> tuple[float, float]:
    """Return Zou's (2007) interval for rho(y, a) - rho(y, b) (overlapping dependent
    correlations): Fisher-z intervals ``(l_a, u_a)``, ``(l_b, u_b)`` of each correlation (SE
    ``1/sqrt(n - 3)``), their correlation ``c = ((r_ab - r_a r_b / 2)(1 - r_a^2 - r_b^2 -
    r_ab^2) + r_ab^3) / ((1 - r_a^2)(1 - r_b^2))``, and ``L = d - sqrt((r_a - l_a)^2 + (u_b -
    r_b)^2 - 2c (r_a - l_a)(u_b - r_b))``, ``U = d + sqrt((u_a - r_a)^2 + (r_b - l_b)^2 - 2c
    (u_a - r_a)(r_b - l_b))`` with ``d = r_a - r_b``."""
    zq = special.ndtri(0.5 + level / 2) / math.sqrt(n - 3)
    la, ua = math.tanh(math.atanh(r_a) - zq), math.tanh(math.atanh(r_a) + zq)
    lb, ub = math.tanh(math.atanh(r_b) - zq), math.tanh(math.atanh(r_b) + zq)
    c = ((r_ab - r_a * r_b / 2) * (1 - r_a**2 - r_b**2 - r_ab**2) + r_ab**3) / (
        (1 - r_a**2) * (1 - r_b**2)
    )
    d = r_a - r_b
    lo = d - math.sqrt((r_a - la) ** 2 + (ub - r_b) ** 2 - 2 * c * (r_a - la) * (ub - r_b))
    hi = d + math.sqrt((ua - r_a) ** 2 + (r_b - lb) ** 2 - 2 * c * (ua - r_a) * (r_b - lb))
    return lo, hi


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho of a fixed vector ``x`` (K) with every row of ``y`` (R x K)."""
    rx = stats.rankdata(x)
    ry = stats.rankdata(y, axis=1)
    rx = rx - rx.mean()
    ry = ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (ry @ rx) / np.sqrt((ry**2).sum(1) * (rx**2).sum())


@dataclass(frozen=True)
class ContrastDesign:
    """The design of the contrast: ``queues`` (participants x M puzzle indices 0..K-1),
    ``values`` (K x m: the m named measures of the selected puzzles, analysis scale),
    ``scores`` (K x m: normal scores of their pool percentiles, on which latent difficulty
    depends), ``names`` (the m measures) and ``missing`` (final-rating missing rate)."""

    queues: np.ndarray
    values: np.ndarray
    scores: np.ndarray
    names: tuple[str, ...]
    missing: float = 0.1


def pool_normal_scores(pool_values: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Return the normal scores of ``values`` among ``pool_values`` (mid-rank percentiles,
    clipped to (1/(2n), 1 - 1/(2n)); as :func:`nonolab.design.selection.pool_scales`)."""
    ref = np.sort(np.asarray(pool_values, dtype=float))
    v = np.asarray(values, dtype=float)
    n = len(ref)
    below = np.searchsorted(ref, v, side="left")
    equal = np.searchsorted(ref, v, side="right") - below
    return special.ndtri(np.clip((below + equal / 2) / n, 0.5 / n, 1 - 0.5 / n))


def contrast_power(
    design: ContrastDesign,
    driver: int,
    rho: float,
    replications: int,
    seed: int,
    model: RatingModel | None = None,
    alpha: float = 0.05,
    bt_ridge: float = 0.01,
) -> PowerResult:
    """Return the power of the contrast when measure ``driver`` (a column of
    ``design.values``) drives difficulty at population Spearman ``rho`` (module docstring):
    the share of replications where, against every other named measure, Williams' two-sided
    p < ``alpha`` with the driver's Spearman correlation with BT difficulty the larger (with
    two measures, the one test; with more, the intersection-union test "the driver predicts
    better than each other measure", level ``alpha`` without correction). A replication whose
    win graph is not strongly connected has no BT estimate: it counts as failed and not
    rejected, as in :func:`nonolab.design.power.spearman_power`. ``extra``: ``driver``,
    ``picked_share`` (share of replications where the driver simply has the highest Spearman
    correlation, no test: the identifiability of the evaluation on these puzzles), the mean
    Spearman correlation of BT difficulty with each measure, and the largest |Spearman| between
    the driver and another measure over the selection."""
    model = model or RatingModel()
    q0 = design.queues
    k, m = design.values.shape
    n_i = q0.shape[0]
    rng = np.random.default_rng(_seed(seed, n_i, k, 35, driver))
    n_r = replications
    r = pearson_for_spearman(rho)
    s = design.scores[:, driver]
    d = model.difficulty_sd * (r * s + math.sqrt(1 - r * r) * rng.standard_normal((n_r, k)))
    q = np.broadcast_to(q0, (n_r, *q0.shape))
    person = model.expertise_effect * rng.standard_normal((n_r, n_i)) + rng.normal(
        0, model.participant_sd, (n_r, n_i)
    )
    d_q = np.take_along_axis(d, q.reshape(n_r, -1), axis=1).reshape(q.shape)
    ratings = _ratings(model.rating_mean + d_q + person[..., None], model, rng)
    ratings[rng.random(q.shape) < design.missing] = np.nan
    wins = bt_win_counts(np.ascontiguousarray(q), ratings, k)
    score = regularised_bt(wins, bt_ridge)
    ok = strongly_connected_batch(wins > 0)
    rhos = np.array([_spearman_rows(design.values[:, j], score) for j in range(m)])
    r_d = rhos[driver]
    sig = ok.copy()
    picked = np.ones(n_r, dtype=bool)
    sel_r = []
    for j in range(m):
        if j == driver:
            continue
        r_dj = float(stats.spearmanr(design.values[:, driver], design.values[:, j]).statistic)
        sel_r.append(abs(r_dj))
        _, p = williams_batch(r_d, rhos[j], r_dj, k)
        sig &= (np.nan_to_num(p, nan=1.0) < alpha) & (r_d > rhos[j])
        picked &= r_d > rhos[j]
    return PowerResult(
        "measure_contrast",
        n_i,
        k,
        int(q0.shape[1]),
        rho,
        n_r,
        int(sig.sum()),
        int((~ok).sum()),
        alpha,
        seed,
        {
            "driver": design.names[driver],
            "picked_share": float(picked.mean()),
            **{f"mean_rho_{n}": float(np.nanmean(rhos[j])) for j, n in enumerate(design.names)},
            "selection_max_abs_spearman": max(sel_r),
        },
    )


def contrast_design(
    queues: np.ndarray,
    pool_values: pd.DataFrame,
    selected: Sequence[int],
    names: Sequence[str],
    missing: float,
) -> ContrastDesign:
    """Return the :class:`ContrastDesign` of the puzzles at positions ``selected`` of
    ``pool_values`` (:func:`measure_frame` of the candidates, every named measure defined)
    served by ``queues``; latent difficulty on the candidates' percentiles."""
    vals = pool_values[list(names)].to_numpy(dtype=float)
    sel = vals[np.asarray(selected)]
    scores = np.column_stack([pool_normal_scores(vals[:, j], sel[:, j]) for j in range(len(names))])
    return ContrastDesign(np.asarray(queues), sel, scores, tuple(names), missing)


# ----------------------------------------------------------------------------------------------
# `nonolab design --discriminate`: the hooks into nonolab.design.study.run_design


@dataclass
class DesignDiscrimination:
    """The discriminating selection of one design run: ``names`` (the measures), ``frame``
    (:func:`measure_frame` of the eligible pool), ``defined`` (positions in the eligible pool
    where every named measure is defined), ``Z`` (their z-scores), ``d_optimal`` (the
    positions the D-optimal criterion chose at K, for comparison), ``chosen`` (the
    discriminating positions at K), ``weight`` (``w``)."""

    names: tuple[str, ...]
    frame: pd.DataFrame
    defined: np.ndarray
    Z: np.ndarray
    d_optimal: np.ndarray
    chosen: np.ndarray
    weight: float

    @property
    def label(self) -> str:
        """The selection's name in the design's tables (``discriminating_k<K>``)."""
        return f"discriminating_k{len(self.chosen)}"

    def record(self) -> dict[str, object]:
        """Return the plan's ``selection`` entries of the discriminating criterion (they replace
        the D-optimal ``criterion_id``, ``criterion``, ``spread`` and ``metrics``: the named
        measures; ``d_criterion`` stays that of the selection over the SAT metrics)."""
        row = self.rows()[0]
        return {
            "criterion_id": "discriminating",
            "criterion": f"discriminating: log det R_S + {self.weight} sum log v_i over "
            f"z(measures) of the eligible pool, each SD >= {MIN_SD} (nonolab.design.discriminate)",
            "spread": False,  # no tie cap: the criterion's own spread floor
            "metrics": list(self.names),
            "discriminate": list(self.names),
            "discriminate_weight": self.weight,
            "max_abs_measure_correlation": round(float(row["max_abs_correlation"]), 8)
            if row["max_abs_correlation"] is not None
            else None,
        }

    def rows(self) -> list[dict[str, object]]:
        """Return the decorrelation rows (:func:`selection_row`) of the discriminating and the
        D-optimal selection at K, over the named measures on the eligible pool's scale."""
        pos = {int(p): i for i, p in enumerate(self.defined)}
        z_d = [pos[int(p)] for p in self.d_optimal if int(p) in pos]
        z_c = [pos[int(p)] for p in self.chosen]
        k = len(self.chosen)
        return [
            selection_row(self.label, self.Z[z_c], self.names),
            selection_row(f"d_optimal_k{k}", self.Z[z_d], self.names),
        ]


def discriminating_choice(
    el: pd.DataFrame,
    chosen: dict[int, np.ndarray],
    names: Sequence[str],
    n_puzzles: int,
    seed: int,
    weight: float = SPREAD_WEIGHT,
) -> DesignDiscrimination:
    """Replace ``chosen`` (K -> positions in the eligible pool ``el``, the D-optimal
    selections) in place by the discriminating selections for every K above the number of
    measures, and return the :class:`DesignDiscrimination` at ``n_puzzles``. Raises
    :class:`SelectionError` when fewer than ``n_puzzles`` eligible puzzles have every measure
    defined, ``KeyError`` for an unknown measure."""
    frame = measure_frame(el, names)
    defined = np.flatnonzero(frame.notna().all(axis=1).to_numpy())
    if len(defined) < n_puzzles:
        raise SelectionError(
            f"--discriminate: only {len(defined)} eligible puzzles have {', '.join(names)} "
            f"defined; {n_puzzles} requested"
        )
    Z = standardise(frame.iloc[defined])
    d_opt = np.asarray(chosen[n_puzzles]).copy()
    for k in list(chosen):
        if len(names) < k <= len(defined):
            chosen[k] = np.sort(defined[select_discriminating(Z, k, seed=seed, w=weight)])
    return DesignDiscrimination(
        tuple(names), frame, defined, Z, d_opt, np.asarray(chosen[n_puzzles]), weight
    )


def contrast_rows(
    disc: DesignDiscrimination,
    queues: np.ndarray,
    rho: float,
    replications: int,
    seed: int,
    model: RatingModel,
    alpha: float,
    missing: float,
) -> list[PowerResult]:
    """Return the contrast's power (:func:`contrast_power`) at ``queues`` with each named
    measure the driver in turn, for the discriminating selection."""
    cand = disc.frame.iloc[disc.defined].reset_index(drop=True)
    pos = {int(p): i for i, p in enumerate(disc.defined)}
    cd = contrast_design(queues, cand, [pos[int(p)] for p in disc.chosen], disc.names, missing)
    return [
        contrast_power(cd, d, rho, replications, seed, model, alpha) for d in range(len(disc.names))
    ]


def analysis_record(
    disc: DesignDiscrimination, power: Sequence[PowerResult], participants: int, alpha: float
) -> dict[str, object]:
    """Return the plan's record of the contrast analysis (``kind`` ``measure_contrast``)."""
    low = min(power, key=lambda r: r.power)
    lo, hi = low.interval()
    return {
        "name": "measure_contrast_" + "_vs_".join(disc.names),
        "kind": "measure_contrast",
        "role": "secondary",
        "family": "measure contrast",
        "model": "rho_S(BT log-strength, m) for m in " + ", ".join(disc.names),
        "test": "Williams' t of dependent correlations sharing the BT ranking (df K - 3), "
        "two-sided, for each pair of measures; the best measure is declared when it beats "
        "every other (intersection-union); Zou's 95% interval for each difference",
        "alpha": alpha,
        "settings": {"rho": low.effect, "metric": ",".join(disc.names)},
        "power": {
            "participants": int(participants),
            "power": round(low.power, 6),
            "mc_ci": [round(lo, 6), round(hi, 6)],
            "replications": low.replications,
            "driver": str(low.extra["driver"]),
        },
    }


def markdown(disc: DesignDiscrimination, power: Sequence[PowerResult]) -> str:
    """Return the pre-registration's section on the contrast (selection and power)."""
    from nonolab.core.tables import to_markdown

    sel = pd.DataFrame(disc.rows())
    pw = pd.DataFrame(
        [
            {
                "driver": r.extra["driver"],
                "participants": r.n_participants,
                "rho": r.effect,
                "power": round(r.power, 3),
                "picked_share": round(float(r.extra["picked_share"]), 3),
                "mc_ci": f"[{r.interval()[0]:.3f}, {r.interval()[1]:.3f}]",
                "replications": r.replications,
            }
            for r in power
        ]
    )
    return "\n".join(
        [
            "",
            "## Which measure predicts better (measure contrast)",
            "",
            f"* Puzzles chosen by the discriminating criterion over {', '.join(disc.names)} "
            f"(log det of their correlation matrix over the selection + {disc.weight} x the sum "
            "of their log variances, each SD at least the pool's; docs/designing-a-study.md), "
            "in place of the D-optimal selection.",
            "* Test: Williams' t (df K - 3) of rho_S(BT difficulty, A) = rho_S(BT difficulty, "
            "B) for each pair of the measures, two-sided, with Zou's 95% interval for each "
            "difference; a measure is declared the better predictor when it beats every other "
            "(intersection-union test; family: measure contrast, no correction). Power: the "
            "share of simulated studies, each measure in turn driving difficulty, in which the "
            "driver is declared; picked_share: the share in which it merely has the highest "
            "correlation.",
            "",
            "### Decorrelation over the selection",
            "",
            to_markdown(sel.round(4)),
            "",
            "### Power of the contrast (simulated on the planned design)",
            "",
            to_markdown(pw),
            "",
        ]
    )
