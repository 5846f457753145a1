"""Generic linear mixed model engine: crossed random intercepts (METHODS 9).

Every model here is ``y ~ fixed effects + (1 | participant) + (1 | puzzle)``, fitted by REML
(lme4's ``lmer(y ~ x + (1|participant) + (1|puzzle), REML = TRUE)``);
``tests/stats/test_r_crosscheck.py`` checks fixed effects, variance components, the REML
log-likelihood and the Satterthwaite df against lme4 and lmerTest, ``tests/stats/
test_mixed_models.py`` against statsmodels' ``MixedLM`` and dense-matrix formulas.

One REML criterion, :func:`reml_criterion` (lme4's profiled REML deviance), serves the fit
(:func:`reml_fit_arrays`, :func:`fit_crossed`) and :func:`satterthwaite_df` uses the exact
derivatives of the same deviance in the variance parameters. Both exploit the design's structure
instead of dense indicator matrices: the factor with the most levels (participants) has a
diagonal block in ``Z'Z`` and is eliminated in closed form (a Schur complement), its levels
grouped by their number of observations, so after one O(observations) pass over the data an
evaluation costs O(m^3) with m = puzzles + fixed effects + 1, whatever the number of participants.

Public entry points:

* :func:`fit_crossed` -> :class:`CrossedFit` (one model; warnings recorded, never swallowed);
* :func:`bootstrap_p` (parametric bootstrap p-value of one fixed-effect term under the null;
  :func:`parametric_bootstrap` from two fits already made);
* :func:`satterthwaite_df` (Satterthwaite denominator df of a fixed-effect contrast);
* :func:`reml_fit_arrays` (direct REML fit on arrays: simulations, and a bootstrap refit the
  batched fit leaves);
* :func:`reml_fit_batch` (REML fits of many responses with one design: the bootstrap refits,
  from :func:`simulate_responses`; or each with its own rows and fixed effects, ``keep``: the
  design's independent power simulations).

The bootstrap refits share the design, so the design's share of the sufficient statistics is
computed once and the profiled criterion, with its exact gradient and Hessian in the relative
variances, is evaluated for all responses at once (stacked small matrices); a projected Newton
iteration then runs for all of them together. The same optimum as the one-response engine,
without its per-refit Python and optimiser overhead.

The study tables built on it are in :mod:`nonolab.stats.mixed_models`.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.linalg import solve_triangular

_F = TypeVar("_F", bound=Callable[..., Any])


def _single_thread_blas(fn: _F) -> _F:
    """Run ``fn`` with BLAS limited to one thread: the matrices here are small (at most a few
    hundred rows), and multi-threaded BLAS on them is several times slower on a shared machine.
    Results do not depend on it."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@functools.cache
