"""Pause threshold from a Gaussian mixture of log inter-event gaps (METHODS 5).

Gaps are the time differences (seconds) between consecutive interaction events of one attempt, as
returned by :func:`nonolab.study.features.interaction_gaps` (the same gaps the pause counts use: events
of a puzzle window with role ``interaction`` or ``marker``, one per log line). Mixtures with 1..3
components are fitted to the natural log of the strictly positive gaps; the threshold is where the
posteriors of the middle and slowest components are equal. EM stopped at scikit-learn's default
tolerance (the published fit) is not at an optimum; :func:`fit_converged_pause_model` continues EM
until the crossing no longer moves.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture


@dataclass(frozen=True)
class PauseModel:
    """A fitted pause model. Times in seconds; ``means_s`` are exp of the log-space means.

    ``bic``: k -> BIC of the k-component fit (on log gaps); ``delta_bic_vs_1``: k -> BIC(1) -
    BIC(k) (positive = better than one component); ``means_log``/``sds_log``/``weights`` of the
    largest fit, components in ascending mean order; ``threshold_s``: exp of the equal-posterior
    crossing of the two slowest components (NaN when the largest fit has fewer than 2).
    ``log_likelihood``: total log-likelihood of the largest fit (natural log, summed over the
    fitted gaps); ``n_iter``: its EM iterations (of the best start, plus any continuation);
    ``converged``: scikit-learn's flag, or the outcome of the continuation check when ``check``
    (:func:`fit_converged_pause_model`) is given.
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


