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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from nonolab.stats.lmm import _single_thread_blas


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
    ``check`` (:func:`fit_converged_pause_model`) is given. ``smaller_fits``: k -> the
    components (``means_log``, ``sds_log``, ``weights``) and crossing (``threshold_s``, NaN
    without one) of each fit with 2 <= k < the largest. ``provenance``: set by
    :func:`nonolab.api.fit_pause_model` (the threshold chain's record,
    :func:`threshold_chain`); ``threshold_s`` is then the chain's threshold.
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
    smaller_fits: dict | None = None
    provenance: dict | None = None

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


def _e_step(
    x: np.ndarray, m: _Mixture, out: np.ndarray | None = None, rows: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """Return ``(mean log-likelihood per point, responsibilities)`` (components x points, in
    ``out`` when given) of ``m`` on ``x``: the weighted log-densities in scikit-learn's
    expression (``y = x * p - mu * p`` with ``p = 1/sd``, its precision Cholesky factor), then a
    max-shifted log-sum-exp, in place in one components x points array; ``rows``: a 2 x points
    scratch array for the per-point maximum and total (the same numbers, no allocation)."""
    pc = 1.0 / np.sqrt(m.variances)
    z = np.multiply(x[None, :], pc[:, None], out=out)
    z -= (m.means * pc)[:, None]
    np.square(z, out=z)
    z += _LOG_2PI
    z *= -0.5
    z += (np.log(pc) + np.log(m.weights))[:, None]
    top, total = (None, None) if rows is None else rows
    top = z.max(axis=0, out=top)
    z -= top
    np.exp(z, out=z)
    total = z.sum(axis=0, out=total)
    z /= total
    return float(np.mean(np.add(top, np.log(total, out=total), out=top))), z


#: scikit-learn KMeans's defaults that :func:`_kmeans_labels` keeps.
_KMEANS_TOL = 1e-4
_KMEANS_MAX_ITER = 300


def _kmeans_labels(
    x: np.ndarray,
    k: int,
    random_state: np.random.RandomState,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Return the labels of scikit-learn ``KMeans(n_clusters=k, n_init=1)`` on the 1-D ``x``
    drawing from ``random_state``: its k-means++ seeding (the same draws from
    ``random_state``, distances in its expression ``-2xc + c^2 + x^2``) and Lloyd iterations
    (labels by ``-2xc + c^2``, centres as cluster means, stop at unchanged labels or a squared
    centre shift within ``1e-4`` times the variance, then labels of the final centres) on the
    centred data, written out for one feature: the same labels to rounding, without
    scikit-learn's per-call overhead (about 0.2 s per start on 29,000 gaps, which made the
    order check's starts the rule's largest cost). A cluster that empties (scikit-learn would
    relocate it) falls back to scikit-learn itself. ``order``: ``argsort(x)`` when known."""
    xc = x - x.mean()
    n = len(xc)
    x2 = xc * xc
    w = np.ones(n)
    trials = 2 + int(np.log(k))
    first = random_state.choice(n, p=w / w.sum())
    centers = np.empty(k)
    centers[0] = xc[first]
    closest = -2.0 * (centers[0] * xc)
    closest += centers[0] * centers[0]
    closest += x2
    np.maximum(closest, 0, out=closest)
    pot = closest @ w
    for c in range(1, k):
        rand = random_state.uniform(size=trials) * pot
        ids = np.searchsorted(np.cumsum(w * closest), rand)
        np.clip(ids, None, n - 1, out=ids)
        cand = xc[ids]
        d = -2.0 * (cand[:, None] * xc[None, :])
        d += (cand * cand)[:, None]
        d += x2[None, :]
        np.maximum(d, 0, out=d)
        np.minimum(closest, d, out=d)
        pots = d @ w.reshape(-1, 1)
        best = int(np.argmin(pots))
        pot = float(pots[best, 0])
        closest = d[best]
        centers[c] = xc[ids[best]]
    tol = float(np.var(xc)) * _KMEANS_TOL
    # Lloyd in one dimension: the nearest centre splits the sorted data at the midpoints of
    # the sorted centres (centres stay in order), so an iteration is a few searchsorted calls.
    srt = np.argsort(xc, kind="stable") if order is None else order
    xs = xc[srt]
    cs = np.concatenate([[0.0], np.cumsum(xs)])

    def splits(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rank = np.argsort(c, kind="stable")
        cut = np.searchsorted(xs, (c[rank][:-1] + c[rank][1:]) / 2, side="right")
        return rank, np.concatenate([[0], cut, [n]])

    cuts_old = np.full(k + 1, -1)
    strict = False
    for _ in range(_KMEANS_MAX_ITER):
        rank, cuts = splits(centers)
        counts = np.diff(cuts)
        if (counts == 0).any():
            return KMeans(n_clusters=k, n_init=1, random_state=random_state).fit(x[:, None]).labels_
        new = centers.copy()
        new[rank] = (cs[cuts[1:]] - cs[cuts[:-1]]) / counts
        shift = float(((new - centers) ** 2).sum())
        centers = new
        if np.array_equal(cuts, cuts_old):
            strict = True
            break
        if shift <= tol:
            break
        cuts_old = cuts
    if not strict:
        rank, cuts = splits(centers)
    labels = np.empty(n, dtype=np.int64)
    labels[srt] = np.repeat(rank, np.diff(cuts))
    return labels


def _kmeans_start(
    x: np.ndarray, k: int, random_state: np.random.RandomState, order: np.ndarray | None = None
) -> _Mixture:
    """Return scikit-learn GaussianMixture's ``init_params="kmeans"`` start: one k-means run
    (``n_init=1``, drawing from ``random_state``; :func:`_kmeans_labels`) and the mixture of
    its clusters."""
    labels = _kmeans_labels(x, k, random_state, order)
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
    rows = np.empty((2, len(x)))
    for n_iter in range(1, max_iter + 1):
        prev = lower
        lower, _ = _e_step(x, m, out=resp, rows=rows)
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

    def __init__(
        self,
        gaps_s: Sequence[float] | np.ndarray,
        max_components: int,
        fit_values: np.ndarray | None = None,
    ) -> None:
        if fit_values is None:
            self.gaps, self.x = _log_positive_gaps(gaps_s, max_components)
        else:  # dequantised gaps (:func:`dequantise`): fitted instead of the recorded ones
            self.gaps = _log_positive_gaps(gaps_s, 0)[0]
            self.x = _log_positive_gaps(fit_values, max_components)[1]
        self._starts: dict[tuple[int, int], tuple[np.random.RandomState, list[_Mixture]]] = {}
        self._order: np.ndarray | None = None  # argsort of x, shared by the k-means starts

    def starts(self, k: int, n_init: int, seed: int) -> list[_Mixture]:
        """Return the first ``n_init`` k-means starts of a ``k``-component fit from ``seed``
        (one start for ``k`` = 1)."""
        if k == 1:  # k-means with one cluster: every start is the same, one EM run stands for all
            return [_kmeans_start_one(self.x)]
        rs, have = self._starts.setdefault((k, seed), (np.random.RandomState(seed), []))
        if self._order is None:
            self._order = np.argsort(self.x, kind="stable")
        while len(have) < n_init:
            have.append(_kmeans_start(self.x, k, rs, self._order))
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
    warm: _Mixture | None = None,
) -> tuple[_Mixture, int, bool, dict | None]:
    """Fit a ``k``-component mixture to the log gaps of ``data`` (best of ``n_init`` k-means
    starts from ``seed``, or EM continued from the fitted mixture ``warm``); with ``verify``
    (keyword arguments of :func:`_continue_until_stable` but ``max_iter``) continue EM until
    the crossing is stable. Returns ``(mixture, EM iterations, converged, check record or
    None)``."""
    x = data.x
    if warm is not None:
        m = _em(x, warm, tol, max_iter)
    else:
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
    warm: dict[int, _Mixture] | None = None,
    mixtures: dict[int, _Mixture] | None = None,
    verify_smaller: bool = True,
) -> PauseModel:
    """Fit 1..``max_components`` mixtures (see :func:`fit_pause_model`) and return the model;
    ``warm``: k -> a fitted mixture each k >= 2 continues from (instead of the k-means starts);
    ``mixtures``: filled with k -> the fitted mixture; ``verify_smaller`` False: only the
    largest mixture is continued until its crossing is stable (the smaller ones stop at
    ``tol``)."""
    x = data.x
    bic: dict[int, float] = {}
    smaller: dict[int, dict] = {}
    last = None
    for k in range(1, max_components + 1):
        start = (warm or {}).get(k) if k > 1 else None
        check = k > 1 and (verify_smaller or k == max_components)
        last = _fit_one(data, k, n_init, seed, tol, max_iter, verify if check else None, start)
        if mixtures is not None:
            mixtures[k] = last[0]
        bic[k] = _bic(x, last[0])
        if 1 < k < max_components:
            mu_k, sd_k, w_k = _sorted_components(last[0])
            smaller[k] = {
                "means_log": list(map(float, mu_k)),
                "sds_log": list(map(float, sd_k)),
                "weights": list(map(float, w_k)),
                "threshold_s": float(np.exp(_crossing_log(last[0], strict=False))),
            }
    assert last is not None
    m, n_iter, converged, check = last
    mu, sd, w = _sorted_components(m)
    thr = _crossing_log(m, strict=False)  # NaN: no crossing (the threshold chain decides)
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
        smaller_fits=smaller,
    )


@_single_thread_blas
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


@_single_thread_blas
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


@_single_thread_blas
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
    fit: Callable[[np.ndarray], PauseModel],
    components: int,
) -> dict:
    """Return the ``threshold_fallback`` record: refit (``fit``, on gap values in seconds)
    without the spike values of the ``degenerate`` components, repeatedly while one of the
    refit's two slowest components collapses again (at most :data:`FALLBACK_ROUNDS` rounds).
    ``threshold_s`` is NaN when no refit gives a usable crossing (``ok`` False, ``why`` says
    why)."""
    removed: list[float] = []
    g = np.asarray(gaps_s, dtype=float)
    rec: dict = {"rule": FALLBACK_RULE, "ok": False, "threshold_s": float("nan")}
    for _ in range(FALLBACK_ROUNDS):
        removed += sorted({d["spike_s"] for d in degenerate} - set(removed))
        keep = ~np.isin(g, removed)
        rec |= {"removed_values_s": removed, "n_removed": int((~keep).sum())}
        if int((g[keep] > 0).sum()) < MIN_GAPS_PER_COMPONENT * components:
            rec["why"] = (
                f"only {int((g[keep] > 0).sum())} positive gaps are left for a "
                f"{components}-component mixture"
            )
            return rec
        model = fit(g[keep])
        rec["fit"] = fit_record(model)
        comps = {"means_log": model.means_log, "sds_log": model.sds_log, "weights": model.weights}
        ok, why, degenerate = _usable(g[keep], comps, model.threshold_s)
        if ok:
            return rec | {"ok": True, "threshold_s": model.threshold_s}
        if not degenerate:
            rec["why"] = f"the refit gives no threshold: {why}"
            return rec
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


#: Candidate clock resolutions (seconds): the 1-2-5 series from 1 microsecond to 1 s.
RESOLUTION_CANDIDATES_S: tuple[float, ...] = tuple(
    m * 10.0**e for e in range(-6, 1) for m in (1, 2, 5) if m * 10.0**e <= 1.0
)
#: A resolution is detected when at least this share of the positive gaps sit on its grid.
RESOLUTION_SHARE = 0.99
#: The grid is material (the gaps are dequantised before fitting) when its step exceeds this
#: share of the 1st percentile of the positive gaps: then the fastest gaps' logs are rounded by
#: more than 0.1 % (the public study's microsecond clock: 1e-6 s against 0.013 s, immaterial).
RESOLUTION_MATERIAL = 1e-3


def clock_resolution(gaps_s: Sequence[float] | np.ndarray) -> dict:
    """Return the timestamp resolution the gaps (seconds) show: ``step_s`` = the coarsest of
    :data:`RESOLUTION_CANDIDATES_S` on whose grid at least :data:`RESOLUTION_SHARE` of the
    positive gaps lie (None: no grid of a microsecond or coarser), ``share_on_grid``, and
    ``material`` (the step exceeds :data:`RESOLUTION_MATERIAL` of the 1st percentile of the
    positive gaps: the fits then use :func:`dequantise`), with the ``rule`` in words."""
    g = np.asarray(gaps_s, dtype=float)
    pos = g[g > 0]
    rec: dict = {
        "step_s": None,
        "share_on_grid": None,
        "material": False,
        "rule": (
            f"the coarsest 1-2-5 step from 1e-6 to 1 s holding at least {RESOLUTION_SHARE:.0%} "
            "of the positive gaps on its grid; material (gaps spread within their grid cell "
            f"before fitting) when the step exceeds {RESOLUTION_MATERIAL:g} of the 1st "
            "percentile of the positive gaps"
        ),
    }
    if len(pos) == 0:
        return rec
    for q in sorted(RESOLUTION_CANDIDATES_S, reverse=True):
        k = pos / q
        on = np.abs(k - np.round(k)) <= 1e-6 * np.maximum(1.0, k)
        if on.mean() >= RESOLUTION_SHARE:
            first = float(np.quantile(pos, 0.01))
            return rec | {
                "step_s": float(q),
                "share_on_grid": float(on.mean()),
                "material": bool(q > RESOLUTION_MATERIAL * first),
            }
    return rec


def dequantise(gaps_s: np.ndarray, step_s: float, seed: int) -> np.ndarray:
    """Return the gaps (seconds) spread within their grid cells: a gap between two timestamps
    rounded to ``step_s`` is the true gap plus the difference of two rounding errors, each
    uniform on +-step/2, so each gap gets a draw of that triangular error on +-step (seeded by
    ``seed``), and a draw that falls at or below 0 is folded back (``abs``) so every gap stays
    positive. No gap is dropped: zero gaps become positive gaps below one step."""
    g = np.asarray(gaps_s, dtype=float)
    rng = np.random.default_rng(seed)
    e = (rng.random(len(g)) - rng.random(len(g))) * step_s
    out = np.abs(g + e)
    out[out == 0] = 0.5 * step_s  # a draw of exactly 0 (measure zero; kept positive)
    return out


#: A gap value is a mass point when it occurs at least this many times ...
MASS_MIN_COUNT = 10
#: ... and at least this many times as often as the mean of its neighbouring grid cells.
MASS_RATIO = 5.0
#: Neighbouring cells: within this relative distance of the value (at least 3 steps each side).
MASS_WINDOW = 0.2


def mass_points(gaps_s: Sequence[float] | np.ndarray, step_s: float | None) -> list[dict]:
    """Return the mass points of the gaps (seconds): values held by at least
    :data:`MASS_MIN_COUNT` gaps and by at least :data:`MASS_RATIO` times the mean count of the
    grid cells (of ``step_s``, the clock resolution; None: a continuous clock, where a
    repeated value is not expected at all) within :data:`MASS_WINDOW` of the value (at least 3
    cells each side). Values within 3 steps of 0 are not judged (the grid's first cells hold
    every fast gap). One dict per mass point: ``value_s``, ``count``, ``expected`` (the
    neighbours' mean count) and ``share`` (of the positive gaps), largest count first."""
    g = np.asarray(gaps_s, dtype=float)
    pos = np.sort(g[g > 0])
    if len(pos) == 0:
        return []
    values, counts = np.unique(pos, return_counts=True)
    out = []
    for v, c in zip(
        values[counts >= MASS_MIN_COUNT], counts[counts >= MASS_MIN_COUNT], strict=True
    ):
        if step_s is None:
            expected = 0.0
        else:
            if v < 3 * step_s * (1 - 1e-9):
                continue
            m = max(3, int(round(MASS_WINDOW * v / step_s)))
            lo, hi = v - (m + 0.5) * step_s, v + (m + 0.5) * step_s
            n_window = np.searchsorted(pos, hi) - np.searchsorted(pos, lo)
            cells = 2 * m - max(0, m - int(round(v / step_s)) + 1)  # cells <= 0 do not exist
            expected = float(n_window - c) / max(cells, 1)
        if c >= MASS_RATIO * expected:
            out.append(
                {
                    "value_s": float(v),
                    "count": int(c),
                    "expected": expected,
                    "share": float(c / len(pos)),
                }
            )
    return sorted(out, key=lambda d: -d["count"])


#: Gaps needed per mixture component (fewer components are fitted to smaller studies).
MIN_GAPS_PER_COMPONENT = 10
#: The stated fixed threshold (seconds) that ends the chain when no mixture gives one and the
#: preset names no published threshold: the public study's published pause threshold
#: (docs/decisions.md, "Pause threshold chain").
FIXED_THRESHOLD_S = 2.36

#: The threshold chain in words (threshold.json ``threshold_provenance.chain``).
CHAIN_RULE = (
    "1. mixture: the equal-posterior crossing of the two slowest components of the largest "
    "log-normal mixture (fewer components when the study has fewer than "
    f"{MIN_GAPS_PER_COMPONENT} positive gaps per component); a component that collapsed onto "
    "identical gaps below the two slowest is reported and does not stop it. 2. spike refit: "
    "when one of the two slowest components collapsed onto identical gaps, the gaps equal to "
    "its most repeated value are left out and the mixtures refitted. 3. fewer components: "
    "when the two slowest do not cross between their means (or the refit collapses again), "
    "the crossing of the largest smaller mixture (k - 1, ..., 2 components) whose two slowest "
    "cross and did not collapse. 4. fixed: the preset's published threshold, else "
    f"{FIXED_THRESHOLD_S:g} s."
)


def _usable(gaps_fit: np.ndarray, comps: Mapping, crossing_s: float) -> tuple[bool, str, list]:
    """Whether a fit's crossing can be the threshold: ``(ok, why not, degenerate components of
    the two slowest)``."""
    k = len(comps["means_log"])
    deg = degenerate_components(gaps_fit, comps)
    defining = [d for d in deg if d["component"] >= k - 1]
    if defining:
        spikes = ", ".join(f"{d['spike_s']:.4g} s" for d in defining)
        return False, f"one of the two slowest components collapsed onto gaps of {spikes}", defining
    if not np.isfinite(crossing_s):
        return False, "its two slowest components do not cross between their means", []
    return True, "", []


def threshold_chain(
    gaps_fit: np.ndarray,
    model: PauseModel | None,
    refit: Callable[[np.ndarray], PauseModel],
    *,
    fixed_s: float | None = None,
    fixed_source: str = "",
    too_few: str = "",
) -> tuple[float, dict]:
    """Run the threshold chain (:data:`CHAIN_RULE`) and return ``(threshold_s, provenance)``.

    ``gaps_fit``: the gaps (seconds) the mixtures were fitted to (dequantised when the clock
    grid is material); ``model``: the largest mixture fitted to them (None when the study has
    too few gaps for two components; ``too_few`` says why); ``refit``: fits the same mixtures
    to other gaps (the spike refit). ``fixed_s``: the stated fixed threshold (None:
    :data:`FIXED_THRESHOLD_S`), named by ``fixed_source``. ``provenance``: ``step`` (``mixture``,
    ``spike refit``, ``fewer components`` or ``fixed``), ``components`` (of the fit whose
    crossing it is; None for ``fixed``), ``why`` (why each earlier step gave none), ``steps``
    (one entry per step tried: ``step``, ``ok``, ``why``, ``threshold_s``), ``fallback`` (the
    spike refit's record, :func:`_fallback_fit`, when tried) and ``chain`` (the rule)."""
    steps: list[dict] = []
    prov: dict = {"chain": CHAIN_RULE, "fallback": None}

    def done(step: str, thr: float, k: int | None) -> tuple[float, dict]:
        steps.append({"step": step, "ok": True, "why": "", "threshold_s": float(thr)})
        why = "; ".join(f"{s['step']}: {s['why']}" for s in steps if not s["ok"])
        return float(thr), prov | {"step": step, "components": k, "why": why, "steps": steps}

    if model is None:
        steps.append({"step": "mixture", "ok": False, "why": too_few, "threshold_s": None})
    else:
        k = len(model.means_log)
        comps = {"means_log": model.means_log, "sds_log": model.sds_log, "weights": model.weights}
        ok, why, defining = _usable(gaps_fit, comps, model.threshold_s)
        if ok:
            return done("mixture", model.threshold_s, k)
        steps.append({"step": "mixture", "ok": False, "why": why, "threshold_s": None})
        if defining:
            fb = _fallback_fit(gaps_fit, defining, refit, k)
            prov["fallback"] = fb
            if fb["ok"]:
                return done("spike refit", fb["threshold_s"], k)
            steps.append(
                {"step": "spike refit", "ok": False, "why": fb["why"], "threshold_s": None}
            )
        for j in sorted(model.smaller_fits or {}, reverse=True):
            sub = model.smaller_fits[j]
            ok, why, _ = _usable(gaps_fit, sub, sub["threshold_s"])
            if ok:
                return done("fewer components", sub["threshold_s"], j)
            steps.append(
                {"step": f"fewer components ({j})", "ok": False, "why": why, "threshold_s": None}
            )
    fixed = FIXED_THRESHOLD_S if fixed_s is None else float(fixed_s)
    prov["fixed_source"] = fixed_source or (
        f"the stated fixed threshold ({FIXED_THRESHOLD_S:g} s, the public study's published value)"
    )
    return done("fixed", fixed, None)


def crossing_interval(
    gaps_fit: np.ndarray, comps: Mapping, crossing_s: float, level: float = 0.95
) -> dict:
    """Return the precision of a fitted crossing: a delta-method interval (``low_s``,
    ``high_s``, ``se_log``, ``level``) from the observed information of the mixture's
    log-likelihood on the log gaps (a numerical Hessian in means, log SDs and log weight
    ratios) and the crossing's gradient in those parameters, and ``decimals``: the decimals
    of seconds the interval supports (the interval's half-width rounded to one significant
    digit). NaNs and ``decimals`` 2 when the crossing or the information is not usable."""
    out = {"level": level, "low_s": float("nan"), "high_s": float("nan"), "se_log": float("nan")}
    out |= {"decimals": 2, "method": "delta method, observed information of the mixture"}
    x = np.log(np.asarray(gaps_fit, dtype=float)[np.asarray(gaps_fit) > 0])
    mu = np.asarray(comps["means_log"], dtype=float)
    sd = np.asarray(comps["sds_log"], dtype=float)
    w = np.asarray(comps["weights"], dtype=float)
    k = len(mu)
    if k < 2 or not np.isfinite(crossing_s) or len(x) < 3 * k:
        return out
    theta0 = np.concatenate([mu, np.log(sd), np.log(w[:-1] / w[-1])])

    def unpack(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a = np.concatenate([t[2 * k :], [0.0]])
        ww = np.exp(a - a.max())
        return t[:k], np.exp(t[k : 2 * k]), ww / ww.sum()

    def loglik(t: np.ndarray) -> float:
        m, s, ww = unpack(t)
        z = -0.5 * ((x[None, :] - m[:, None]) / s[:, None]) ** 2 - np.log(s)[:, None]
        z += np.log(ww)[:, None] - 0.5 * _LOG_2PI
        top = z.max(axis=0)
        return float(np.sum(top + np.log(np.exp(z - top).sum(axis=0))))

    def cross(t: np.ndarray) -> float:
        m, s, ww = unpack(t)
        try:
            return equal_posterior_crossing(m, s, ww, k - 2, k - 1)
        except ValueError:
            return float("nan")

    n = len(theta0)
    h = 1e-4 * np.maximum(1.0, np.abs(theta0))
    hess = np.empty((n, n))
    f0 = loglik(theta0)
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.eye(n)[i] * h[i], np.eye(n)[j] * h[j]
            if i == j:
                v = (loglik(theta0 + ei) - 2 * f0 + loglik(theta0 - ei)) / h[i] ** 2
            else:
                v = (
                    loglik(theta0 + ei + ej)
                    - loglik(theta0 + ei - ej)
                    - loglik(theta0 - ei + ej)
                    + loglik(theta0 - ei - ej)
                ) / (4 * h[i] * h[j])
            hess[i, j] = hess[j, i] = v
    grad = np.array(
        [
            (cross(theta0 + np.eye(n)[i] * h[i]) - cross(theta0 - np.eye(n)[i] * h[i])) / (2 * h[i])
            for i in range(n)
        ]
    )
    try:
        cov = np.linalg.inv(-hess)
    except np.linalg.LinAlgError:
        return out
    var = float(grad @ cov @ grad)
    if not np.isfinite(var) or var <= 0:
        return out
    se = float(np.sqrt(var))
    zq = float(norm.ppf(0.5 + level / 2))
    c = float(np.log(crossing_s))
    lo, hi = float(np.exp(c - zq * se)), float(np.exp(c + zq * se))
    half = (hi - lo) / 2
    decimals = max(0, -int(np.floor(np.log10(half)))) if half > 0 else 2
    return out | {"low_s": lo, "high_s": hi, "se_log": se, "decimals": int(decimals)}


@_single_thread_blas
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
    (:func:`model_record`, ``results/pauses/threshold.json`` without provenance). Never raises
    on gaps that are finite and non-negative (a valid study): the threshold chain
    (:func:`threshold_chain`) always ends in a threshold, recorded with ``threshold_provenance``
    and the report's ``threshold_sentences``.

    With more than ``max_fit_gaps`` gaps (None: no limit) the mixtures are fitted to a random
    subsample of that many gaps (drawn with ``random_state``, kept in input order), recorded as
    ``fit_subsample`` (gaps in all, gaps fitted, seed): EM cost grows with the gaps times
    thousands of iterations, and a few hundred thousand gaps pin the crossing far below the
    precision that matters for counting pauses.

    The clock resolution is detected (:func:`clock_resolution`, ``clock_resolution``); on a
    material grid the mixtures are fitted to the gaps spread within their grid cells
    (:func:`dequantise`, seeded by ``random_state``); the pause counts use the recorded gaps.
    Mass points (:func:`mass_points`) are flagged in ``mass_points`` with the threshold the
    chain gives with and without them (``mass_point_check``).

    Two fits are always made and reported in full (:func:`fit_record`):
    ``published_settings_fit`` (EM tolerance :data:`PUBLISHED_EM_TOL`, stopped early) and
    ``converged_fit`` (:func:`fit_converged_pause_model` with the keyword arguments in
    ``converged``, except ``random_state_checks``: that many further random states, from
    ``random_state + 1``, refit the largest mixture; :func:`random_state_check`, recorded as
    ``converged_fit["random_state_check"]``); ``crossing_interval`` is the converged
    crossing's precision (:func:`crossing_interval`). The top-level fields are those of the fit
    selected by :func:`em_tolerance` of ``em_tol``: the converged fit for ``"converged"`` (and
    ``"auto"`` without a preset tolerance), else the fit stopped at that tolerance. The
    threshold used is the number ``threshold`` (``"config"``), the preset's value for
    ``"auto"`` with a ``preset_threshold``, else the chain's threshold on that fit.
    """
    opts = dict(converged or {})
    n_checks = int(opts.pop("random_state_checks", 0))
    components = int(components)
    g_all = np.asarray(gaps_s, dtype=float)
    if g_all.ndim != 1 or not np.all(np.isfinite(g_all)) or (g_all < 0).any():
        raise ValueError("gaps must be a 1-D array of finite non-negative seconds")
    gaps_s, subsample = _fit_subsample(g_all, max_fit_gaps, random_state)
    resolution = clock_resolution(gaps_s)
    deq = resolution["material"]
    fit_values = dequantise(gaps_s, resolution["step_s"], random_state) if deq else gaps_s
    n_pos = int((fit_values > 0).sum())
    k_max = min(components, n_pos // MIN_GAPS_PER_COMPONENT)
    tol, max_iter, verify = _converged_settings(opts)
    use_converged = em_tol == "converged" or (em_tol == "auto" and preset_em_tol is None)
    sel_tol = tol if use_converged else em_tolerance(em_tol, preset_em_tol)

    def fit_selected(values: np.ndarray, k: int) -> PauseModel:
        d = _Gaps(values, k)
        if use_converged:
            return _fit_models(d, k, n_init, random_state, tol, max_iter, verify)
        return _fit_models(d, k, n_init, random_state, sel_tol, 2000)

    too_few = (
        f"only {n_pos} positive gaps: a 2-component mixture needs at least "
        f"{2 * MIN_GAPS_PER_COMPONENT}"
    )
    conv = published = model = None
    rs_check: dict = {}
    seeds = [random_state + i for i in range(1, n_checks + 1)]
    if k_max >= 2:
        data = _Gaps(gaps_s, k_max, fit_values)  # one set of k-means starts for every fit below
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            conv = _fit_models(data, k_max, n_init, random_state, tol, max_iter, verify)
            published = _fit_models(data, k_max, n_init, random_state, PUBLISHED_EM_TOL, 2000)
            rs_check = _random_state_check(data, conv, seeds, 1e-3, opts)
            if use_converged:
                model = conv
            elif sel_tol == PUBLISHED_EM_TOL:
                model = published
            else:
                model = _fit_models(data, k_max, n_init, random_state, sel_tol, 2000)

    def chain(values: np.ndarray, m: PauseModel | None) -> tuple[float, dict]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return threshold_chain(
                values,
                m,
                lambda v: fit_selected(v, len(m.means_log)),  # type: ignore[union-attr]
                fixed_s=preset_threshold,
                fixed_source="the preset's published threshold" if preset_threshold else "",
                too_few=too_few,
            )

    fitted_s, prov = chain(fit_values, model)
    if isinstance(threshold, int | float) and not isinstance(threshold, bool):
        if threshold <= 0:
            raise ValueError(f"pause threshold must be positive, got {threshold}")
        used, source = float(threshold), "config"
    elif threshold == "auto" and preset_threshold is not None:
        used, source = float(preset_threshold), "preset (published value)"
    elif threshold in ("auto", "fitted"):
        used, source = fitted_s, _CHAIN_SOURCES[prov["step"]]
    else:
        raise ValueError(f"unknown pause threshold setting {threshold!r} (auto, fitted or seconds)")

    masses = mass_points(gaps_s, resolution["step_s"])
    mass_check = None
    if masses:
        keep = ~np.isin(gaps_s, [d["value_s"] for d in masses])
        kept_values = fit_values[keep]
        n_kept = int((kept_values > 0).sum())
        k_kept = min(components, n_kept // MIN_GAPS_PER_COMPONENT)
        m_kept = fit_selected(kept_values, k_kept) if k_kept >= 2 else None
        without_s, prov_without = chain(kept_values, m_kept)
        mass_check = {
            "threshold_with_s": fitted_s,
            "threshold_without_s": without_s,
            "step_with": prov["step"],
            "step_without": prov_without["step"],
            "n_left_out": int((~keep).sum()),
        }

    interval = None
    if conv is not None and np.isfinite(conv.threshold_s):
        interval = crossing_interval(
            fit_values,
            {"means_log": conv.means_log, "sds_log": conv.sds_log, "weights": conv.weights},
            conv.threshold_s,
        )
    sentences = threshold_sentences(
        used, source, fitted_s, prov, resolution, masses, mass_check, interval, k_max, components
    )
    if log is not None:
        for line in sentences:
            log(line)
        if published is not None and conv is not None:
            log(
                f"published settings (EM tol {PUBLISHED_EM_TOL:g}, {published.n_iter} "
                f"iterations): crossing {published.threshold_s:.4f} s, log-likelihood "
                f"{published.log_likelihood:,.2f}"
            )
            moved = conv.check["crossing_moved_s"] if conv.check else float("nan")
            log(
                f"converged fit (EM tol {conv.tol:g}, {conv.n_iter} iterations, converged "
                f"{conv.converged}): crossing {conv.threshold_s:.4f} s (moved {moved:.2g} s in "
                f"the last continuation), log-likelihood {conv.log_likelihood:,.2f}"
            )
            log(
                f"random states {seeds}: crossings "
                f"{', '.join(f'{c:.4f}' for c in rs_check['crossings_s'])} s, agree "
                f"{rs_check['agree']}"
            )
    if model is not None:
        rec = model_record(model, used, source)
    else:
        rec = _empty_model_record(gaps_s, used, source, random_state)
    rec["threshold_fitted_s"] = fitted_s
    rec["threshold_provenance"] = {k: v for k, v in prov.items() if k != "fallback"}
    rec["threshold_sentences"] = sentences
    rec["threshold_sentence"] = " ".join(sentences)
    rec["clock_resolution"] = resolution
    rec["mass_points"] = masses
    rec["mass_point_check"] = mass_check
    rec["degenerate_components"] = (
        degenerate_components(fit_values, model) if model is not None else []
    )
    if prov.get("fallback") is not None:
        rec["threshold_fallback"] = prov["fallback"]
    if conv is not None:
        rec["converged_fit"] = fit_record(conv) | {
            "random_state_check": rs_check,
            "crossing_interval": interval,
        }
    if published is not None:
        rec["published_settings_fit"] = fit_record(published)
    if subsample is not None:
        rec["fit_subsample"] = subsample
        if log is not None:
            log(f"fitted to a random subsample: {subsample}")
    return rec


def pause_model_from_record(rec: Mapping) -> PauseModel:
    """Return the :class:`PauseModel` of a :func:`pause_threshold` record: the top-level fit's
    components and BICs, ``threshold_s`` = the threshold used (seconds; ``threshold_log`` its
    log), convergence from ``converged_fit`` when the top-level fit is the converged one, and
    ``provenance`` = the record."""
    conv = rec.get("converged_fit") or {}
    same = bool(conv) and conv.get("em_tol") == rec.get("em_tol")
    used = float(rec["threshold_used_s"])
    n_pos = int(rec["n_positive_gaps"])
    return PauseModel(
        n_gaps=int(rec["n_gaps"]),
        n_positive=n_pos,
        median_gap_s=float(rec["median_gap_s"]),
        bic={int(k): float(v) for k, v in rec["bic"].items()},
        delta_bic_vs_1={int(k): float(v) for k, v in rec["delta_bic_vs_1"].items()},
        means_log=tuple(rec["means_log"]),
        sds_log=tuple(rec["sds_log"]),
        weights=tuple(rec["weights"]),
        threshold_log=float(np.log(used)),
        threshold_s=used,
        seed=int(rec["random_state"]),
        tol=float(rec["em_tol"]),
        log_likelihood=float(conv.get("log_likelihood", np.nan)) if same else float("nan"),
        n_iter=int(conv.get("n_iter", 0)) if same else 0,
        converged=bool(conv.get("converged", False)) if same else False,
        check=conv.get("check") if same else None,
        provenance=dict(rec),
    )


#: ``threshold_source`` of each step of the chain when the threshold used is the fitted one.
_CHAIN_SOURCES = {
    "mixture": "fitted",
    "spike refit": "fallback (mixture collapsed onto a spike)",
    "fewer components": "fallback (fewer mixture components)",
    "fixed": "fallback (stated fixed threshold)",
}


def _empty_model_record(gaps_s: np.ndarray, used: float, source: str, seed: int) -> dict:
    """:func:`model_record` of a study too small for any mixture: counts, no fit (NaNs)."""
    g = np.asarray(gaps_s, dtype=float)
    nan = float("nan")
    return {
        "n_gaps": int(len(g)),
        "n_positive_gaps": int((g > 0).sum()),
        "median_gap_s": float(np.median(g)) if len(g) else nan,
        "bic": {},
        "delta_bic_vs_1": {},
        "means_log": [],
        "sds_log": [],
        "means_s": [],
        "weights": [],
        "threshold_log": nan,
        "threshold_s": nan,
        "threshold_used_s": float(used),
        "threshold_source": source,
        "random_state": seed,
        "em_tol": nan,
    }


def _s(value: float, decimals: int = 2) -> str:
    return f"{value:.{decimals}f}"


def threshold_sentences(
    used: float,
    source: str,
    fitted_s: float,
    prov: Mapping,
    resolution: Mapping,
    masses: Sequence[Mapping],
    mass_check: Mapping | None,
    interval: Mapping | None,
    k_fitted: int,
    components: int,
) -> list[str]:
    """Return the report's sentences on the pause threshold (threshold.json
    ``threshold_sentences``): the threshold used and which step of the chain gave it (and why
    earlier steps gave none), the clock resolution when it is material, the mass points with
    the threshold with and without them, and the crossing's precision."""
    dec = int(interval["decimals"]) if interval and np.isfinite(interval["low_s"]) else 2
    step = prov["step"]
    k = prov.get("components")
    if step == "mixture":
        how = f"the crossing of the two slowest components of a {k}-component log-normal mixture"
    elif step == "spike refit":
        fb = prov.get("fallback") or {}
        vals = ", ".join(f"{v:g} s" for v in fb.get("removed_values_s", []))
        how = (
            f"a {k}-component mixture refitted without {fb.get('n_removed')} identical gaps of "
            f"{vals}, onto which a component had collapsed"
        )
    elif step == "fewer components":
        how = f"the crossing of the two slowest components of a {k}-component mixture"
    else:
        how = str(prov.get("fixed_source", "a stated fixed threshold"))
    fitted = f"{_s(fitted_s, dec)} s ({how})"
    if source in ("config", "preset (published value)"):
        what = "the configured value" if source == "config" else "the preset's published value"
        out = [f"Pauses are gaps longer than {used:g} s ({what}); the pause model gives {fitted}."]
    else:
        out = [f"Pauses are gaps longer than {fitted}."]
    if prov.get("why"):
        out.append(f"Earlier steps of the threshold chain gave none: {prov['why']}.")
    if k_fitted < components and k_fitted >= 2:
        out.append(
            f"The study has too few gaps for {components} components "
            f"({MIN_GAPS_PER_COMPONENT} per component): {k_fitted} were fitted."
        )
    if resolution.get("material"):
        out.append(
            f"Timestamps are on a {resolution['step_s']:g} s grid: each gap was spread within "
            "its grid cell (a seeded draw of the rounding error) before fitting; the pause "
            "counts use the recorded gaps."
        )
    if masses and mass_check:
        pts = ", ".join(
            f"{d['count']} gaps of exactly {d['value_s']:g} s"
            + (
                f" ({d['count'] / d['expected']:.0f} times their neighbours)"
                if d["expected"] > 0
                else ""
            )
            for d in masses
        )
        with_s = _s(mass_check["threshold_with_s"], dec)
        without_s = _s(mass_check["threshold_without_s"], dec)
        moved = (
            f"the pause model gives {with_s} s with them and {without_s} s without them"
            if with_s != without_s
            else f"the pause model gives {with_s} s with and without them"
        )
        out.append(f"Mass points flagged: {pts}; {moved}.")
    if interval and np.isfinite(interval["low_s"]):
        mid = np.sqrt(interval["low_s"] * interval["high_s"])  # the crossing (log-symmetric)
        out.append(
            f"The converged fit crosses at {_s(float(mid), dec)} s, known to about +/-{(interval['high_s'] - interval['low_s']) / 2:.{dec}f} s "
            f"({interval['level']:.0%} interval {_s(interval['low_s'], dec)}-"
            f"{_s(interval['high_s'], dec)} s, delta method), so it is reported to {dec} decimal{'s' if dec != 1 else ''}."
        )
    return out


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


#: The published-settings fit (cheap: EM stops after a few iterations) is refitted in at least
#: this many random orders, and in twice as many while its crossing's range is not stable
#: (:func:`order_dependence`), up to :data:`MAX_PUBLISHED_ORDERS`.
MIN_PUBLISHED_ORDERS = 40
MAX_PUBLISHED_ORDERS = 320


def _range_stable(values: Sequence[float], decimals: int = 3) -> bool:
    """Whether the first half of ``values`` has the range (min, max) of all of them at
    ``decimals`` (NaNs ignored; False without finite values)."""
    v = np.asarray(values, dtype=float)
    half = v[: len(v) // 2]
    if not (np.isfinite(half).any() and np.isfinite(v).any()):
        return False
    return round(float(np.nanmin(half)), decimals) == round(
        float(np.nanmin(v)), decimals
    ) and round(float(np.nanmax(half)), decimals) == round(float(np.nanmax(v)), decimals)


@_single_thread_blas
def order_dependence(
    gaps_s: Sequence[float] | np.ndarray,
    *,
    n_orders: int = 20,
    seed: int = 0,
    components: int = 3,
    n_init: int = 10,
    random_state: int = 42,
    converged: dict | None = None,
    n_published_orders: int | None = None,
) -> tuple[list[dict], dict]:
    """Refit the pause mixtures to the same gaps in random orders and return ``(rows,
    summary)``: how much the published-settings fit (EM tolerance :data:`PUBLISHED_EM_TOL`,
    stopped early) and the checked converged fit depend on the order of the gaps.

    The k-means starts draw from ``random_state`` but see the gaps in another order, so the
    early-stopped fit starts elsewhere and stops elsewhere; a fit at the optimum should not move.
    Order 0 is the input order; orders 1, 2, ... are permutations drawn in sequence from
    ``numpy.random.default_rng(seed)``. The published-settings fit is refitted in
    ``n_published_orders`` orders (None: ``max(n_orders, MIN_PUBLISHED_ORDERS)``, doubled while
    the first half of the orders does not give the range of the crossing over all of them at
    3 decimals, up to :data:`MAX_PUBLISHED_ORDERS`); the
    converged fit in the first ``n_orders``, its largest mixture continued from that order's
    published-settings one (warm start: the same k-means starts; the smaller mixtures, which
    give only BICs, from their own starts, since an early-stopped 2-component fit can sit in a
    worse optimum, and stopped at ``converged["tol"]``; the largest EM run on at
    ``converged["tol"]`` and then checked as :func:`fit_converged_pause_model` does, with the
    keyword arguments in ``converged``; its ``random_state_checks`` key is ignored).

    ``rows``: per order and fit (``published_settings``, ``converged``): ``crossing_s``
    (seconds), ``delta_bic_2_vs_1`` and ``delta_bic_3_vs_1`` (BIC(1) - BIC(k); missing beyond
    ``components``), ``log_likelihood`` (total, natural log), ``n_iter``. ``summary``:
    ``n_orders`` (converged), ``n_published_orders``, ``seed``, and per fit its ``n_orders``,
    the input-order value, the minimum and maximum over the random orders of the crossing and of
    each delta BIC, ``crossing_stable`` (the crossing's range over the first half of the orders
    equals the full range at 3 decimals) and the number of random orders in which delta
    BIC(2 vs 1) is negative.
    """
    gaps = np.asarray(gaps_s, dtype=float)
    adaptive = n_published_orders is None
    n_pub = max(n_orders, MIN_PUBLISHED_ORDERS) if adaptive else int(n_published_orders)
    n_pub = max(int(n_pub), int(n_orders))
    opts = {k: v for k, v in (converged or {}).items() if k != "random_state_checks"}
    tol, max_iter, verify = _converged_settings(opts)
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    i = -1
    while True:
        while i < n_pub:
            i += 1
            perm = np.arange(len(gaps)) if i == 0 else rng.permutation(len(gaps))
            rows += _order_rows(
                gaps[perm],
                i,
                i <= n_orders,
                components,
                n_init,
                random_state,
                tol,
                max_iter,
                verify,
            )
        pub_cross = [r["crossing_s"] for r in rows if r["fit"] == "published_settings"][1:]
        if not adaptive or n_pub >= MAX_PUBLISHED_ORDERS or _range_stable(pub_cross):
            break
        n_pub = min(2 * n_pub, MAX_PUBLISHED_ORDERS)
    summary: dict = {
        "n_orders": int(n_orders),
        "n_published_orders": int(n_pub),
        "seed": int(seed),
        "input_order": 0,
    }
    for name in ("published_settings", "converged"):
        mine = [r for r in rows if r["fit"] == name]
        first, rest = mine[0], mine[1:]
        entry: dict = {"n_orders": len(rest)}
        for col in ("crossing_s", "delta_bic_2_vs_1", "delta_bic_3_vs_1"):
            vals = np.array([r[col] for r in rest], dtype=float)
            entry[col] = {
                "input_order": first[col],
                "min": float(np.nanmin(vals)) if np.isfinite(vals).any() else float("nan"),
                "max": float(np.nanmax(vals)) if np.isfinite(vals).any() else float("nan"),
            }
        entry["crossing_stable"] = _range_stable([r["crossing_s"] for r in rest])
        entry["orders_delta_bic_2_negative"] = int(sum(r["delta_bic_2_vs_1"] < 0 for r in rest))
        summary[name] = entry
    return rows, summary


def _order_rows(
    gaps: np.ndarray,
    i: int,
    with_converged: bool,
    components: int,
    n_init: int,
    random_state: int,
    tol: float,
    max_iter: int,
    verify: dict,
) -> list[dict]:
    """The rows of :func:`order_dependence` for order ``i`` (gaps already in that order)."""
    rows = []
    data = _Gaps(gaps, components)
    fitted: dict[int, _Mixture] = {}
    fits = {
        "published_settings": _fit_models(
            data, components, n_init, random_state, PUBLISHED_EM_TOL, 2000, mixtures=fitted
        )
    }
    if with_converged:  # warm start of the largest mixture only (its crossing is checked)
        warm = {components: fitted[components]} if components in fitted else None
        fits["converged"] = _fit_models(
            data,
            components,
            n_init,
            random_state,
            tol,
            max_iter,
            verify,
            warm=warm,
            verify_smaller=False,
        )
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
    return rows


def order_check(
    gaps_s: Sequence[float] | np.ndarray,
    *,
    n_orders: int,
    seed: int,
    components: int = 3,
    n_init: int = 10,
    random_state: int = 42,
    converged: dict | None = None,
    why_not: str | None = None,
) -> tuple[list[dict], dict]:
    """Run the data-order check (:func:`order_dependence`, same keyword arguments) of the pause
    fits on the gaps ``gaps_s`` (seconds, in the order they are read in) unless it cannot or
    should not run, and return ``(rows, record)``.

    ``rows``: those of :func:`order_dependence` (empty when not run). ``record`` (the JSON of
    ``results/pauses/order_dependence.json`` without provenance): ``run`` True and
    ``order_dependence`` (its summary), or ``run`` False and ``why``: ``why_not`` when given
    (e.g. the study's preset names no published fit), else no orders asked for (``n_orders``
    0), no gaps, or too few positive gaps for a ``components``-mixture (fewer than 10 per
    component, as :func:`fit_pause_model` requires). Never raises for a valid study."""
    gaps = np.asarray(gaps_s, dtype=float)
    n_pos = int((gaps > 0).sum())
    why = why_not
    if why is None and int(n_orders) <= 0:
        why = "pauses.order_check.n_orders is 0"
    if why is None and n_pos < 10 * int(components):
        why = (
            f"only {n_pos} positive gaps: too few for a {int(components)}-component mixture "
            f"(at least {10 * int(components)})"
        )
    if why is not None:
        return [], {"run": False, "why": why}
    rows, summary = order_dependence(
        gaps,
        n_orders=int(n_orders),
        seed=int(seed),
        components=components,
        n_init=n_init,
        random_state=random_state,
        converged=converged,
    )
    return rows, {"run": True, "order_dependence": summary}


def order_check_summary(record: Mapping | None) -> dict | None:
    """Return the summary of :func:`order_dependence` held by a data-order check record
    (:func:`order_check`, ``results/pauses/order_dependence.json``): the ``order_dependence``
    value, as ``threshold.json`` held it before the check had its own rule; None when the
    record is None or says the check did not run."""
    if not record or not record.get("run"):
        return None
    return dict(record.get("order_dependence") or {}) or None
