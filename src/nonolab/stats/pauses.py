"""Pause threshold from a Gaussian mixture of log inter-event gaps (METHODS 5).

Gaps are the time differences (seconds) between consecutive interaction events of one attempt, as
returned by :func:`nonolab.study.features.interaction_gaps` (the same gaps the pause counts use: events
of a puzzle window with role ``interaction`` or ``marker``, one per log line). Mixtures with 1..3
components are fitted to the natural log of the strictly positive gaps; the threshold is where the
posteriors of the middle and slowest components are equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.mixture import GaussianMixture


@dataclass(frozen=True)
class PauseModel:
    """A fitted pause model. Times in seconds; ``means_s`` are exp of the log-space means.

    ``bic``: k -> BIC of the k-component fit (on log gaps); ``delta_bic_vs_1``: k -> BIC(1) -
    BIC(k) (positive = better than one component); ``means_log``/``sds_log``/``weights`` of the
    largest fit, components in ascending mean order; ``threshold_s``: exp of the equal-posterior
    crossing of the two slowest components (NaN when the largest fit has fewer than 2).
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
#: EM tolerance that runs the fit to convergence (nonolab's default for new studies).
CONVERGED_EM_TOL = 1e-6


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

    The default ``tol`` runs EM to convergence. The published fit used scikit-learn's defaults
    (``tol=PUBLISHED_EM_TOL``, ``max_iter=100``), which stop EM early: on the public study that
    gives the published 2.36 s, while the converged 3-component fit crosses at about 1.56 s
    (docs/decisions.md, "Pause threshold")."""
    g = np.asarray(gaps_s, dtype=float)
    if g.ndim != 1 or not np.all(np.isfinite(g)) or (g < 0).any():
        raise ValueError("gaps must be a 1-D array of finite non-negative seconds")
    pos = g[g > 0]
    if len(pos) < 10 * max_components:
        raise ValueError(f"only {len(pos)} positive gaps: too few for a {max_components}-mixture")
    x = np.log(pos).reshape(-1, 1)
    bic: dict[int, float] = {}
    last = None
    for k in range(1, max_components + 1):
        gm = GaussianMixture(
            k,
            covariance_type="full",
            n_init=n_init,
            random_state=seed,
            tol=tol,
            max_iter=max_iter,
        ).fit(x)
        bic[k] = float(gm.bic(x))
        last = gm
    assert last is not None
    order = np.argsort(last.means_.ravel())
    mu = last.means_.ravel()[order]
    sd = np.sqrt(last.covariances_.ravel()[order])
    w = last.weights_[order]
    thr = float("nan")
    if len(mu) >= 2:
        thr = equal_posterior_crossing(mu, sd, w, len(mu) - 2, len(mu) - 1)
    return PauseModel(
        n_gaps=int(len(g)),
        n_positive=int(len(pos)),
        median_gap_s=float(np.median(g)),
        bic=bic,
        delta_bic_vs_1={k: bic[1] - v for k, v in bic.items() if k > 1},
        means_log=tuple(map(float, mu)),
        sds_log=tuple(map(float, sd)),
        weights=tuple(map(float, w)),
        threshold_log=thr,
        threshold_s=float(np.exp(thr)),
        seed=seed,
        tol=tol,
    )


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
    :data:`CONVERGED_EM_TOL`; ``"converged"`` / ``"published"`` name the two constants."""
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
    log: Callable[[str], None] | None = None,
) -> dict:
    """Fit the pause model to ``gaps_s`` (seconds) and return its JSON record
    (:func:`model_record`, ``results/pauses/threshold.json`` without provenance).

    The EM tolerance is :func:`em_tolerance` of ``em_tol``; the threshold used is
    :func:`threshold_used` of ``threshold``. The same fit with the other EM tolerance
    (published settings stop EM early; docs/decisions.md, "Pause threshold") is reported
    beside it as ``alternative_fit`` (``em_tol``, ``threshold_s``, ``means_s``, ``weights``,
    ``delta_bic_vs_1``); ``em_tol`` in the record is the tolerance used.
    """
    tol = em_tolerance(em_tol, preset_em_tol)
    model = fit_pause_model(gaps_s, components, n_init, random_state, tol=tol)
    used, source = threshold_used(model, threshold, preset_threshold)
    other_tol = PUBLISHED_EM_TOL if tol != PUBLISHED_EM_TOL else CONVERGED_EM_TOL
    other = fit_pause_model(gaps_s, components, n_init, random_state, tol=other_tol)
    if log is not None:
        log(
            f"fitted crossing {model.threshold_s:.4f} s (EM tol {tol:g}); threshold used "
            f"{used:.4f} s ({source}); alternative fit (EM tol {other_tol:g}): crossing "
            f"{other.threshold_s:.4f} s"
        )
    rec = model_record(model, used, source)
    keep = ("em_tol", "threshold_s", "means_s", "weights", "delta_bic_vs_1")
    rec["alternative_fit"] = {
        k: v for k, v in model_record(other, used, source).items() if k in keep
    }
    return rec
