"""Pause threshold from a Gaussian mixture of log inter-event gaps (METHODS 5).

Gaps are the time differences (seconds) between consecutive interaction events of one attempt, as
returned by :func:`nonolab.study.features.interaction_gaps` (the same gaps the pause counts use: events
of a puzzle window with role ``interaction`` or ``marker``, one per log line). Mixtures with 1..3
components are fitted to the natural log of the strictly positive gaps; the threshold is where the
posteriors of the middle and slowest components are equal. EM stopped at scikit-learn's default
tolerance (the published fit) is not at an optimum; :func:`fit_converged_pause_model` continues EM
until the crossing no longer moves.

The EM is scikit-learn ``GaussianMixture``'s (full covariance, k-means starts drawn by
``sklearn.cluster.KMeans``, best of ``n_init`` by lower bound, warm-start continuation) written
out for one feature (:func:`_em`): the same iterations to rounding, about ten times cheaper per
iteration than scikit-learn's general d-dimensional code on ~29,000 gaps, which matters because
the checked fit and its random-state checks take about 4,000 iterations.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning


@dataclass(frozen=True)
class PauseModel:
    """A fitted pause model. Times in seconds; ``means_s`` are exp of the log-space means.

    ``bic``: k -> BIC of the k-component fit (on log gaps); ``delta_bic_vs_1``: k -> BIC(1) -
    BIC(k) (positive = better than one component); ``means_log``/``sds_log``/``weights`` of the
    largest fit, components in ascending mean order; ``threshold_s``: exp of the equal-posterior
    crossing of the two slowest components (NaN when the largest fit has fewer than 2).
    ``log_likelihood``: total log-likelihood of the largest fit (natural log, summed over the
    fitted gaps); ``n_iter``: its EM iterations (of the best start, plus any continuation);
    ``converged``: whether EM met its tolerance, or the outcome of the continuation check when
    ``check`` (:func:`fit_converged_pause_model`) is given.
    """

    n_gaps: int
    n_positive: int
    median_gap_s: float
    bic: dict[int, float]
    delta_bic_vs_1: dict[int, float]
    means_log: tuple[float, ...]
    sds_log: tuple[float, ...]
    weights: tuple[float, ...]
    threshold_log: float
    threshold_s: float
    seed: int
    tol: float = 1e-6
    log_likelihood: float = float("nan")
    n_iter: int = 0
    converged: bool = False
    check: dict | None = None

    @property
    def means_s(self) -> tuple[float, ...]:
        """Component means back-transformed to seconds (geometric means of the components)."""
        return tuple(float(np.exp(m)) for m in self.means_log)


def equal_posterior_crossing(
    means: Sequence[float], sds: Sequence[float], weights: Sequence[float], i: int, j: int
) -> float:
    """Return the point between ``means[i]`` and ``means[j]`` where components ``i`` and ``j``
    have equal weighted density (equal posterior), found by Brent's method (same units as
    ``means``). Raises ``ValueError`` when there is no sign change between the means."""

    def f(z: float) -> float:
        return weights[i] * norm.pdf(z, means[i], sds[i]) - weights[j] * norm.pdf(
            z, means[j], sds[j]
        )

    a, b = sorted((means[i], means[j]))
    if f(a) * f(b) > 0:
        raise ValueError("component densities do not cross between the means")
    return float(brentq(f, a, b, xtol=1e-12))


#: scikit-learn's default EM tolerance, which the published fit used (EM stops early).
PUBLISHED_EM_TOL = 1e-3
#: EM tolerance the converged fit starts from; :func:`fit_converged_pause_model` then tightens
#: it until the crossing no longer moves.
CONVERGED_EM_TOL = 1e-6
#: Largest move of the crossing (seconds) allowed when EM continues at a tighter tolerance.
CONVERGED_MAX_MOVE_S = 1e-4
#: Each continuation divides the EM tolerance by this.
CONVERGED_TOL_FACTOR = 100.0
#: Smallest EM tolerance tried before the fit is declared not converged.
CONVERGED_MIN_TOL = 1e-14


#: scikit-learn's GaussianMixture defaults the EM below keeps: variance regularisation and the
#: floor added to each component's responsibility total.
REG_COVAR = 1e-6
_NK_FLOOR = 10 * np.finfo(float).eps
_LOG_2PI = float(np.log(2 * np.pi))


def _log_positive_gaps(
    gaps_s: Sequence[float] | np.ndarray, max_components: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(gaps, log of the positive gaps)``, validating the gaps (seconds)."""
    g = np.asarray(gaps_s, dtype=float)
    if g.ndim != 1 or not np.all(np.isfinite(g)) or (g < 0).any():
        raise ValueError("gaps must be a 1-D array of finite non-negative seconds")
    pos = g[g > 0]
    if len(pos) < 10 * max_components:
        raise ValueError(f"only {len(pos)} positive gaps: too few for a {max_components}-mixture")
    return g, np.log(pos)


@dataclass(frozen=True)
class _Mixture:
    """State of a 1-D Gaussian mixture fitted by :func:`_em` (log-seconds; components in fitted
    order). ``lower_bound``: scikit-learn's ``lower_bound_``, the mean log-likelihood per point of
    the parameters before the last M-step (-inf before any EM); ``n_iter`` and ``converged``: of
    the last EM run; ``tol``: its tolerance."""

    weights: np.ndarray
    means: np.ndarray
    variances: np.ndarray
    lower_bound: float = -np.inf
    n_iter: int = 0
    converged: bool = False
    tol: float = float("nan")