def _log_positive_gaps(
    gaps_s: Sequence[float] | np.ndarray, max_components: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(gaps, log positive gaps as a column)``, validating the gaps (seconds)."""
    g = np.asarray(gaps_s, dtype=float)
    if g.ndim != 1 or not np.all(np.isfinite(g)) or (g < 0).any():
        raise ValueError("gaps must be a 1-D array of finite non-negative seconds")
    pos = g[g > 0]
    if len(pos) < 10 * max_components:
        raise ValueError(f"only {len(pos)} positive gaps: too few for a {max_components}-mixture")
    return g, np.log(pos).reshape(-1, 1)


def _sorted_components(gm: GaussianMixture) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (means, SDs, weights) of a fitted 1-D mixture in ascending mean order (log s)."""
    order = np.argsort(gm.means_.ravel())
    return (
        gm.means_.ravel()[order],
        np.sqrt(gm.covariances_.ravel()[order]),
        gm.weights_[order],
    )


def _crossing_log(gm: GaussianMixture, strict: bool = True) -> float:
    """Return the equal-posterior crossing (log s) of the two slowest components, NaN if < 2
    (or, unless ``strict``, if their densities do not cross between the means)."""
    mu, sd, w = _sorted_components(gm)
    if len(mu) < 2:
        return float("nan")
    try:
        return equal_posterior_crossing(mu, sd, w, len(mu) - 2, len(mu) - 1)
    except ValueError:
        if strict:
            raise
        return float("nan")


def _continue_until_stable(
    gm: GaussianMixture,
    x: np.ndarray,
    max_move_s: float,
    tol_factor: float,
    min_tol: float,
) -> tuple[int, bool, list[dict]]:
    """Continue EM of the fitted ``gm`` on ``x`` (warm start) at tolerances divided by
    ``tol_factor`` until the crossing moves by at most ``max_move_s`` seconds, or the tolerance
    would fall below ``min_tol``. Returns ``(extra EM iterations, stable, steps)``; each step:
    ``em_tol`` (of the continuation), ``n_iter``, ``crossing_s`` (after it) and ``moved_s``.
    A fit whose two slowest components do not cross (an intermediate mixture) has no crossing
    to follow: ``moved_s`` is NaN and, while neither side has a crossing, the first
    continuation scikit-learn reports converged ends it."""
    steps: list[dict] = []
    extra = 0
    before = _crossing_log(gm, strict=False)
    tol = float(gm.tol)
    while tol / tol_factor >= min_tol * (1 - 1e-9):
        tol /= tol_factor
        gm.set_params(warm_start=True, tol=tol)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gm.fit(x)
        extra += int(gm.n_iter_)
        after = _crossing_log(gm, strict=False)
        moved = float(abs(np.exp(after) - np.exp(before)))
        steps.append(
            {
                "em_tol": tol,
                "n_iter": int(gm.n_iter_),
                "crossing_s": float(np.exp(after)),
                "moved_s": moved,
            }
        )
        no_crossing = bool(np.isnan(before) and np.isnan(after))
        if (moved <= max_move_s or no_crossing) and bool(gm.converged_):
            return extra, True, steps
        before = after
    return extra, False, steps


def _fit_one(
    x: np.ndarray,
    k: int,
    n_init: int,
    seed: int,
    tol: float,
    max_iter: int,
    verify: dict | None,
) -> tuple[GaussianMixture, int, bool, dict | None]:
    """Fit a ``k``-component mixture to ``x``; with ``verify`` (keyword arguments of
    :func:`_continue_until_stable`) continue EM until the crossing is stable. Returns
    ``(mixture, EM iterations, converged, check record or None)``."""
    gm = GaussianMixture(
        k,
        covariance_type="full",
        n_init=n_init,
        random_state=seed,
        tol=tol,
        max_iter=max_iter,
    )
    with warnings.catch_warnings():
        if verify is not None:
            warnings.simplefilter("ignore", ConvergenceWarning)
        gm.fit(x)
    n_iter, converged = int(gm.n_iter_), bool(gm.converged_)
    if verify is None:
        return gm, n_iter, converged, None
    start_crossing = _crossing_log(gm, strict=False)
    extra, stable, steps = _continue_until_stable(gm, x, **verify)
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
    return gm, n_iter + extra, stable, check


def _fit_models(
    gaps_s: Sequence[float] | np.ndarray,
    max_components: int,
    n_init: int,
    seed: int,
    tol: float,
    max_iter: int,
    verify: dict | None,
) -> PauseModel:
    """Fit 1..``max_components`` mixtures (see :func:`fit_pause_model`) and return the model."""
    g, x = _log_positive_gaps(gaps_s, max_components)
    bic: dict[int, float] = {}
    last = None
    for k in range(1, max_components + 1):
        last = _fit_one(x, k, n_init, seed, tol, max_iter, verify if k > 1 else None)
        bic[k] = float(last[0].bic(x))
    assert last is not None
    gm, n_iter, converged, check = last
    mu, sd, w = _sorted_components(gm)
    thr = _crossing_log(gm)
    return PauseModel(
        n_gaps=int(len(g)),
        n_positive=int(len(x)),
        median_gap_s=float(np.median(g)),
        bic=bic,
        delta_bic_vs_1={k: bic[1] - v for k, v in bic.items() if k > 1},
        means_log=tuple(map(float, mu)),
        sds_log=tuple(map(float, sd)),
        weights=tuple(map(float, w)),
        threshold_log=thr,
        threshold_s=float(np.exp(thr)),
        seed=seed,
        tol=float(gm.tol),
        log_likelihood=float(gm.score(x) * len(x)),
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
    """Fit Gaussian mixtures (scikit-learn, full covariance, ``n_init`` starts, ``random_state``
    ``seed``, EM tolerance ``tol`` and at most ``max_iter`` iterations) with 1..``max_components``
    components to log(gap) of the positive gaps, and return the :class:`PauseModel`. Zero gaps
    are counted in ``n_gaps`` and the median but not fitted.

    EM stops at ``tol`` (on the mean log-likelihood per gap), converged or not: the published fit
    used scikit-learn's defaults (``tol=PUBLISHED_EM_TOL``, ``max_iter=100``), which on the
    public study stop after 4 iterations at the published 2.36 s. :func:`fit_converged_pause_model`
    gives the fit whose convergence is checked."""
    return _fit_models(gaps_s, max_components, n_init, seed, tol, max_iter, None)


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
    the crossing of the two slowest components by at most ``max_move_s`` seconds (and
    scikit-learn reports convergence), or the tolerance would fall below ``min_tol``
    (``converged`` False). ``tol`` of the model is the last tolerance; ``check`` records every
    step (tolerance, iterations, crossing in seconds, move in seconds). On the public study the
    crossing starts at 1.564 s (``tol`` 1e-6) and settles at 1.5174 s (docs/decisions.md,
    "Pause threshold")."""
    verify = {"max_move_s": max_move_s, "tol_factor": tol_factor, "min_tol": min_tol}
    return _fit_models(gaps_s, max_components, n_init, seed, tol, max_iter, verify)


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
    k = len(model.means_log)
    _, x = _log_positive_gaps(gaps_s, k)
    verify = {
        "max_move_s": float(converged_kwargs.get("max_move_s", CONVERGED_MAX_MOVE_S)),
        "tol_factor": float(converged_kwargs.get("tol_factor", CONVERGED_TOL_FACTOR)),
        "min_tol": float(converged_kwargs.get("min_tol", CONVERGED_MIN_TOL)),
    }
    tol = float(converged_kwargs.get("tol", CONVERGED_EM_TOL))
    max_iter = int(converged_kwargs.get("max_iter", 5000))
    crossings, lls = [], []
    for s in seeds:
        try:
            gm, _, _, _ = _fit_one(x, k, 1, int(s), tol, max_iter, verify)
        except ValueError:  # this start ends without a crossing of the two slowest components
            crossings.append(float("nan"))
            lls.append(float("nan"))
            continue
        crossings.append(float(np.exp(_crossing_log(gm, strict=False))))
        lls.append(float(gm.score(x) * len(x)))
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
    log: Callable[[str], None] | None = None,
) -> dict:
    """Fit the pause model to ``gaps_s`` (seconds) and return its JSON record
    (:func:`model_record`, ``results/pauses/threshold.json`` without provenance).

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
    conv = fit_converged_pause_model(gaps_s, components, n_init, random_state, **opts)
    published = fit_pause_model(gaps_s, components, n_init, random_state, tol=PUBLISHED_EM_TOL)
    seeds = [random_state + i for i in range(1, n_checks + 1)]
    rs_check = random_state_check(gaps_s, conv, seeds, **opts)
    use_converged = em_tol == "converged" or (em_tol == "auto" and preset_em_tol is None)
    if use_converged:
        model = conv
    else:
        tol = em_tolerance(em_tol, preset_em_tol)
        model = (
            published
            if tol == PUBLISHED_EM_TOL
            else fit_pause_model(gaps_s, components, n_init, random_state, tol=tol)
        )
    used, source = threshold_used(model, threshold, preset_threshold)
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
    rec["converged_fit"] = fit_record(conv) | {"random_state_check": rs_check}
    rec["published_settings_fit"] = fit_record(published)
    return rec