def _blas_controller() -> Any:
    """Return one ``threadpoolctl.ThreadpoolController`` for the process (finding the loaded
    BLAS libraries costs about 2 ms, a quarter of a bootstrap refit, when done per call)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


PARTICIPANT = "participant_id"
PUZZLE = "puzzle_hash"


@dataclass(frozen=True)
class CrossedFit:
    """One crossed-random-intercept LMM fit.

    ``params``/``bse``/``pvalues`` are indexed by fixed-effect term (Wald z p-values, normal
    theory); ``cov_params`` is the fixed-effect covariance matrix. Variances are in squared units
    of the outcome. ``llf`` is the REML (or ML) log-likelihood on lme4's scale.
    """

    formula: str
    reml: bool
    n: int
    n_participants: int
    n_puzzles: int
    params: pd.Series
    bse: pd.Series
    pvalues: pd.Series
    cov_params: pd.DataFrame
    var_participant: float
    var_puzzle: float
    var_residual: float
    llf: float
    converged: bool
    optimiser: str
    warnings: tuple[str, ...] = field(default_factory=tuple)
    exog: np.ndarray | None = field(default=None, repr=False, compare=False)
    participant_codes: np.ndarray | None = field(default=None, repr=False, compare=False)
    puzzle_codes: np.ndarray | None = field(default=None, repr=False, compare=False)
    endog: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def singular(self) -> bool:
        """True when a random-effect variance is on the boundary (< 1e-6 of the residual)."""
        tol = 1e-6 * max(self.var_residual, 1e-300)
        return self.var_participant < tol or self.var_puzzle < tol

    def warning_text(self) -> str:
        """Return the recorded warnings (plus a boundary note) joined by ``"; "`` ('' if none)."""
        w = list(self.warnings)
        if self.singular:
            w.append("boundary (singular) fit: a random-effect variance is ~0")
        return "; ".join(w)


def _formula_columns(formula: str, data: pd.DataFrame) -> list[str]:
    tokens = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula)
    out: list[str] = []
    for t in tokens:
        if t in data.columns and t not in out:
            out.append(t)
    return out


def _codes(s: pd.Series) -> np.ndarray:
    return pd.factorize(s.astype(str), sort=True)[0]


@_single_thread_blas
def formula_design(
    data: pd.DataFrame, formula: str
) -> tuple[np.ndarray, np.ndarray, list[str], tuple[str, ...]]:
    """Return ``(y, X, fixed-effect names, warnings)`` of statsmodels' formula design for
    ``formula`` on ``data`` (``OLS.from_formula``: the design and term names of
    ``MixedLM.from_formula``); ``warnings`` are the messages raised while building it, as
    ``"Category: message"``, each once, recorded rather than silenced."""
    from statsmodels.regression.linear_model import OLS

    with warnings.catch_warnings(record=True) as built:
        warnings.simplefilter("always")
        model = OLS.from_formula(formula, data=data)
    msgs = tuple(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in built))
    X = np.asarray(model.exog, dtype=float)
    y = np.asarray(model.endog, dtype=float)
    return y, X, list(model.exog_names), msgs


def fit_crossed(
    data: pd.DataFrame,
    formula: str,
    *,
    participant: str = PARTICIPANT,
    puzzle: str = PUZZLE,
    reml: bool = True,
    optimisers: Sequence[str] | None = None,
) -> CrossedFit:
    """Fit ``formula`` with crossed random intercepts for ``participant`` and ``puzzle``.

    Rows with a missing value in any formula column are dropped (``n`` reports what was used).
    The fixed-effect design is statsmodels' formula design (``OLS.from_formula``: the same
    design and term names as ``MixedLM.from_formula``). The fit is the profiled REML (or ML)
    optimum of :func:`reml_fit_arrays` (several starts and every boundary face, the best kept);
    ``cov_params`` is lme4's ``vcov``, ``sigma^2 (X'W^-1X)^-1`` at the fitted variances.
    Warnings raised while building the design, and an optimiser stop at its iteration limit,
    are recorded in ``CrossedFit.warnings`` (not silenced). ``optimisers`` is accepted for
    compatibility and ignored (the engine has one optimiser, L-BFGS-B, reported as
    ``"lbfgs"``). Returns a :class:`CrossedFit`.
    """
    del optimisers
    cols = _formula_columns(formula, data)
    for c in (participant, puzzle):
        if c not in data.columns:
            raise KeyError(f"fit_crossed: column {c!r} not in data")
    d = data.dropna(subset=cols + [participant, puzzle]).reset_index(drop=True)
    if len(d) == 0:
        raise ValueError(f"fit_crossed: no complete rows for {formula!r}")
    y, X, fe, msgs = formula_design(d, formula)
    if len(y) <= X.shape[1]:
        raise ValueError(
            f"fit_crossed: {len(y)} complete rows for {X.shape[1]} fixed effects in {formula!r}"
        )
    p_codes, q_codes = _codes(d[participant]), _codes(d[puzzle])
    c = _Cross.of(y, X, [p_codes, q_codes])
    opt = _reml_optimum(c, 2, reml=reml)
    if not opt.converged:
        msgs = msgs + (f"ConvergenceWarning: L-BFGS-B: {opt.message}",)
    crit, beta, xtwx_inv, scale = reml_criterion(opt.theta, c, reml=reml)
    params = pd.Series(beta, index=fe)
    cov = pd.DataFrame(scale * xtwx_inv, index=fe, columns=fe)
    bse = pd.Series(np.sqrt(np.diag(cov.to_numpy())), index=fe)
    pvals = pd.Series(2 * stats.norm.sf(np.abs(params / bse)), index=fe)
    var_p, var_q = opt.theta**2 * scale
    return CrossedFit(
        formula=formula,
        reml=reml,
        n=len(d),
        n_participants=int(p_codes.max()) + 1,
        n_puzzles=int(q_codes.max()) + 1,
        params=params,
        bse=bse,
        pvalues=pvals,
        cov_params=cov,
        var_participant=float(var_p),
        var_puzzle=float(var_q),
        var_residual=float(scale),
        llf=-crit / 2,
        converged=opt.converged,
        optimiser="lbfgs",
        warnings=msgs,
        exog=X,
        participant_codes=p_codes,
        puzzle_codes=q_codes,
        endog=y,
    )


def simulate_response(fit: CrossedFit, rng: np.random.Generator) -> np.ndarray:
    """Return one response vector simulated from ``fit`` (same design; outcome units).

    ``y* = X beta + u_participant + u_puzzle + e`` with independent normal draws at the fitted
    variances (a parametric bootstrap draw).
    """
    if fit.exog is None or fit.participant_codes is None or fit.puzzle_codes is None:
        raise ValueError("simulate_response needs a fit made by fit_crossed")
    mean = fit.exog @ fit.params.to_numpy()
    n_p = int(fit.participant_codes.max()) + 1
    n_q = int(fit.puzzle_codes.max()) + 1
    up = rng.normal(0.0, np.sqrt(max(fit.var_participant, 0.0)), n_p)
    uq = rng.normal(0.0, np.sqrt(max(fit.var_puzzle, 0.0)), n_q)
    e = rng.normal(0.0, np.sqrt(fit.var_residual), len(mean))
    return mean + up[fit.participant_codes] + uq[fit.puzzle_codes] + e


@dataclass(frozen=True)
class BootstrapResult:
    """Parametric bootstrap of one term: ``p_boot`` = (1 + #{|z*| >= |z|}) / (1 + n_valid)."""

    term: str
    z_observed: float
    z_null: np.ndarray
    n_failed: int

    @property
    def n_valid(self) -> int:
        """Number of bootstrap refits used (finite statistic)."""
        return int(np.isfinite(self.z_null).sum())

    @property
    def p_boot(self) -> float:
        """Two-sided bootstrap p-value (unitless; NaN with no valid refit)."""
        z = self.z_null[np.isfinite(self.z_null)]
        if len(z) == 0:
            return float("nan")
        return float((1 + np.sum(np.abs(z) >= abs(self.z_observed) - 1e-12)) / (1 + len(z)))


@_single_thread_blas
def bootstrap_p(
    data: pd.DataFrame,
    y: str,
    rhs: str,
    term: str,
    *,
    n_boot: int,
    seed: int,
    participant: str = PARTICIPANT,
    puzzle: str = PUZZLE,
    null_rhs: str = "1",
    progress: Callable[[int, int], None] | None = None,
    chunk: int | None = None,
) -> BootstrapResult:
    """Parametric-bootstrap p-value for fixed-effect ``term`` of ``y ~ rhs``.

    The null model ``y ~ null_rhs`` (crossed random intercepts, REML) is fitted; ``n_boot``
    responses are simulated from it (``numpy.random.default_rng(seed)``,
    :func:`simulate_responses`) and the full model is refitted to each; the statistic is the
    Wald z of ``term``. Deterministic for a given seed. The refits share the design, so they
    are made together (:func:`parametric_bootstrap`: ``chunk`` responses at a time by
    :func:`reml_fit_batch`, started at the observed fit's relative SDs). ``progress(i,
    n_boot)`` is called after each chunk with the number of refits done. Returns a
    :class:`BootstrapResult`.
    """
    cols = _formula_columns(f"{y} ~ {rhs}", data)
    d = data.dropna(subset=cols + [participant, puzzle]).reset_index(drop=True).copy()
    full = fit_crossed(d, f"{y} ~ {rhs}", participant=participant, puzzle=puzzle)
    null = fit_crossed(d, f"{y} ~ {null_rhs}", participant=participant, puzzle=puzzle)
    return parametric_bootstrap(
        full, null, term, n_boot=n_boot, seed=seed, progress=progress, chunk=chunk
    )


@_single_thread_blas
def parametric_bootstrap(
    full: CrossedFit,
    null: CrossedFit,
    term: str,
    *,
    n_boot: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    chunk: int | None = None,
) -> BootstrapResult:
    """Parametric bootstrap of fixed-effect ``term`` of the fit ``full`` under the fit ``null``.

    Both are :func:`fit_crossed` fits of the same rows (``null`` of the null formula); the
    bootstrap of :func:`bootstrap_p` (which makes both fits) for a caller that has them
    already. ``n_boot`` responses are simulated from ``null`` (:func:`simulate_responses`,
    ``numpy.random.default_rng(seed)``) and ``full``'s model is refitted to each, ``chunk`` at
    a time (default: up to 256, about 32 MB of responses), by :func:`reml_fit_batch` started
    at ``full``'s relative SDs; a response whose batched fit does not converge is refitted
    alone by :func:`reml_fit_arrays`, and a refit that fails there (an error) counts in
    ``n_failed``. Returns a :class:`BootstrapResult`.
    """
    if full.exog is None or null.exog is None or len(full.exog) != len(null.exog):
        raise ValueError("parametric_bootstrap needs two fit_crossed fits of the same rows")
    z_obs = float(full.params[term] / full.bse[term])
    rng = np.random.default_rng(seed)
    zs = np.full(n_boot, np.nan)
    failed = 0
    X = full.exog
    Z = _codes_of(full)
    j = list(full.params.index).index(term)
    start = _relative_sd(full)
    if chunk is None:  # about 32 MB of simulated responses at a time
        chunk = int(np.clip(4_000_000 // len(X), 1, 256))
    for lo in range(0, n_boot, chunk):
        ystar = simulate_responses(null, rng, min(chunk, n_boot - lo))
        try:
            beta, cov, _, _, ok = reml_fit_batch(ystar, X, Z, start=start)
            with np.errstate(divide="ignore", invalid="ignore"):
                zs[lo : lo + len(ystar)] = beta[:, j] / np.sqrt(cov[:, j, j])
        except np.linalg.LinAlgError:  # e.g. a singular design: every refit on its own
            ok = np.zeros(len(ystar), dtype=bool)
        for i in np.flatnonzero(~ok):
            try:
                b_i, cov_i, _, _ = reml_fit_arrays(ystar[i], X, Z, start=start)
                zs[lo + i] = b_i[j] / np.sqrt(cov_i[j, j])
            except (np.linalg.LinAlgError, ValueError, FloatingPointError):
                zs[lo + i] = np.nan
                failed += 1
        if progress is not None:
            progress(lo + len(ystar), n_boot)
    return BootstrapResult(term=term, z_observed=z_obs, z_null=zs, n_failed=failed)


def _indicator_matrices(fit: CrossedFit) -> list[np.ndarray]:
    """Return the participant and puzzle indicator matrices (n x levels) of ``fit``."""
    if fit.participant_codes is None or fit.puzzle_codes is None:
        raise ValueError("needs a fit made by fit_crossed")
    return [np.eye(int(k.max()) + 1)[k] for k in (fit.participant_codes, fit.puzzle_codes)]


def _relative_sd(fit: CrossedFit) -> np.ndarray:
    """Return lme4's theta: random-effect SDs relative to the residual SD."""
    return np.sqrt(np.maximum([fit.var_participant, fit.var_puzzle], 0.0) / fit.var_residual)


@dataclass(frozen=True)
class _Cross:
    """Sufficient statistics of a crossed design, so that a REML evaluation costs
    O(distinct level sizes x m^2 + m^3) with m = (levels of the non-eliminated factors) + p + 1,
    independent of the number of observations and of the eliminated factor's levels.

    One intercept factor (the one with the most levels; ``e``) is eliminated: its block of
    ``Z'Z`` is diagonal, so it is removed by a Schur complement. ``R = [Z_rest, X, y]``;
    ``RtR = R'R``; ``G[k] = sum of s_i s_i'`` over the eliminated levels ``i`` with
    ``counts[k]`` observations (``mult[k]`` levels), ``s_i`` = the sum of the rows of ``R`` in
    level ``i``. ``rest`` lists ``(factor, first, stop)`` column ranges of ``Z_rest`` in ``R``.
    """

    n: int
    p: int
    sizes: tuple[int, ...]
    e: int | None
    rest: tuple[tuple[int, int, int], ...]
    counts: np.ndarray
    mult: np.ndarray
    G: np.ndarray
    RtR: np.ndarray
    col_factor: np.ndarray = field(repr=False)

    @property
    def qr(self) -> int:
        """Number of random-effect columns outside the eliminated factor."""
        return self.rest[-1][2] if self.rest else 0

    @classmethod
    def of(cls, y: np.ndarray, X: np.ndarray, Z: Sequence[np.ndarray | Any]) -> _Cross:
        """Build from the response, the fixed-effect design and the random-effect designs.

        Each ``Z[k]`` is an integer code vector (level of every observation: an intercept
        factor), a dense or scipy.sparse indicator matrix (read as codes) or any other dense or
        sparse design (a general factor, kept in ``Z_rest``).
        """
        y = np.asarray(y, dtype=float)
        X = np.asarray(X, dtype=float)
        n, p = X.shape
        blocks: list[Any] = []
        codes: list[np.ndarray | None] = []
        for z in Z:
            k, mat = _as_factor(z, n)
            codes.append(k)
            blocks.append(mat)
        sizes = tuple(int(b.shape[1]) for b in blocks)
        ind = [j for j, k in enumerate(codes) if k is not None]
        e = max(ind, key=lambda j: (sizes[j], -j)) if ind else None
        rest_idx = [j for j in range(len(blocks)) if j != e]
        rest, pos = [], 0
        for j in rest_idx:
            rest.append((j, pos, pos + sizes[j]))
            pos += sizes[j]
        R = sparse.hstack(
            [blocks[j] for j in rest_idx] + [sparse.csr_matrix(X), sparse.csr_matrix(y[:, None])],
            format="csr",
        )
        RtR = np.asarray((R.T @ R).todense())
        m = R.shape[1]
        if e is not None:
            ke = codes[e]
            assert ke is not None
            Ze = blocks[e]
            S = np.asarray((Ze.T @ R).todense())
            per_level = np.bincount(ke, minlength=sizes[e])
            counts, inv = np.unique(per_level, return_inverse=True)
            G = np.zeros((len(counts), m, m))
            for g in range(len(counts)):
                Sg = S[inv == g]
                G[g] = Sg.T @ Sg
            mult = np.bincount(inv, minlength=len(counts)).astype(float)
        else:
            counts, mult, G = np.zeros(0), np.zeros(0), np.zeros((0, m, m))
        return cls(
            n=n,
            p=p,
            sizes=sizes,
            e=e,
            rest=tuple(rest),
            counts=counts.astype(float),
            mult=mult,
            G=G,
            RtR=RtR,
            col_factor=np.concatenate(
                [np.full(b - a, j) for j, a, b in rest] + [np.zeros(0, dtype=int)]
            ).astype(np.intp),
        )

    def gram(self, w: np.ndarray) -> np.ndarray:
        """Return ``sum_i w(n_i) s_i s_i'`` over the eliminated levels (``w`` per count)."""
        K, m = self.G.shape[:2]
        return (w @ self.G.reshape(K, m * m)).reshape(m, m)

    def scaled(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """Return ``(Lambda R' W_e^-1 R Lambda + I_rest, log|W_e|)`` at relative SDs ``theta``.

        ``W_e = I + theta_e^2 Z_e Z_e'`` is the eliminated factor's part of ``W``; ``Lambda``
        scales the rest's columns by their ``theta`` (1 for ``X`` and ``y``) and ``I_rest``
        adds 1 to the rest's diagonal: the matrix whose Cholesky factor gives the criterion.
        """
        if self.e is not None:
            te2 = theta[self.e] ** 2
            C = self.RtR - self.gram(te2 / (1.0 + te2 * self.counts))
            logdet = float(self.mult @ np.log1p(te2 * self.counts))
        else:
            C, logdet = self.RtR.copy(), 0.0
        qr = self.qr
        if qr:
            lam = theta[self.col_factor]
            C[:qr, :] *= lam[:, None]
            C[:, :qr] *= lam[None, :]
            C[np.diag_indices(qr)] += 1.0
        return C, logdet


def _deviance(theta: np.ndarray, c: _Cross, reml: bool) -> float:
    """Return the criterion of :func:`reml_criterion` alone (one Cholesky factor of the
    augmented ``[Z_rest, X, y]`` system: its diagonal gives ``log|W|``, ``log|X'W^-1X|`` and,
    squared in the last entry, the residual sum of squares)."""
    C, logdet = c.scaled(np.asarray(theta, dtype=float))
    L = np.linalg.cholesky(C)
    d = np.diag(L)
    qr, p = c.qr, c.p
    rss = d[-1] ** 2
    dfr = c.n - p if reml else c.n
    if not rss > 0:
        raise FloatingPointError("non-positive residual variance in REML evaluation")
    logd = np.log(d[:-1])
    crit = logdet + 2 * logd[:qr].sum() + dfr * (1 + np.log(2 * np.pi * rss / dfr))
    if reml:
        crit += 2 * logd[qr:].sum()
    return float(crit)


def _as_factor(z: Any, n: int) -> tuple[np.ndarray | None, Any]:
    """Return ``(codes or None, CSR design)`` of one random-effect design (see ``_Cross.of``)."""
    if sparse.issparse(z):
        mat = sparse.csr_matrix(z, dtype=float)
    else:
        a = np.asarray(z)
        if a.ndim == 1:
            if len(a) != n or not np.issubdtype(a.dtype, np.integer) or (a < 0).any():
                raise ValueError("a code vector must hold one non-negative integer per row")
            levels = int(a.max()) + 1 if len(a) else 0
            mat = sparse.csr_matrix((np.ones(n), (np.arange(n), a)), shape=(n, levels))
            return a.astype(np.intp), mat
        mat = sparse.csr_matrix(np.asarray(a, dtype=float))
    if mat.shape[0] != n:
        raise ValueError("a random-effect design must have one row per observation")
    ones_per_row = np.diff(mat.indptr) == 1
    if ones_per_row.all() and np.all(mat.data == 1.0):
        return mat.indices.astype(np.intp), mat
    return None, mat


def reml_criterion(
    theta: np.ndarray | Sequence[float], c: _Cross, *, reml: bool = True
) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Return ``(REML criterion, beta, (X'W^-1X)^-1, sigma^2)`` at relative SDs ``theta``.

    ``W = I + sum theta_k^2 Z_k Z_k'`` (so ``V = sigma^2 W``); the criterion is lme4's REML
    deviance ``log|W| + log|X'W^-1X| + (n-p)(1 + log(2 pi sigma^2))`` with ``sigma^2 =
    r'W^-1r / (n-p)`` profiled out (squared outcome units); with ``reml=False`` lme4's ML
    deviance ``log|W| + n(1 + log(2 pi sigma^2))``, ``sigma^2 = r'W^-1r / n``. Computed in the
    random-effect space: the eliminated factor's diagonal block by its closed form
    (``log|W|`` gains ``sum_i log(1 + theta_e^2 n_i)``), the rest by a dense Cholesky factor of
    the Schur complement ``I + Lambda Z_rest' W_e^-1 Z_rest Lambda``. ``beta`` is the GLS
    estimate (outcome units); its covariance is ``sigma^2 (X'W^-1X)^-1``.
    """
    theta = np.asarray(theta, dtype=float)
    qr, p = c.qr, c.p
    C, logdet = c.scaled(theta)
    if qr:
        L = np.linalg.cholesky(C[:qr, :qr])
        A = solve_triangular(L, C[:qr, qr:], lower=True, check_finite=False)
        Cxy = C[qr:, qr:] - A.T @ A
        logdet += 2 * np.log(np.diag(L)).sum()
    else:
        Cxy = C[qr:, qr:]
    XtWX, XtWy, ytWy = Cxy[:p, :p], Cxy[:p, p], float(Cxy[p, p])
    beta = np.linalg.solve(XtWX, XtWy)
    rss = ytWy - float(beta @ XtWy)
    dfr = c.n - c.p if reml else c.n
    s2 = rss / dfr
    if not s2 > 0:
        raise FloatingPointError("non-positive residual variance in REML evaluation")
    crit = logdet + dfr * (1 + np.log(2 * np.pi * s2))
    if reml:
        crit += np.linalg.slogdet(XtWX)[1]
    return float(crit), beta, np.linalg.inv(XtWX), s2


@dataclass(frozen=True)
class _Optimum:
    """The kept optimum of :func:`_reml_optimum`: relative SDs, criterion, convergence."""

    theta: np.ndarray
    crit: float
    converged: bool
    message: str


def _reml_optimum(
    c: _Cross, k: int, start: Sequence[float] | None = None, *, reml: bool = True
) -> _Optimum:
    """Minimise :func:`reml_criterion` over ``theta >= 0`` (see :func:`reml_fit_arrays`).

    Where the criterion cannot be evaluated (relative SDs ~1e10, tried by a line search) it is
    infinite; the optimiser's finite differences of two infinite values are NaN, which
    L-BFGS-B handles by backtracking, so numpy's "invalid value" warning for them is not
    raised.
    """
    with np.errstate(invalid="ignore"):
        return _reml_minimise(c, k, start, reml=reml)


def _reml_minimise(c: _Cross, k: int, start: Sequence[float] | None, *, reml: bool) -> _Optimum:
    from scipy.optimize import minimize

    def f(t: np.ndarray) -> float:
        try:
            return _deviance(t, c, reml)
        except (np.linalg.LinAlgError, FloatingPointError):
            pass
        try:  # far out (relative SDs ~1e6) the one-factor form can lose definiteness
            return reml_criterion(t, c, reml=reml)[0]
        except (np.linalg.LinAlgError, FloatingPointError):
            return np.inf

    if start is not None:
        starts = [np.maximum(np.asarray(start, dtype=float), 1e-2)]
    else:
        starts = [np.ones(k), np.full(k, 0.3), np.full(k, 3.0)]
    opts = {"ftol": 1e-14, "gtol": 1e-10, "maxiter": 2000}
    best_t, best_f, best_status, best_msg = None, np.inf, 0, ""
    for x0 in starts:
        res = minimize(f, x0, method="L-BFGS-B", bounds=[(0.0, None)] * k, options=opts)
        if res.fun < best_f - 1e-12:
            best_t, best_f = np.asarray(res.x, dtype=float), float(res.fun)
            best_status, best_msg = int(res.status), str(res.message)
    if best_t is None:  # e.g. a constant outcome: zero residual variance everywhere
        raise FloatingPointError("REML fit failed at every start")
    for j in range(k):  # boundary faces: variance j fixed at zero
        if start is not None and best_t[j] > 0.2:
            continue  # warm start (bootstrap refits): only faces near the optimum
        free = [i for i in range(k) if i != j]

        def g(tf: np.ndarray, _j: int = j, _free: list[int] = free) -> float:
            t = np.zeros(k)
            t[_free] = tf
            return f(t)

        x0 = np.maximum(best_t[free], 1e-2) if free else np.zeros(0)
        if free:
            res = minimize(g, x0, method="L-BFGS-B", bounds=[(0.0, None)] * len(free), options=opts)
            tf, fv = np.asarray(res.x, dtype=float), float(res.fun)
            status, msg = int(res.status), str(res.message)
        else:
            tf, fv, status, msg = np.zeros(0), g(np.zeros(0)), 0, ""
        if fv < best_f - 1e-10:
            best_t = np.zeros(k)
            best_t[free] = tf
            best_f, best_status, best_msg = fv, status, msg
    if not np.isfinite(best_f):
        raise FloatingPointError("REML fit failed at every start")
    # A relative SD of exactly 0 is a stationary point of the criterion in theta (the variance
    # is theta^2), so L-BFGS-B can stop there although an interior optimum is better (found by
    # a hypothesis example: seed 342 of the crossed-data test). Restart off every zero.
    for j in range(k):
        if best_t[j] > 1e-4:
            continue
        for push in (0.3, 1.0):
            x0 = np.maximum(best_t, 1e-2)
            x0[j] = push
            res = minimize(f, x0, method="L-BFGS-B", bounds=[(0.0, None)] * k, options=opts)
            if float(res.fun) < best_f - 1e-10:
                best_t, best_f = np.asarray(res.x, dtype=float), float(res.fun)
                best_status, best_msg = int(res.status), str(res.message)
    best_t, best_f = _newton_polish(c, best_t, best_f, f, reml)
    # status 1: iteration or evaluation limit; 2 (line search cannot improve at working
    # precision) is the usual stop of finite-difference gradients at an optimum.
    return _Optimum(best_t, best_f, best_status != 1, best_msg)


def _newton_polish(
    c: _Cross, theta: np.ndarray, crit: float, f: Callable[[np.ndarray], float], reml: bool
) -> tuple[np.ndarray, float]:
    """Return ``(theta, criterion)`` after Newton steps on the deviance in the variances.

    L-BFGS-B with finite-difference gradients stops where the criterion is flat to its
    rounding (relative variance errors ~1e-6). From there, Newton steps with the exact gradient
    and Hessian of :func:`_variance_derivatives` reach the interior optimum to ~1e-10 (scaled
    gradient below 1e-9). A step is kept only if every variance stays positive and the
    criterion does not rise beyond rounding; boundary optima (a relative SD below 1e-4) are
    left as they are.
    """
    if c.e is None or np.any(theta <= 1e-4):
        return theta, crit
    s2 = reml_criterion(theta, c, reml=reml)[3]
    v = np.append(theta**2 * s2, s2)
    zero = np.zeros(c.p)
    for _ in range(4):
        try:
            _, _, H, grad = _variance_derivatives(c, v[:-1], v[-1], zero, reml=reml)
            if np.max(np.abs(grad * v)) < 1e-9:
                break
            v_new = v - np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            break
        if not np.all(v_new > 0):
            break
        t_new = np.sqrt(v_new[:-1] / v_new[-1])
        f_new = f(t_new)
        if not f_new <= crit + 1e-9:
            break
        # the profiled criterion's residual variance at t_new (a Newton step leaves it off)
        s2 = reml_criterion(t_new, c, reml=reml)[3]
        theta, crit, v = t_new, f_new, np.append(t_new**2 * s2, s2)
    return theta, crit


@_single_thread_blas
def reml_fit_arrays(
    y: np.ndarray,
    X: np.ndarray,
    Z: Sequence[np.ndarray | Any],
    start: Sequence[float] | None = None,
    *,
    reml: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """REML fit of ``y = X beta + sum Z_k u_k + e`` with independent random intercepts.

    ``Z[k]`` is a code vector (level of every observation) or an indicator matrix (dense or
    scipy.sparse; any other design is taken as given). The REML criterion profiled over the
    residual variance (:func:`reml_criterion`, lme4's parametrisation, relative SDs
    ``theta >= 0``) is minimised by bounded L-BFGS-B from several starts plus each boundary face
    (one variance fixed at 0); the best is kept, and a relative SD that ends at 0 is restarted
    from 0.3 and 1.0 (0 is a stationary point in theta, so the optimiser can stop there short of
    a better interior optimum). With a warm ``start`` (bootstrap refits) only that start is
    used, and a boundary face only when the optimum's relative SD for it is below 0.2. The
    engine of :func:`fit_crossed` and of the bootstrap refits; tests check it against
    statsmodels and lme4. ``reml=False``: maximum likelihood. Returns ``(beta, cov_beta,
    variances, loglik)`` with ``variances`` = (var_1, ..., var_k, var_residual) in squared
    outcome units and ``loglik`` the REML (or ML) log-likelihood on lme4's scale.
    """
    c = _Cross.of(y, X, Z)
    opt = _reml_optimum(c, len(Z), start, reml=reml)
    crit, beta, xtwx_inv, s2 = reml_criterion(opt.theta, c, reml=reml)
    variances = np.append(opt.theta**2 * s2, s2)
    return beta, s2 * xtwx_inv, variances, -crit / 2


def simulate_responses(fit: CrossedFit, rng: np.random.Generator, n_draws: int) -> np.ndarray:
    """Return ``n_draws`` simulated response vectors as rows of an ``n_draws x n`` array
    (outcome units): the same numbers, drawn in the same order from ``rng``, as ``n_draws``
    successive calls of :func:`simulate_response`.

    ``Generator.normal(0, s, size)`` is ``0 + s * z`` with ``z`` the generator's standard
    normal draws in sequence, so one block of standard normals (per draw: participant effects,
    puzzle effects, residuals) scaled by the fitted SDs reproduces the sequential draws bit
    for bit (``tests/stats/test_lmm_bootstrap.py`` checks it).
    """
    if fit.exog is None or fit.participant_codes is None or fit.puzzle_codes is None:
        raise ValueError("simulate_responses needs a fit made by fit_crossed")
    mean = fit.exog @ fit.params.to_numpy()
    n_p = int(fit.participant_codes.max()) + 1
    n_q = int(fit.puzzle_codes.max()) + 1
    z = rng.standard_normal((n_draws, n_p + n_q + len(mean)))
    up = 0.0 + np.sqrt(max(fit.var_participant, 0.0)) * z[:, :n_p]
    uq = 0.0 + np.sqrt(max(fit.var_puzzle, 0.0)) * z[:, n_p : n_p + n_q]
    e = 0.0 + np.sqrt(fit.var_residual) * z[:, n_p + n_q :]
    return mean + up[:, fit.participant_codes] + uq[:, fit.puzzle_codes] + e


def _factor_layout(
    codes: Sequence[np.ndarray], n: int
) -> tuple[list[np.ndarray], list[int], int, list[int]]:
    """Return the random-intercept factors of :class:`_CrossBatch` as integer code vectors,
    each factor's number of levels, the index of the factor eliminated exactly (the one with
    the most levels, the first on ties) and the indices of the others. Raises ValueError unless
    there is one non-negative code vector of length ``n`` per factor."""
    codes = [np.asarray(k, dtype=np.intp) for k in codes]
    if not codes or any(k.ndim != 1 or len(k) != n or (k < 0).any() for k in codes):
        raise ValueError("_CrossBatch needs one non-negative code vector per factor")
    sizes = [int(k.max()) + 1 for k in codes]
    e = max(range(len(codes)), key=lambda j: (sizes[j], -j))
    return codes, sizes, e, [j for j in range(len(codes)) if j != e]


@dataclass(frozen=True)
class _CrossBatch:
    """The sufficient statistics of :class:`_Cross` for one design and many responses.

    The random effects are intercept factors (code vectors); ``e`` (the factor with the most
    levels) is eliminated as in :class:`_Cross`. ``RtR[b]`` and ``G[b]`` are ``_Cross.RtR`` and
    ``_Cross.G`` of response ``b``: their design block (``[Z_rest, X]``) is computed once and
    only the response's row and column per response, as matrix products over all responses.
    """

    n: int
    p: int
    e: int
    k: int
    counts: np.ndarray
    mult: np.ndarray
    col_factor: np.ndarray
    RtR: np.ndarray
    G: np.ndarray

    @property
    def qr(self) -> int:
        """Number of random-effect columns outside the eliminated factor."""
        return len(self.col_factor)

    @classmethod
    def of(cls, Y: np.ndarray, X: np.ndarray, codes: Sequence[np.ndarray]) -> _CrossBatch:
        """Build from responses ``Y`` (one per row: B x n), the fixed-effect design ``X`` and
        one integer code vector per random intercept."""
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        X = np.asarray(X, dtype=float)
        n, p = X.shape
        codes, sizes, e, rest = _factor_layout(codes, n)
        blocks = [
            sparse.csr_matrix((np.ones(n), (np.arange(n), codes[j])), shape=(n, sizes[j]))
            for j in rest
        ]
        Rd = sparse.hstack([*blocks, sparse.csr_matrix(X)], format="csr")
        col_factor = np.concatenate([np.full(sizes[j], j) for j in rest] + [np.zeros(0)])
        Ze = sparse.csr_matrix((np.ones(n), (np.arange(n), codes[e])), shape=(n, sizes[e]))
        Sd = np.asarray((Ze.T @ Rd).todense())
        Sy = np.asarray(Ze.T @ Y.T)  # levels x B
        counts, inv = np.unique(np.bincount(codes[e], minlength=sizes[e]), return_inverse=True)
        B, m = len(Y), Rd.shape[1] + 1
        RtR = np.empty((B, m, m))
        RtR[:, :-1, :-1] = np.asarray((Rd.T @ Rd).todense())
        RtR[:, :-1, -1] = np.asarray(Rd.T @ Y.T).T
        RtR[:, -1, :-1] = RtR[:, :-1, -1]
        RtR[:, -1, -1] = np.einsum("bn,bn->b", Y, Y)
        G = np.empty((B, len(counts), m, m))
        for g in range(len(counts)):
            sd, sy = Sd[inv == g], Sy[inv == g]
            G[:, g, :-1, :-1] = sd.T @ sd
            G[:, g, :-1, -1] = (sd.T @ sy).T
            G[:, g, -1, :-1] = G[:, g, :-1, -1]
            G[:, g, -1, -1] = np.einsum("lb,lb->b", sy, sy)
        return cls(
            n=n,
            p=p,
            e=e,
            k=len(codes),
            counts=counts.astype(float),
            mult=np.bincount(inv, minlength=len(counts)).astype(float),
            col_factor=col_factor.astype(np.intp),
            RtR=RtR,
            G=G,
        )

    @classmethod
    def of_each(
        cls, Y: np.ndarray, X: np.ndarray, codes: Sequence[np.ndarray], keep: np.ndarray
    ) -> _CrossBatch:
        """Build from responses ``Y`` (B x n) that each use their own rows and fixed effects:
        ``keep`` (B x n booleans: the rows response ``b`` uses), ``X`` (B x n x p, or n x p
        shared) and one integer code vector (n) per random intercept, shared. The statistics
        of response ``b`` are those :meth:`of` gives for ``Y[b][keep[b]]``, ``X[b][keep[b]]``
        and the codes' kept rows; ``n`` (B) and ``mult`` (B x counts) are then per response.
        """
        Y = np.atleast_2d(np.asarray(Y, dtype=float))
        B, n = Y.shape
        X = np.asarray(X, dtype=float)
        X = np.broadcast_to(X, (B, *X.shape)) if X.ndim == 2 else X
        p = X.shape[2]
        w = np.asarray(keep, dtype=float)
        codes, sizes, e, rest = _factor_layout(codes, n)
        Zr = np.concatenate([np.eye(sizes[j])[codes[j]] for j in rest], axis=1)
        m = Zr.shape[1] + p + 1
        R = np.empty((B, n, m))
        R[:, :, : Zr.shape[1]] = Zr
        R[:, :, Zr.shape[1] : -1] = X
        R[:, :, -1] = Y
        R *= w[:, :, None]  # a 0/1 weight: R' diag(w) R = (wR)'(wR)
        RtR = np.einsum("bni,bnj->bij", R, R)
        Ze = sparse.csr_matrix((np.ones(n), (np.arange(n), codes[e])), shape=(n, sizes[e]))
        S = np.asarray(Ze.T @ R.transpose(1, 0, 2).reshape(n, B * m)).reshape(sizes[e], B, m)
        per_level = np.asarray(Ze.T @ w.T).T.round().astype(np.intp)  # B x levels
        counts, inv = np.unique(per_level, return_inverse=True)
        onehot = np.zeros((B, sizes[e], len(counts)))
        np.put_along_axis(onehot, inv.reshape(B, sizes[e])[:, :, None], 1.0, axis=2)
        G = np.einsum("lbi,blg,lbj->bgij", S, onehot, S, optimize=True)
        return cls(
            n=w.sum(axis=1),
            p=p,
            e=e,
            k=len(codes),
            counts=counts.astype(float),
            mult=onehot.sum(axis=1),
            col_factor=np.concatenate([np.full(sizes[j], j) for j in rest]).astype(np.intp),
            RtR=RtR,
            G=G,
        )

    def take(self, idx: np.ndarray) -> _CrossBatch:
        """Return the batch restricted to the responses ``idx``."""
        per = np.ndim(self.n) == 1  # per-response n and mult (:meth:`of_each`)
        return _CrossBatch(
            self.n[idx] if per else self.n, self.p, self.e, self.k, self.counts,
            self.mult[idx] if per else self.mult, self.col_factor, self.RtR[idx], self.G[idx],
        )  # fmt: skip


def _batch_criterion(cb: _CrossBatch, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(criterion, gradient, Hessian)`` of :func:`reml_criterion` for every response of
    ``cb`` at relative variances ``phi`` (B x k: ``theta**2``); gradient (B x k) and Hessian
    (B x k x k) in ``phi``. Where the criterion cannot be evaluated it is infinite (its
    derivatives then mean nothing).

    With ``M = R' W_e^-1 R`` (``R = [Z_rest, X, y]``, the eliminated factor's block in closed
    form), ``J = diag(phi of each Z_rest column; 1 for X, y)`` and ``N = J M + I_rest``, the
    matrix ``C`` of :func:`reml_criterion` is ``J^1/2 M J^1/2 + I_rest``, similar to ``N``, so
    the REML deviance is ``log|W_e| + (1 - (n-p)) log|N_A| + (n-p) log|N| + (n-p)(1 +
    log(2 pi / (n-p)))`` (``N_A``: ``N`` without the response's row and column; ``log|N| -
    log|N_A|`` is the log of the residual sum of squares). ``N`` is linear in the ``Z_rest``
    variances and rational in the eliminated one, so its derivatives are exact and smooth
    down to ``phi = 0``: ``d log|N| = tr(N^-1 dN)``, ``d2 log|N| = tr(N^-1 d2N) - tr(N^-1 dN_a
    N^-1 dN_b)``.
    """
    B, m, qr, k, e = len(phi), cb.RtR.shape[1], cb.qr, cb.k, cb.e
    K = len(cb.counts)
    dfr = cb.n - cb.p
    Gf = cb.G.reshape(B, K, m * m)

    def gsum(w: np.ndarray) -> np.ndarray:  # sum_g w[b, g] G[b, g]
        return (w[:, None, :] @ Gf)[:, 0].reshape(B, m, m)

    pe = phi[:, e]
    den = 1.0 + pe[:, None] * cb.counts
    M = cb.RtR - gsum(pe[:, None] / den)
    jd = np.ones((B, m))
    jd[:, :qr] = phi[:, cb.col_factor]
    N = jd[:, :, None] * M
    ar = np.arange(qr)
    N[:, ar, ar] += 1.0
    # One factorisation: N_A^-1, then N^-1 by the block formula with the Schur complement
    # s = |N| / |N_A| (the residual sum of squares).
    s_a, ld_a = np.linalg.slogdet(N[:, :-1, :-1])
    bad = ~(s_a > 0) | ~np.isfinite(ld_a)
    NA = N[:, :-1, :-1].copy()
    NA[bad] = np.eye(m - 1)
    NAi = np.linalg.inv(NA)
    u = NAi @ N[:, :-1, -1:]  # N_A^-1 u
    v = N[:, -1:, :-1] @ NAi  # v' N_A^-1
    s = N[:, -1, -1] - (N[:, -1:, :-1] @ u)[:, 0, 0]
    bad |= ~(s > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (
            (np.log(den) * cb.mult).sum(axis=-1)
            + ld_a
            + dfr * np.log(s)
            + dfr * (1 + np.log(2 * np.pi / dfr))
        )
    f = np.where(bad | ~np.isfinite(f), np.inf, f)
    s = np.where(bad, 1.0, s)
    Ni = np.empty((B, m, m))
    Ni[:, :-1, :-1] = NAi + (u @ v) / s[:, None, None]
    Ni[:, :-1, -1] = -u[:, :, 0] / s[:, None]
    Ni[:, -1, :-1] = -v[:, 0, :] / s[:, None]
    Ni[:, -1, -1] = 1.0 / s
    # First and second derivatives of N in phi (B x k x m x m; B x k x k x m x m).
    dM_e = -gsum(1.0 / den**2)
    dN = np.zeros((B, k, m, m))
    d2N = np.zeros((B, k, k, m, m))
    dN[:, e] = jd[:, :, None] * dM_e
    d2N[:, e, e] = jd[:, :, None] * gsum(2 * cb.counts / den**3)
    for j in range(k):
        if j != e:
            rows = np.flatnonzero(cb.col_factor == j)
            dN[:, j, rows] = M[:, rows]
            d2N[:, j, e, rows] = d2N[:, e, j, rows] = dM_e[:, rows]
    grad = np.zeros((B, k))
    grad[:, e] = (cb.counts / den * cb.mult).sum(axis=-1)
    hess = np.zeros((B, k, k))
    hess[:, e, e] = -(((cb.counts / den) ** 2) * cb.mult).sum(axis=-1)
    for w_, ni, t in ((dfr, Ni, m), (1 - dfr, NAi, m - 1)):
        w = np.broadcast_to(np.asarray(w_, dtype=float), (B,))[:, None]
        P = ni[:, None] @ dN[:, :, :t, :t]
        Pt = P.transpose(0, 1, 3, 2)
        grad += w * np.trace(P, axis1=2, axis2=3)
        hess += w[:, :, None] * (
            (d2N[:, :, :, :t, :t] * ni.transpose(0, 2, 1)[:, None, None]).sum(axis=(3, 4))
            - (P[:, :, None] * Pt[:, None]).sum(axis=(3, 4))
        )
    return f, grad, hess


def _batch_newton(
    cb: _CrossBatch, phi0: np.ndarray, fixed: np.ndarray | None = None, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimise :func:`_batch_criterion` over ``phi >= 0`` for every response from ``phi0``.

    Projected Newton: a variance at 0 whose gradient points outward is held there (the
    Karush-Kuhn-Tucker condition of the bound; a variance in ``fixed``, B x k bool, is held
    at 0 throughout: a boundary face); the others take a Newton step with the Hessian's
    eigenvalues replaced by their absolute values (a descent direction where it is not
    positive definite), each variance moving at most ``10 (phi + 0.1)``, projected on
    ``phi >= 0``. A step of relative size ``s = max |step| / (1 + phi)`` is kept when the
    criterion falls enough (Armijo), else halved; in the quadratic region (``s <= 1e-4``),
    where the criterion's change can be below its rounding (thousands of observations), the
    full step is kept if the criterion does not rise beyond ``1e-9 (1 + |criterion|)`` and the
    projected gradient does not grow. Converged: ``s <= 1e-8`` (Newton's error after such a
    step is of the order of its square), or a step of ``s <= 1e-6`` that cannot be kept (the
    rounding floor). A response whose step cannot be kept otherwise, or that still moves
    after ``max_iter`` steps, is not converged. Returns ``(phi, criterion, converged)``.
    """
    B, k = phi0.shape
    fixed = np.zeros((B, k), dtype=bool) if fixed is None else fixed
    phi = np.where(fixed, 0.0, phi0)
    f, g, H = _batch_criterion(cb, phi)
    done = ~np.isfinite(f)
    conv = np.zeros(B, dtype=bool)
    eye = np.eye(k)
    for _ in range(max_iter):
        idx = np.flatnonzero(~done)
        if not len(idx):
            break
        p_, g_, f_ = phi[idx], g[idx], f[idx]
        free = ~(fixed[idx] | ((p_ <= 0.0) & (g_ >= 0.0)))
        Hr = np.where(free[:, :, None] & free[:, None, :], H[idx], 0.0) + eye * ~free[:, None, :]
        lam, V = np.linalg.eigh(Hr)
        lam = np.abs(lam)
        lam = np.maximum(lam, 1e-8 * lam.max(axis=1, keepdims=True) + 1e-300)
        coef = np.einsum("bji,bj->bi", V, np.where(free, g_, 0.0)) / lam
        step = -np.einsum("bij,bj->bi", V, coef)
        step /= np.maximum(np.max(np.abs(step) / (10.0 * (p_ + 0.1)), axis=1), 1.0)[:, None]
        rel = np.max(np.abs(step) / (1.0 + p_), axis=1)
        near = rel <= 1e-4  # the quadratic region
        alpha = np.ones(len(idx))
        new_p = np.maximum(p_ + step, 0.0)
        new_f, new_g, new_H = _batch_criterion(cb.take(idx), new_p)
        # In the quadratic region the criterion's change can be below its rounding (large n):
        # the full step is kept if the criterion does not rise beyond that and the projected
        # gradient does not grow; elsewhere (and where that fails) Armijo backtracking.
        pg = np.abs(np.where(free, g_, 0.0)).max(axis=1)
        pg_new = np.abs(np.where(free, new_g, 0.0)).max(axis=1)
        tol = 1e-9 * (1.0 + np.abs(f_))
        ok = np.where(near, (new_f <= f_ + tol) & (pg_new <= pg), _armijo(f_, g_, p_, new_f, new_p))
        for _ in range(40):  # backtracking on the projected path
            bad = np.flatnonzero(~ok)
            if not len(bad):
                break
            alpha[bad] /= 2
            new_p[bad] = np.maximum(p_[bad] + alpha[bad, None] * step[bad], 0.0)
            new_f[bad], new_g[bad], new_H[bad] = _batch_criterion(cb.take(idx[bad]), new_p[bad])
            ok[bad] = _armijo(f_[bad], g_[bad], p_[bad], new_f[bad], new_p[bad])
        ok &= np.isfinite(new_f) & (alpha > 2.0**-40)
        upd = idx[ok]
        phi[upd], f[upd], g[upd], H[upd] = new_p[ok], new_f[ok], new_g[ok], new_H[ok]
        # A Newton step of relative size s leaves an error O(s^2): at s <= 1e-8 converged (the
        # step taken or not); a step of at most 1e-6 that cannot be taken is at the rounding
        # floor of the criterion: converged too.
        fin = idx[(rel <= 1e-8) | (~ok & (rel <= 1e-6))]
        conv[fin] = True
        done[fin] = True
        done[idx[~ok]] = True  # no decrease along the step: not converged
    return phi, f, conv


def _armijo(
    f: np.ndarray, g: np.ndarray, p: np.ndarray, f_new: np.ndarray, p_new: np.ndarray
) -> np.ndarray:
    """Return the Armijo test of a projected step ``p -> p_new`` (a sufficient fall of the
    criterion; no rise where the projection makes the first-order change non-negative)."""
    return f_new <= f + 1e-4 * np.minimum(np.einsum("bk,bk->b", g, p_new - p), 0.0)


def _batch_gls(cb: _CrossBatch, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(beta, (X'W^-1X)^-1, sigma^2)`` of every response at relative variances ``phi``
    (B x p, B x p x p, B): the quantities of :func:`reml_criterion`, from the symmetric
    ``C = J^1/2 M J^1/2 + I_rest`` of :func:`_batch_criterion` (the rest block solved, then the
    Schur complement of ``[X, y]``)."""
    B, m, qr, p = len(phi), cb.RtR.shape[1], cb.qr, cb.p
    pe = phi[:, cb.e]
    M = cb.RtR - np.einsum("bg,bgij->bij", pe[:, None] / (1.0 + pe[:, None] * cb.counts), cb.G)
    lam = np.ones((B, m))
    lam[:, :qr] = np.sqrt(phi[:, cb.col_factor])
    C = lam[:, :, None] * M * lam[:, None, :]
    if qr:
        ar = np.arange(qr)
        C[:, ar, ar] += 1.0
        A = np.linalg.solve(C[:, :qr, :qr], C[:, :qr, qr:])
        Cxy = C[:, qr:, qr:] - np.einsum("bri,brj->bij", C[:, :qr, qr:], A)
    else:
        Cxy = C
    xtwx, xtwy, ytwy = Cxy[:, :p, :p], Cxy[:, :p, p], Cxy[:, p, p]
    beta = np.linalg.solve(xtwx, xtwy[:, :, None])[..., 0]
    s2 = (ytwy - np.einsum("bi,bi->b", beta, xtwy)) / (cb.n - p)
    return beta, np.linalg.inv(xtwx), s2


def reml_fit_batch(
    Y: np.ndarray,
    X: np.ndarray,
    codes: Sequence[np.ndarray],
    start: Sequence[float] | None = None,
    keep: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """REML fits of ``y = X beta + sum Z_k u_k + e`` for every response ``y`` (row of ``Y``,
    B x n) with one design: ``X`` and one integer code vector per random intercept.

    The same model and optimum as :func:`reml_fit_arrays`, with the design's share of the
    sufficient statistics computed once (:class:`_CrossBatch`) and the optimisation run for all
    responses at once: projected Newton in the relative variances ``theta**2`` with exact
    derivatives (:func:`_batch_newton`). The starts follow :func:`reml_fit_arrays`: with
    ``start`` (relative SDs) that start, then the boundary faces of the variances whose relative
    SD ends below 0.2 and restarts at 0.3 and 1.0 of one ending at 0; without it the starts 1,
    0.3 and 3 and every face. A candidate replaces the kept one only when its criterion is
    lower by more than 1e-10. Returns ``(beta, cov_beta, variances, loglik, converged)``:
    B x p, B x p x p, B x (k+1) (``var_1, ..., var_k, var_residual``; squared outcome units),
    B (REML log-likelihood on lme4's scale) and B booleans (False: the optimisation stopped
    without converging or the criterion could not be evaluated; the other entries of that
    response are then not to be used).

    ``keep`` (B x n booleans): each response uses only its own rows (the others are as if
    absent: missing observations that differ between responses), and ``X`` may then be B x n
    x p (each response's own fixed effects); the fits are those of the kept rows alone
    (:meth:`_CrossBatch.of_each`).
    """
    if keep is None and np.ndim(X) == 3:
        keep = np.ones(np.shape(X)[:2], dtype=bool)
    cb = _CrossBatch.of(Y, X, codes) if keep is None else _CrossBatch.of_each(Y, X, codes, keep)
    B, k = len(cb.RtR), cb.k
    if start is not None:
        starts = [np.maximum(np.asarray(start, dtype=float), 1e-2)]
    else:
        starts = [np.ones(k), np.full(k, 0.3), np.full(k, 3.0)]
    phi, f, conv = None, np.full(B, np.inf), np.zeros(B, dtype=bool)
    for s in starts:
        p1, f1, c1 = _batch_newton(cb, np.tile(s**2, (B, 1)))
        better = f1 < f - 1e-12 if phi is not None else np.ones(B, dtype=bool)
        phi = p1 if phi is None else np.where(better[:, None], p1, phi)
        f, conv = np.where(better, f1, f), np.where(better, c1, conv)
    assert phi is not None

    def replace(x0: np.ndarray, rows: np.ndarray, fixed: np.ndarray | None = None) -> None:
        if not rows.any():
            return
        sub = np.flatnonzero(rows)
        p1, f1, c1 = _batch_newton(cb.take(sub), x0[sub], None if fixed is None else fixed[sub])
        better = f1 < f[sub] - 1e-10
        phi[sub[better]], f[sub[better]], conv[sub[better]] = p1[better], f1[better], c1[better]

    for j in range(k):  # boundary faces: variance j fixed at zero
        rows = np.ones(B, dtype=bool) if start is None else np.sqrt(phi[:, j]) <= 0.2
        fixed = np.zeros((B, k), dtype=bool)
        fixed[:, j] = True
        replace(np.maximum(phi, 1e-4), rows, fixed)
    for j in range(k):  # restarts off a relative SD that ends at zero
        for push in (0.3, 1.0):
            x0 = np.maximum(phi, 1e-4)
            x0[:, j] = push**2
            replace(x0, np.sqrt(phi[:, j]) <= 1e-4)
    ok = conv & np.isfinite(f)
    beta, xtwx_inv, s2 = _batch_gls(cb, np.where(ok[:, None], phi, 1.0))
    ok &= s2 > 0
    variances = np.column_stack([phi * s2[:, None], s2])
    return beta, s2[:, None, None] * xtwx_inv, variances, -f / 2, ok


@_single_thread_blas
def satterthwaite_df(fit: CrossedFit, contrast: Sequence[float] | str) -> float:
    """Return the Satterthwaite denominator df (unitless) of a fixed-effect contrast.

    ``contrast`` is a term name or a vector over the fixed effects. As in lmerTest:
    ``df = 2 (c' Phi c)^2 / (g' A g)``, where ``Phi = (X' V^-1 X)^-1``, ``g`` its gradient in the
    variance parameters ``theta`` = (participant, puzzle, residual variance) and ``A = 2 H^-1``
    with ``H`` the Hessian of the REML (or ML) deviance at the fit. ``g`` and ``H`` are exact:
    with ``V_i = dV/dtheta_i``, ``P = V^-1 - V^-1 X Phi X' V^-1``, ``g_i = c'Phi X'V^-1 V_i
    V^-1 X Phi c`` and ``H_ij = -tr(Q V_i Q V_j) + 2 y'P V_i P V_j P y`` (``Q = P`` for REML,
    ``V^-1`` for ML), evaluated in the random-effect space (:func:`_variance_derivatives`)
    without any n x n matrix. NaN when a variance is on the boundary (the Hessian is then not
    informative) or the Hessian is singular (e.g. each participant rated one puzzle).
    """
    if fit.exog is None or fit.endog is None:
        raise ValueError("satterthwaite_df needs a fit made by fit_crossed")
    names = list(fit.params.index)
    if isinstance(contrast, str):
        cvec = np.zeros(len(names))
        cvec[names.index(contrast)] = 1.0
    else:
        cvec = np.asarray(contrast, dtype=float)
    if fit.singular:
        return float("nan")
    c = _Cross.of(fit.endog, fit.exog, _codes_of(fit))
    tau = np.array([fit.var_participant, fit.var_puzzle])
    try:
        phi_cc, g, H, _ = _variance_derivatives(c, tau, fit.var_residual, cvec, reml=fit.reml)
        A = 2 * np.linalg.inv(H)
    except np.linalg.LinAlgError:  # e.g. participant and puzzle confounded: H singular
        return float("nan")
    return float(2 * phi_cc**2 / (g @ A @ g))


def _codes_of(fit: CrossedFit) -> list[np.ndarray]:
    if fit.participant_codes is None or fit.puzzle_codes is None:
        raise ValueError("needs a fit made by fit_crossed")
    return [fit.participant_codes, fit.puzzle_codes]


def _variance_derivatives(
    c: _Cross, tau: np.ndarray, s2: float, cvec: np.ndarray, *, reml: bool = True
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(c'Phi c, g, H, grad)`` at variances ``(tau, s2)``: ``g`` and ``H`` of
    :func:`satterthwaite_df`, ``grad`` the gradient of the deviance (``tr(Q V_i) - y'P V_i P
    y``; zero at an interior optimum).

    Order of ``g``/``H``: the factors of ``c`` in their order, then the residual variance.
    With ``D`` the random-effect variances and ``M = Z'Z + s2 D^-1`` (the mixed-model
    equations), ``Z'V^-1Z = D^-1 - s2 D^-1 M^-1 D^-1``, ``Z'V^-1X = D^-1 M^-1 Z'X`` and
    ``Z'Py = D^-1 M^-1 Z'r``; ``M^-1`` comes from the Schur complement of the eliminated
    factor's diagonal block, so every ``Z_k' Q Z_l`` is a diagonal plus a low-rank matrix
    whose traces reduce to ``m x m`` products with the level sums of :class:`_Cross`. Terms in
    the residual variance follow from ``sum_i theta_i V_i = V`` (``Q V Q = Q``): e.g.
    ``tr(Q V_i Q) = (tr(Q V_i) - sum_k theta_k tr(Q V_i Q V_k)) / s2``.
    """
    if c.e is None:
        raise ValueError("needs an intercept factor to eliminate")
    qr, p, n = c.qr, c.p, c.n
    rr, xx, yy = slice(0, qr), slice(qr, qr + p), qr + p
    te = tau[c.e]
    delta = c.counts + s2 / te
    Omega = c.RtR - c.gram(1.0 / delta)
    dr = np.concatenate([np.full(b - a, tau[j]) for j, a, b in c.rest]) if qr else np.zeros(0)
    S = Omega[rr, rr] + np.diag(s2 / dr)
    Si = np.linalg.inv(S)
    Hx, Hy = Omega[rr, xx], Omega[rr, yy]
    Phi = np.linalg.inv((Omega[xx, xx] - Hx.T @ Si @ Hx) / s2)
    beta = Phi @ ((Omega[xx, yy] - Hx.T @ Si @ Hy) / s2)
    Hr = Hy - Hx @ beta
    v = np.append(-beta, 1.0)
    yPy = (v @ Omega[qr:, qr:] @ v - Hr @ Si @ Hr) / s2
    # Participant-side (eliminated) rows are diag(w) s_i' C: coefficient matrices over s_i.
    m = qr + p + 1
    Cl = np.zeros((m, qr + p))
    Cl[rr, :qr] = -np.eye(qr)
    Cl[rr, qr:] = -Si @ Hx
    Cl[xx, qr:] = np.eye(p)
    cr = np.concatenate([-Si @ Hr, -beta, [1.0]])
    phi2 = 1.0 / (te * delta) ** 2
    E_e = 1.0 / te - s2 / (te**2 * delta)
    G_phi2, G_ephi2 = c.gram(phi2), c.gram(E_e * phi2)
    # Per factor: Gram L_k'L_k, L_k'E_k L_k, sum E, sum E^2, L_k'rho_k, sum E rho^2, |rho|^2.
    Lr = np.hstack([np.eye(qr), Si @ Hx]) / dr[:, None] if qr else np.zeros((0, qr + p))
    rho_r = (Si @ Hr) / dr if qr else np.zeros(0)
    order = [c.e] + [j for j, _, _ in c.rest]
    pieces = {
        c.e: (
            Cl.T @ G_phi2 @ Cl,
            Cl.T @ G_ephi2 @ Cl,
            float(c.mult @ E_e),
            float(c.mult @ E_e**2),
            Cl.T @ G_phi2 @ cr,
            float(cr @ G_ephi2 @ cr),
            float(cr @ G_phi2 @ cr),
        )
    }
    for j, a, b in c.rest:
        Lj, rj = Lr[a:b], rho_r[a:b]
        gam = Lj.T @ Lj
        pieces[j] = (
            gam,
            gam / tau[j],
            (b - a) / tau[j],
            (b - a) / tau[j] ** 2,
            Lj.T @ rj,
            float(rj @ rj) / tau[j],
            float(rj @ rj),
        )
    KP = np.zeros((qr + p, qr + p))
    KP[:qr, :qr] = -s2 * Si
    KP[qr:, qr:] = -Phi
    KQ = KP.copy()
    if not reml:
        KQ[qr:, qr:] = 0.0
    k = len(order)
    tr = np.array([pieces[j][2] + np.trace(KQ @ pieces[j][0]) for j in order])
    T = np.zeros((k, k))
    quad = np.zeros((k, k))
    for a_, ja in enumerate(order):
        for b_, jb in enumerate(order):
            T[a_, b_] = np.trace(KQ @ pieces[jb][0] @ KQ @ pieces[ja][0])
            quad[a_, b_] = pieces[ja][4] @ KP @ pieces[jb][4]
            if a_ == b_:
                T[a_, b_] += pieces[ja][3] + 2 * np.trace(KQ @ pieces[ja][1])
                quad[a_, b_] += pieces[ja][5]
    th = tau[order]
    rho2 = np.array([pieces[j][6] for j in order])
    trQ = (n - (p if reml else 0) - th @ tr) / s2
    tQkQ = (tr - T @ th) / s2
    tQQ = (trQ - th @ tQkQ) / s2
    yPPy = (yPy - th @ rho2) / s2
    q_res = (rho2 - quad @ th) / s2
    q_rr = (yPPy - th @ q_res) / s2
    H = np.zeros((k + 1, k + 1))
    H[:k, :k] = -T + 2 * quad
    H[:k, k] = H[k, :k] = -tQkQ + 2 * q_res
    H[k, k] = -tQQ + 2 * q_rr
    # Gradient of c'Phi c: g_i = |Z_i' V^-1 X Phi c|^2; the residual entry by the identity.
    h = Phi @ cvec
    cx = Cl[:, qr:] @ h
    yr = (Si @ Hx @ h) / dr if qr else np.zeros(0)
    g = np.zeros(k + 1)
    g[0] = cx @ G_phi2 @ cx
    for i, (_, a, b) in enumerate(c.rest, start=1):
        g[i] = float(yr[a:b] @ yr[a:b])
    phi_cc = float(cvec @ Phi @ cvec)
    g[k] = (phi_cc - th @ g[:k]) / s2
    # Back to the order of the factors in c (then the residual).
    perm = np.argsort(order)
    idx = np.append(perm, k)
    grad = np.append(tr - rho2, trQ - yPPy)
    return phi_cc, g[idx], H[np.ix_(idx, idx)], grad[idx]


@_single_thread_blas
def satterthwaite_df_batch(
    Y: np.ndarray,
    X: np.ndarray,
    codes: Sequence[np.ndarray],
    variances: np.ndarray,
    contrast: Sequence[float],
    *,
    reml: bool = True,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """Return the Satterthwaite df (unitless) of ``contrast`` for every response of a batched
    fit (:func:`reml_fit_batch`: ``Y`` B x n, one design ``X`` and two intercept factors
    ``codes``, fitted ``variances`` B x 3 = participant, puzzle, residual).

    Per response the same computation as :func:`satterthwaite_df` on a :func:`fit_crossed` fit
    (``tests/stats/test_lmm_bootstrap.py`` checks they agree): NaN when a random-effect variance
    is on the boundary (below 1e-6 of the residual variance) or the Hessian is singular. The
    sufficient statistics of all responses are built in one pass (:class:`_CrossBatch`, the
    layout of :class:`_Cross`); per response only the O(m^3) derivative algebra remains.
    ``keep`` (B x n booleans) and ``X`` of B x n x p: each response's own rows and fixed
    effects, as :func:`reml_fit_batch` takes them.
    """
    import dataclasses

    cvec = np.asarray(contrast, dtype=float)
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    out = np.full(len(Y), np.nan)
    each = keep is not None or np.ndim(X) == 3  # per-response rows or fixed effects
    if each:  # per-response rows and fixed effects: the statistics of each, in one pass
        keep = np.ones(Y.shape, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
        Xb = np.broadcast_to(np.asarray(X, dtype=float), (len(Y), *np.shape(X)[-2:]))
        base = _Cross.of(Y[0], Xb[0], codes)  # the layout (all rows: the same levels)
        cb = _CrossBatch.of_each(Y, Xb, codes, keep)
    else:
        base = _Cross.of(Y[0], X, codes)
        cb = _CrossBatch.of(Y, X, codes)  # the same statistics, per response, in one pass
    for b in range(len(Y)):
        v = variances[b]
        if not np.all(np.isfinite(v)) or min(v[0], v[1]) < 1e-6 * max(v[2], 1e-300):
            continue
        if each:
            c = dataclasses.replace(
                base,
                n=int(cb.n[b]),
                counts=cb.counts,
                mult=cb.mult[b],
                RtR=cb.RtR[b],
                G=cb.G[b],
            )
        else:
            c = dataclasses.replace(base, RtR=cb.RtR[b], G=cb.G[b])
        try:
            phi_cc, g, H, _ = _variance_derivatives(c, v[:2], v[2], cvec, reml=reml)
            A = 2 * np.linalg.inv(H)
        except np.linalg.LinAlgError:
            continue
        out[b] = 2 * phi_cc**2 / (g @ A @ g)
    return out