def _m_step(
    x: np.ndarray, resp: np.ndarray, work: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(responsibility totals, means, variances)`` of the responsibilities ``resp``
    (components x points), as scikit-learn's ``_estimate_gaussian_parameters`` (full
    covariance, one feature) computes them; ``work``: a components x points scratch array."""
    nk = resp.sum(axis=1) + _NK_FLOOR
    means = (resp @ x) / nk
    sq = np.subtract(x[None, :], means[:, None], out=work)
    np.square(sq, out=sq)
    variances = np.einsum("kn,kn->k", resp, sq) / nk + REG_COVAR
    return nk, means, variances


def _e_step(x: np.ndarray, m: _Mixture, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """Return ``(mean log-likelihood per point, responsibilities)`` (components x points, in
    ``out`` when given) of ``m`` on ``x``: the weighted log-densities in scikit-learn's
    expression (``y = x * p - mu * p`` with ``p = 1/sd``, its precision Cholesky factor), then a
    max-shifted log-sum-exp, in place in one components x points array."""
    pc = 1.0 / np.sqrt(m.variances)
    z = np.multiply(x[None, :], pc[:, None], out=out)
    z -= (m.means * pc)[:, None]
    np.square(z, out=z)
    z += _LOG_2PI
    z *= -0.5
    z += (np.log(pc) + np.log(m.weights))[:, None]
    top = z.max(axis=0)
    z -= top
    np.exp(z, out=z)
    total = z.sum(axis=0)
    z /= total
    return float(np.mean(top + np.log(total))), z


def _kmeans_start(x: np.ndarray, k: int, random_state: np.random.RandomState) -> _Mixture:
    """Return scikit-learn GaussianMixture's ``init_params="kmeans"`` start: one k-means run
    (``n_init=1``, drawing from ``random_state``) and the mixture of its clusters."""
    labels = KMeans(n_clusters=k, n_init=1, random_state=random_state).fit(x[:, None]).labels_
    resp = np.zeros((k, len(x)))
    resp[labels, np.arange(len(x))] = 1.0
    nk, means, variances = _m_step(x, resp)
    return _Mixture(nk / len(x), means, variances)


def _kmeans_start_one(x: np.ndarray) -> _Mixture:
    """Return the one-component start (k-means with one cluster labels every point alike)."""
    nk, means, variances = _m_step(x, np.ones((1, len(x))))
    return _Mixture(nk / len(x), means, variances)


def _em(x: np.ndarray, start: _Mixture, tol: float, max_iter: int) -> _Mixture:
    """Run EM on ``x`` from ``start`` until the mean log-likelihood per point changes by less
    than ``tol`` or ``max_iter`` iterations, and return the new state.

    Each iteration is scikit-learn GaussianMixture's (full covariance, one feature): E-step at
    the current parameters, whose mean log-likelihood is the lower bound; M-step; stop when
    the lower bound moved by less than ``tol`` from the previous one, which for the first
    iteration is ``start.lower_bound`` (so a continuation behaves as scikit-learn's warm start).
    """
    m, lower = start, start.lower_bound
    resp, work = np.empty((2, len(start.means), len(x)))  # reused: kept in cache
    for n_iter in range(1, max_iter + 1):
        prev = lower
        lower, _ = _e_step(x, m, out=resp)
        nk, means, variances = _m_step(x, resp, work)
        converged = abs(lower - prev) < tol
        m = _Mixture(nk / nk.sum(), means, variances, lower, n_iter, converged, tol)
        if converged:
            break
    return m


class _Gaps:
    """The log positive gaps of one data set, with its k-means starts cached per (components,
    random state): pause fits of one data set share them (scikit-learn draws a fit's
    ``n_init`` starts in sequence from one ``RandomState(seed)``, so the first ``n`` starts do
    not depend on how many are drawn)."""

    def __init__(self, gaps_s: Sequence[float] | np.ndarray, max_components: int) -> None:
        self.gaps, self.x = _log_positive_gaps(gaps_s, max_components)
        self._starts: dict[tuple[int, int], tuple[np.random.RandomState, list[_Mixture]]] = {}

    def starts(self, k: int, n_init: int, seed: int) -> list[_Mixture]:
        """Return the first ``n_init`` k-means starts of a ``k``-component fit from ``seed``
        (one start for ``k`` = 1)."""
        if k == 1:  # k-means with one cluster: every start is the same, one EM run stands for all
            return [_kmeans_start_one(self.x)]
        rs, have = self._starts.setdefault((k, seed), (np.random.RandomState(seed), []))
        while len(have) < n_init:
            have.append(_kmeans_start(self.x, k, rs))
        return have[:n_init]


def _best_fit(x: np.ndarray, starts: Sequence[_Mixture], tol: float, max_iter: int) -> _Mixture:
    """Run :func:`_em` from every start and return the fit with the highest lower bound (the
    first on ties), as scikit-learn's ``n_init`` does."""
    best = None
    for s in starts:
        m = _em(x, s, tol, max_iter)
        if best is None or m.lower_bound > best.lower_bound:
            best = m
    assert best is not None
    return best


def _score(x: np.ndarray, m: _Mixture) -> float:
    """Return the mean log-likelihood per point of ``m`` on ``x`` (scikit-learn's ``score``)."""
    return _e_step(x, m)[0]


def _bic(x: np.ndarray, m: _Mixture) -> float:
    """Return the BIC of ``m`` on ``x`` (3k - 1 free parameters, as scikit-learn counts)."""
    return float(-2 * _score(x, m) * len(x) + (3 * len(m.means) - 1) * np.log(len(x)))


def _sorted_components(m: _Mixture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (means, SDs, weights) of a fitted 1-D mixture in ascending mean order (log s)."""
    order = np.argsort(m.means)
    return m.means[order], np.sqrt(m.variances[order]), m.weights[order]


def _crossing_log(m: _Mixture, strict: bool = True) -> float:
    """Return the equal-posterior crossing (log s) of the two slowest components, NaN if < 2
    (or, unless ``strict``, if their densities do not cross between the means)."""
    mu, sd, w = _sorted_components(m)
    if len(mu) < 2:
        return float("nan")
    try:
        return equal_posterior_crossing(mu, sd, w, len(mu) - 2, len(mu) - 1)
    except ValueError:
        if strict:
            raise
        return float("nan")


def _continue_until_stable(
    m: _Mixture,
    x: np.ndarray,
    max_iter: int,
    max_move_s: float,
    tol_factor: float,
    min_tol: float,
) -> tuple[_Mixture, int, bool, list[dict]]:
    """Continue EM of the fitted ``m`` on ``x`` (warm start) at tolerances divided by
    ``tol_factor`` until the crossing moves by at most ``max_move_s`` seconds, or the tolerance
    would fall below ``min_tol``. Returns ``(mixture, extra EM iterations, stable, steps)``;
    each step: ``em_tol`` (of the continuation), ``n_iter``, ``crossing_s`` (after it) and
    ``moved_s``. A fit whose two slowest components do not cross (an intermediate mixture) has
    no crossing to follow: ``moved_s`` is NaN and, while neither side has a crossing, the first
    continuation that converges ends it."""
    steps: list[dict] = []
    extra = 0
    before = _crossing_log(m, strict=False)
    tol = float(m.tol)
    while tol / tol_factor >= min_tol * (1 - 1e-9):
        tol /= tol_factor
        m = _em(x, m, tol, max_iter)
        extra += m.n_iter
        after = _crossing_log(m, strict=False)
        moved = float(abs(np.exp(after) - np.exp(before)))
        steps.append(
            {
                "em_tol": tol,
                "n_iter": m.n_iter,
                "crossing_s": float(np.exp(after)),
                "moved_s": moved,
            }
        )
        no_crossing = bool(np.isnan(before) and np.isnan(after))
        if (moved <= max_move_s or no_crossing) and m.converged:
            return m, extra, True, steps
        before = after
    return m, extra, False, steps


def _fit_one(
    data: _Gaps,
    k: int,
    n_init: int,
    seed: int,
    tol: float,
    max_iter: int,
    verify: dict | None,
) -> tuple[_Mixture, int, bool, dict | None]:
    """Fit a ``k``-component mixture to the log gaps of ``data`` (best of ``n_init`` k-means
    starts from ``seed``); with ``verify`` (keyword arguments of
    :func:`_continue_until_stable` but ``max_iter``) continue EM until the crossing is stable.
    Returns ``(mixture, EM iterations, converged, check record or None)``."""
    x = data.x
    m = _best_fit(x, data.starts(k, n_init, seed), tol, max_iter)
    n_iter, converged = m.n_iter, m.converged
    if verify is None:
        if not converged:
            warnings.warn(
                f"EM of the {k}-component mixture did not converge in {max_iter} iterations",
                ConvergenceWarning,
                stacklevel=3,
            )
        return m, n_iter, converged, None
    start_crossing = _crossing_log(m, strict=False)
    m, extra, stable, steps = _continue_until_stable(m, x, max_iter, **verify)
    check = {
        "rule": (
            "continue EM (warm start) at the tolerance divided by "
            f"{verify['tol_factor']:g} until the crossing moves by at most "
            f"{verify['max_move_s']:g} s"
        ),
        "start_em_tol": tol,
        "start_n_iter": n_iter,
        "start_crossing_s": float(np.exp(start_crossing)),
        "max_move_s": verify["max_move_s"],
        "steps": steps,
        "crossing_moved_s": steps[-1]["moved_s"] if steps else float("nan"),
    }
    return m, n_iter + extra, stable, check


def _fit_models(
    data: _Gaps,
    max_components: int,
    n_init: int,
    seed: int,
    tol: float,
    max_iter: int,
    verify: dict | None = None,
) -> PauseModel:
    """Fit 1..``max_components`` mixtures (see :func:`fit_pause_model`) and return the model."""
    x = data.x
    bic: dict[int, float] = {}
    last = None
    for k in range(1, max_components + 1):
        last = _fit_one(data, k, n_init, seed, tol, max_iter, verify if k > 1 else None)
        bic[k] = _bic(x, last[0])
    assert last is not None
    m, n_iter, converged, check = last
    mu, sd, w = _sorted_components(m)
    thr = _crossing_log(m)
    return PauseModel(
        n_gaps=int(len(data.gaps)),
        n_positive=int(len(x)),
        median_gap_s=float(np.median(data.gaps)),
        bic=bic,
        delta_bic_vs_1={k: bic[1] - v for k, v in bic.items() if k > 1},
        means_log=tuple(map(float, mu)),
        sds_log=tuple(map(float, sd)),
        weights=tuple(map(float, w)),
        threshold_log=thr,
        threshold_s=float(np.exp(thr)),
        seed=seed,
        tol=float(m.tol),
        log_likelihood=float(_score(x, m) * len(x)),
        n_iter=n_iter,
        converged=converged,
        check=check,
    )


def fit_pause_model(
    gaps_s: Sequence[float] | np.ndarray,
    max_components: int = 3,
    n_init: int = 10,
    seed: int = 42,
    tol: float = CONVERGED_EM_TOL,
    max_iter: int = 2000,
) -> PauseModel:
    """Fit Gaussian mixtures (scikit-learn GaussianMixture's EM: full covariance, ``n_init``
    k-means starts from ``random_state`` ``seed``, EM tolerance ``tol`` and at most ``max_iter``
    iterations; :func:`_em`) with 1..``max_components`` components to log(gap) of the positive
    gaps, and return the :class:`PauseModel`. Zero gaps are counted in ``n_gaps`` and the median
    but not fitted.

    EM stops at ``tol`` (on the mean log-likelihood per gap), converged or not: the published fit
    used scikit-learn's defaults (``tol=PUBLISHED_EM_TOL``, ``max_iter=100``), which on the
    public study stop after 4 iterations at the published 2.36 s. :func:`fit_converged_pause_model`
    gives the fit whose convergence is checked."""
    return _fit_models(_Gaps(gaps_s, max_components), max_components, n_init, seed, tol, max_iter)


def largest_mixture_crossing_s(
    gaps_s: Sequence[float] | np.ndarray,
    max_components: int = 3,
    n_init: int = 10,
    seed: int = 42,
    tol: float = CONVERGED_EM_TOL,
    max_iter: int = 2000,
) -> float:
    """Return the pause threshold (seconds) of :func:`fit_pause_model` with the same arguments,
    fitting only the ``max_components`` mixture whose crossing it is (the smaller mixtures give
    only BICs). Raises ``ValueError`` when the two slowest densities do not cross."""
    m, *_ = _fit_one(
        _Gaps(gaps_s, max_components), max_components, n_init, seed, tol, max_iter, None
    )
    return float(np.exp(_crossing_log(m)))


def fit_converged_pause_model(
    gaps_s: Sequence[float] | np.ndarray,
    max_components: int = 3,
    n_init: int = 10,
    seed: int = 42,
    tol: float = CONVERGED_EM_TOL,
    max_iter: int = 5000,
    max_move_s: float = CONVERGED_MAX_MOVE_S,
    tol_factor: float = CONVERGED_TOL_FACTOR,
    min_tol: float = CONVERGED_MIN_TOL,
) -> PauseModel:
    """Return the mixture fits of :func:`fit_pause_model` run to a checked optimum.

    Each fit with 2 or more components starts at ``tol``; EM then continues from it (warm
    start) at ``tol / tol_factor``, ``tol / tol_factor**2``, ... until one continuation moves
    the crossing of the two slowest components by at most ``max_move_s`` seconds (and that
    continuation converged), or the tolerance would fall below ``min_tol``
    (``converged`` False). ``tol`` of the model is the last tolerance; ``check`` records every
    step (tolerance, iterations, crossing in seconds, move in seconds). On the public study the
    crossing starts at 1.564 s (``tol`` 1e-6) and settles at 1.5174 s (docs/decisions.md,
    "Pause threshold")."""
    verify = {"max_move_s": max_move_s, "tol_factor": tol_factor, "min_tol": min_tol}
    data = _Gaps(gaps_s, max_components)
    return _fit_models(data, max_components, n_init, seed, tol, max_iter, verify)


def _converged_settings(opts: dict) -> tuple[float, int, dict]:
    """Return ``(tol, max_iter, verify)`` of :func:`fit_converged_pause_model` from its keyword
    arguments ``opts`` (defaults where absent; another key is a ``TypeError``)."""
    unknown = set(opts) - {"tol", "max_iter", "max_move_s", "tol_factor", "min_tol"}
    if unknown:
        raise TypeError(f"unknown converged-fit settings: {sorted(unknown)}")
    verify = {
        "max_move_s": float(opts.get("max_move_s", CONVERGED_MAX_MOVE_S)),
        "tol_factor": float(opts.get("tol_factor", CONVERGED_TOL_FACTOR)),
        "min_tol": float(opts.get("min_tol", CONVERGED_MIN_TOL)),
    }
    return float(opts.get("tol", CONVERGED_EM_TOL)), int(opts.get("max_iter", 5000)), verify


def random_state_check(
    gaps_s: Sequence[float] | np.ndarray,
    model: PauseModel,
    seeds: Sequence[int],
    agree_s: float = 1e-3,
    **converged_kwargs: float,
) -> dict:
    """Refit the largest mixture of ``model`` with :func:`fit_converged_pause_model` (one start
    each) from every random state in ``seeds`` and return ``{"seeds", "crossings_s",
    "log_likelihoods", "max_abs_diff_s", "agree_s", "agree"}``: crossings in seconds,
    total log-likelihoods, the largest distance (seconds) of a crossing from ``model``'s, and
    whether it is within ``agree_s`` (a start without a crossing gives NaN and disagrees).
    Starts from other random states can end in another local optimum: the check reports it,
    it does not replace the fit."""
    return _random_state_check(
        _Gaps(gaps_s, len(model.means_log)), model, seeds, agree_s, converged_kwargs
    )


def _random_state_check(
    data: _Gaps, model: PauseModel, seeds: Sequence[int], agree_s: float, opts: dict
) -> dict:
    """:func:`random_state_check` on the log gaps of ``data``."""
    k = len(model.means_log)
    tol, max_iter, verify = _converged_settings(opts)
    crossings, lls = [], []
    for s in seeds:
        m, _, _, _ = _fit_one(data, k, 1, int(s), tol, max_iter, verify)
        # NaN when this start ends without a crossing of the two slowest components.
        crossings.append(float(np.exp(_crossing_log(m, strict=False))))
        lls.append(float(_score(data.x, m) * len(data.x)))
    dists = [abs(c - model.threshold_s) for c in crossings]
    diff = float("inf") if any(np.isnan(dists)) else max(dists, default=0.0)
    return {
        "seeds": [int(s) for s in seeds],
        "crossings_s": crossings,
        "log_likelihoods": lls,
        "max_abs_diff_s": float(diff),
        "agree_s": agree_s,
        "agree": bool(diff <= agree_s),
    }


def model_record(model: PauseModel, threshold_used_s: float, source: str) -> dict:
    """Return the JSON record of ``model`` (``results/pauses/threshold.json``): the fit plus
    ``threshold_used_s`` (the value pause counts use, seconds) and ``threshold_source``."""
    return {
        "n_gaps": model.n_gaps,
        "n_positive_gaps": model.n_positive,
        "median_gap_s": model.median_gap_s,
        "bic": {str(k): v for k, v in model.bic.items()},
        "delta_bic_vs_1": {str(k): v for k, v in model.delta_bic_vs_1.items()},
        "means_log": list(model.means_log),
        "sds_log": list(model.sds_log),
        "means_s": list(model.means_s),
        "weights": list(model.weights),
        "threshold_log": model.threshold_log,
        "threshold_s": model.threshold_s,
        "threshold_used_s": float(threshold_used_s),
        "threshold_source": source,
        "random_state": model.seed,
        "em_tol": model.tol,
    }


def fit_record(model: PauseModel) -> dict:
    """Return the JSON record of one fit (``converged_fit`` / ``published_settings_fit`` of
    ``threshold.json``): crossing (``threshold_s`` in seconds, ``threshold_log``),
    ``log_likelihood`` (total, natural log) and ``log_likelihood_per_gap``, ``n_iter``,
    ``em_tol``, ``converged``, components (``means_log``, ``means_s``, ``sds_log``,
    ``weights``, ascending means), ``bic``, ``delta_bic_vs_1`` and the convergence ``check``
    (None without one)."""
    return {
        "threshold_s": model.threshold_s,
        "threshold_log": model.threshold_log,
        "log_likelihood": model.log_likelihood,
        "log_likelihood_per_gap": model.log_likelihood / model.n_positive,
        "n_iter": model.n_iter,
        "em_tol": model.tol,
        "converged": model.converged,
        "random_state": model.seed,
        "means_log": list(model.means_log),
        "means_s": list(model.means_s),
        "sds_log": list(model.sds_log),
        "weights": list(model.weights),
        "bic": {str(k): v for k, v in model.bic.items()},
        "delta_bic_vs_1": {str(k): v for k, v in model.delta_bic_vs_1.items()},
        "check": model.check,
    }


#: A component whose SD (natural log of seconds) is below this has collapsed onto a spike: a
#: spread of 1% in seconds, far below any timing process (the public study's narrowest
#: component has SD 0.47); EM's own floor (:data:`REG_COVAR`) is SD 0.001.
DEGENERATE_SD_LOG = 0.01
#: A component whose gaps (each gap to the component of largest posterior) are this share or
#: more one repeated value sits on a spike (e.g. rounded timestamps); in the public study the
#: largest such share is 0.4%.
DEGENERATE_SPIKE_SHARE = 0.5
#: ... and that repeated value occurs at least this many times (two equal gaps are no spike).
DEGENERATE_MIN_REPEATS = 5
#: The fallback refits without the spike values at most this many times.
FALLBACK_ROUNDS = 3


def degenerate_components(
    gaps_s: Sequence[float] | np.ndarray, model: PauseModel | dict
) -> list[dict]:
    """Return the components of ``model`` (a :class:`PauseModel` or its record) that collapsed
    onto a spike of ``gaps_s`` (seconds, the gaps it was fitted to): SD below
    :data:`DEGENERATE_SD_LOG`, or at least :data:`DEGENERATE_SPIKE_SHARE` of the gaps it
    explains best are one value repeated at least :data:`DEGENERATE_MIN_REPEATS` times. One dict per such component: ``component``
    (1-based, ascending means), ``mean_s``, ``sd_log``, ``weight``, ``n_gaps`` (gaps it
    explains best), ``spike_s`` (its most repeated gap, seconds), ``spike_share`` and
    ``reasons`` (``"sd_below_floor"``, ``"repeated_value"``). Empty when none collapsed."""
    g = np.asarray(gaps_s, dtype=float)
    g = g[g > 0]
    dens = mixture_density(model, np.log(g))
    if isinstance(model, PauseModel):
        mu, sd, w = model.means_log, model.sds_log, model.weights
    else:
        mu, sd, w = model["means_log"], model["sds_log"], model["weights"]
    best = dens.argmax(axis=0)
    out = []
    for k in range(len(mu)):
        mine = g[best == k]
        spike_s, share, repeats = float("nan"), 0.0, 0
        if len(mine):
            values, counts = np.unique(mine, return_counts=True)
            spike_s, repeats = float(values[counts.argmax()]), int(counts.max())
            share = repeats / len(mine)
        reasons = []
        if sd[k] < DEGENERATE_SD_LOG:
            reasons.append("sd_below_floor")
        if repeats >= DEGENERATE_MIN_REPEATS and share >= DEGENERATE_SPIKE_SHARE:
            reasons.append("repeated_value")
        if reasons:
            out.append(
                {
                    "component": k + 1,
                    "mean_s": float(np.exp(mu[k])),
                    "sd_log": float(sd[k]),
                    "weight": float(w[k]),
                    "n_gaps": int(len(mine)),
                    "spike_s": spike_s,
                    "spike_share": share,
                    "reasons": reasons,
                }
            )
    return out


#: How the fallback threshold is found (threshold.json ``threshold_fallback.rule``).
FALLBACK_RULE = (
    "a mixture component collapsed onto a spike of identical gaps; the gaps equal to each "
    "collapsed component's most repeated value are left out and the same mixtures refitted "
    f"(at most {FALLBACK_ROUNDS} rounds); the threshold is the refit's crossing"
)


def _fallback_fit(
    gaps_s: np.ndarray,
    degenerate: list[dict],
    fit: Callable[[_Gaps], PauseModel],
    components: int,
) -> dict:
    """Return the ``threshold_fallback`` record: refit (``fit``) without the spike values of
    the ``degenerate`` components, repeatedly while the refit collapses again (at most
    :data:`FALLBACK_ROUNDS` rounds). ``threshold_s`` is NaN when no refit gives a
    non-degenerate crossing (``ok`` False, ``why`` says why)."""
    removed: list[float] = []
    g = np.asarray(gaps_s, dtype=float)
    rec: dict = {"rule": FALLBACK_RULE, "ok": False, "threshold_s": float("nan")}
    for _ in range(FALLBACK_ROUNDS):
        removed += sorted({d["spike_s"] for d in degenerate} - set(removed))
        keep = ~np.isin(g, removed)
        rec |= {"removed_values_s": removed, "n_removed": int((~keep).sum())}
        try:
            model = fit(_Gaps(g[keep], components))
        except ValueError as e:  # too few gaps left, or the slowest two do not cross
            rec["why"] = str(e)
            return rec
        degenerate = degenerate_components(g[keep], model)
        rec["fit"] = fit_record(model)
        if not degenerate:
            return rec | {"ok": True, "threshold_s": model.threshold_s}
    rec["why"] = f"the refit still collapses after {FALLBACK_ROUNDS} rounds"
    return rec


def mixture_density(model_or_record: PauseModel | dict, log_x: np.ndarray) -> np.ndarray:
    """Return the per-component weighted densities (components x points) on log seconds."""
    if isinstance(model_or_record, PauseModel):
        mu, sd, w = model_or_record.means_log, model_or_record.sds_log, model_or_record.weights
    else:
        mu = model_or_record["means_log"]
        sd = model_or_record["sds_log"]
        w = model_or_record["weights"]
    z = np.asarray(log_x, dtype=float)
    return np.array([wi * norm.pdf(z, m, s) for m, s, wi in zip(mu, sd, w, strict=True)])


def em_tolerance(setting: str | float, preset_value: float | None) -> float:
    """Return the EM tolerance for the pause fit: a number as given; ``"auto"`` = the preset's
    published fit tolerance when it has one (he2026: scikit-learn's default, 1e-3), else
    :data:`CONVERGED_EM_TOL`; ``"converged"`` / ``"published"`` name the two constants
    (:func:`pause_threshold` runs the ``"converged"`` fit on to a checked optimum)."""
    if isinstance(setting, int | float) and not isinstance(setting, bool):
        if setting <= 0:
            raise ValueError(f"EM tolerance must be positive, got {setting}")
        return float(setting)
    if setting == "auto":
        return float(preset_value) if preset_value is not None else CONVERGED_EM_TOL
    if setting == "converged":
        return CONVERGED_EM_TOL
    if setting == "published":
        return PUBLISHED_EM_TOL
    raise ValueError(f"unknown EM tolerance {setting!r} (auto, converged, published or a number)")


def threshold_used(
    model: PauseModel, setting: str | float, preset_value: float | None
) -> tuple[float, str]:
    """Return ``(threshold_s, source)``: the threshold pause counts use, and where it came from.

    ``setting``: ``"auto"`` (``preset_value`` when given, else the fitted crossing),
    ``"fitted"``, or a number of seconds.
    """
    if isinstance(setting, int | float) and not isinstance(setting, bool):
        if setting <= 0:
            raise ValueError(f"pause threshold must be positive, got {setting}")
        return float(setting), "config"
    if setting == "auto" and preset_value is not None:
        return float(preset_value), "preset (published value)"
    if setting in ("auto", "fitted"):
        if not np.isfinite(model.threshold_s):
            raise ValueError("the mixture gives no threshold (fewer than 2 components)")
        return float(model.threshold_s), "fitted"
    raise ValueError(f"unknown pause threshold setting {setting!r} (auto, fitted or seconds)")


def pause_threshold(
    gaps_s: Sequence[float] | np.ndarray,
    *,
    threshold: str | float = "auto",
    preset_threshold: float | None = None,
    components: int = 3,
    n_init: int = 10,
    random_state: int = 42,
    em_tol: str | float = "auto",
    preset_em_tol: float | None = None,
    converged: dict | None = None,
    max_fit_gaps: int | None = None,
    log: Callable[[str], None] | None = None,
) -> dict:
    """Fit the pause model to ``gaps_s`` (seconds) and return its JSON record
    (:func:`model_record`, ``results/pauses/threshold.json`` without provenance).

    With more than ``max_fit_gaps`` gaps (None: no limit) the mixtures are fitted to a random
    subsample of that many gaps (drawn with ``random_state``, kept in input order), recorded as
    ``fit_subsample`` (gaps in all, gaps fitted, seed): EM cost grows with the gaps times
    thousands of iterations, and a few hundred thousand gaps pin the crossing far below the
    precision that matters for counting pauses.

    Two fits are always made and reported in full (:func:`fit_record`):
    ``published_settings_fit`` (EM tolerance :data:`PUBLISHED_EM_TOL`, stopped early) and
    ``converged_fit`` (:func:`fit_converged_pause_model` with the keyword arguments in
    ``converged``, except ``random_state_checks``: that many further random states, from
    ``random_state + 1``, refit the largest mixture; :func:`random_state_check`, recorded as
    ``converged_fit["random_state_check"]``). The top-level fields are those of the fit
    selected by :func:`em_tolerance` of ``em_tol``: the converged fit for ``"converged"`` (and
    ``"auto"`` without a preset tolerance), else the fit stopped at that tolerance. The
    threshold used is :func:`threshold_used` of ``threshold`` on that fit.
    """
    opts = dict(converged or {})
    n_checks = int(opts.pop("random_state_checks", 0))
    gaps_s, subsample = _fit_subsample(np.asarray(gaps_s, dtype=float), max_fit_gaps, random_state)
    data = _Gaps(gaps_s, components)  # one set of k-means starts for every fit below
    tol, max_iter, verify = _converged_settings(opts)
    conv = _fit_models(data, components, n_init, random_state, tol, max_iter, verify)
    published = _fit_models(data, components, n_init, random_state, PUBLISHED_EM_TOL, 2000)
    seeds = [random_state + i for i in range(1, n_checks + 1)]
    rs_check = _random_state_check(data, conv, seeds, 1e-3, opts)
    use_converged = em_tol == "converged" or (em_tol == "auto" and preset_em_tol is None)
    if use_converged:
        model = conv
    else:
        tol = em_tolerance(em_tol, preset_em_tol)
        model = (
            published
            if tol == PUBLISHED_EM_TOL
            else _fit_models(data, components, n_init, random_state, tol, 2000)
        )
    used, source = threshold_used(model, threshold, preset_threshold)
    degenerate = degenerate_components(data.gaps, model)
    fallback = None
    if degenerate:
        fallback = _fallback_fit(
            data.gaps,
            degenerate,
            lambda d: (
                _fit_models(d, components, n_init, random_state, model.tol, max_iter, verify)
                if model is conv
                else _fit_models(d, components, n_init, random_state, model.tol, 2000)
            ),
            components,
        )
        if source == "fitted":
            if not fallback["ok"]:
                raise ValueError(
                    "the pause mixture collapsed onto a spike of identical gaps "
                    f"({degenerate}) and the fallback found no threshold: {fallback['why']}; "
                    "set config pauses.threshold to a number of seconds"
                )
            used, source = fallback["threshold_s"], "fallback (mixture collapsed onto a spike)"
        if log is not None:
            log(f"degenerate components {degenerate}; fallback {fallback}")
    if log is not None:
        log(
            f"published settings (EM tol {PUBLISHED_EM_TOL:g}, {published.n_iter} iterations): "
            f"crossing {published.threshold_s:.4f} s, log-likelihood "
            f"{published.log_likelihood:,.2f}"
        )
        moved = conv.check["crossing_moved_s"] if conv.check else float("nan")
        log(
            f"converged fit (EM tol {conv.tol:g}, {conv.n_iter} iterations, converged "
            f"{conv.converged}): crossing {conv.threshold_s:.4f} s (moved {moved:.2g} s in the "
            f"last continuation), log-likelihood {conv.log_likelihood:,.2f}"
        )
        log(
            f"random states {seeds}: crossings "
            f"{', '.join(f'{c:.4f}' for c in rs_check['crossings_s'])} s, agree "
            f"{rs_check['agree']}"
        )
        log(f"threshold used {used:.4f} s ({source}); fitted crossing {model.threshold_s:.4f} s")
    rec = model_record(model, used, source)
    rec["degenerate_components"] = degenerate
    if fallback is not None:
        rec["threshold_fallback"] = fallback
    rec["converged_fit"] = fit_record(conv) | {"random_state_check": rs_check}
    rec["published_settings_fit"] = fit_record(published)
    if subsample is not None:
        rec["fit_subsample"] = subsample
        if log is not None:
            log(f"fitted to a random subsample: {subsample}")
    return rec


def _fit_subsample(
    gaps_s: np.ndarray, max_fit_gaps: int | None, seed: int
) -> tuple[np.ndarray, dict | None]:
    """Return ``(gaps to fit, subsample record or None)``: all gaps when there are at most
    ``max_fit_gaps`` (or no limit), else that many drawn without replacement from ``seed`` and
    kept in input order, with ``{"n_gaps", "n_fitted", "seed"}``."""
    if max_fit_gaps is None or len(gaps_s) <= max_fit_gaps:
        return gaps_s, None
    if max_fit_gaps < 1:
        raise ValueError(f"max_fit_gaps must be a positive number of gaps, got {max_fit_gaps}")
    keep = np.sort(np.random.default_rng(seed).choice(len(gaps_s), max_fit_gaps, replace=False))
    return gaps_s[keep], {"n_gaps": len(gaps_s), "n_fitted": int(max_fit_gaps), "seed": seed}


#: Columns of ``results/tables/pause_order_dependence.csv`` (:func:`order_dependence`).
ORDER_COLUMNS = [
    "order",
    "fit",
    "crossing_s",
    "delta_bic_2_vs_1",
    "delta_bic_3_vs_1",
    "log_likelihood",
    "n_iter",
]


def order_dependence(
    gaps_s: Sequence[float] | np.ndarray,
    *,
    n_orders: int = 20,
    seed: int = 0,
    components: int = 3,
    n_init: int = 10,
    random_state: int = 42,
    converged: dict | None = None,
) -> tuple[list[dict], dict]:
    """Refit the pause mixtures to the same gaps in ``n_orders`` random orders and return
    ``(rows, summary)``: how much the published-settings fit (EM tolerance
    :data:`PUBLISHED_EM_TOL`, stopped early) and the checked converged fit
    (:func:`fit_converged_pause_model` with the keyword arguments in ``converged``; its
    ``random_state_checks`` key is ignored) depend on the order of the gaps.

    The k-means starts draw from ``random_state`` but see the gaps in another order, so the
    early-stopped fit starts elsewhere and stops elsewhere; a fit at the optimum should not move.
    Order 0 is the input order; orders 1..``n_orders`` are permutations drawn in sequence from
    ``numpy.random.default_rng(seed)``. ``rows``: per order and fit (``published_settings``,
    ``converged``): ``crossing_s`` (seconds), ``delta_bic_2_vs_1`` and ``delta_bic_3_vs_1``
    (BIC(1) - BIC(k); missing beyond ``components``), ``log_likelihood`` (total, natural log),
    ``n_iter``. ``summary``: ``n_orders``, ``seed``, and per fit the input-order value, the
    minimum and maximum over the random orders of the crossing and of each delta BIC, and the
    number of random orders in which delta BIC(2 vs 1) is negative.
    """
    gaps = np.asarray(gaps_s, dtype=float)
    opts = {k: v for k, v in (converged or {}).items() if k != "random_state_checks"}
    tol, max_iter, verify = _converged_settings(opts)
    rng = np.random.default_rng(seed)
    orders = [np.arange(len(gaps))] + [rng.permutation(len(gaps)) for _ in range(n_orders)]
    rows: list[dict] = []
    for i, perm in enumerate(orders):
        data = _Gaps(gaps[perm], components)
        fits = {
            "published_settings": _fit_models(
                data, components, n_init, random_state, PUBLISHED_EM_TOL, 2000
            ),
            "converged": _fit_models(data, components, n_init, random_state, tol, max_iter, verify),
        }
        for name, m in fits.items():
            rows.append(
                {
                    "order": i,
                    "fit": name,
                    "crossing_s": float(m.threshold_s),
                    "delta_bic_2_vs_1": float(m.delta_bic_vs_1.get(2, np.nan)),
                    "delta_bic_3_vs_1": float(m.delta_bic_vs_1.get(3, np.nan)),
                    "log_likelihood": float(m.log_likelihood),
                    "n_iter": int(m.n_iter),
                }
            )
    summary: dict = {"n_orders": int(n_orders), "seed": int(seed), "input_order": 0}
    for name in ("published_settings", "converged"):
        mine = [r for r in rows if r["fit"] == name]
        first, rest = mine[0], mine[1:]
        entry: dict = {}
        for col in ("crossing_s", "delta_bic_2_vs_1", "delta_bic_3_vs_1"):
            vals = np.array([r[col] for r in rest], dtype=float)
            entry[col] = {
                "input_order": first[col],
                "min": float(np.nanmin(vals)) if np.isfinite(vals).any() else float("nan"),
                "max": float(np.nanmax(vals)) if np.isfinite(vals).any() else float("nan"),
            }
        entry["orders_delta_bic_2_negative"] = int(sum(r["delta_bic_2_vs_1"] < 0 for r in rest))
        summary[name] = entry
    return rows, summary
