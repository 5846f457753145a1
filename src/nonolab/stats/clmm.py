"""Cumulative-link mixed model (CLMM): ordinal logit regression with random intercepts.

The model of R's ``ordinal::clmm(factor(y) ~ x + (1|g1) + (1|g2), link = "logit")``::

    logit P(Y_i <= j) = theta_j - x_i' beta - sum_g sigma_g u_g[i],   u_g ~ N(0, 1)

with flexible (increasing) thresholds ``theta_j``, fitted by maximum likelihood under the Laplace
approximation (clmm's default for crossed random effects). No Python library fits this model
(statsmodels' ``OrderedModel`` has no random effects), so it is implemented here on numpy/scipy:

* for given outer parameters the conditional mode of the spherical random effects ``u`` is found
  by Newton's method with step halving; the Hessian ``H = I + Lambda Z' W Z Lambda`` (``W`` the
  observed information of each rating in its linear predictor) is factored densely for up to
  :data:`DENSE_MAX` random effects and, above that, by the Schur complement of the (diagonal)
  block of the first grouping factor;
* the Laplace log-likelihood is ``sum_i log p(y_i | u) - |u|^2 / 2 - log det(H) / 2``;
* the outer parameters (first threshold and log threshold increments, fixed effects, log SDs)
  are optimised by BFGS from the fixed-effects fit of statsmodels' ``OrderedModel`` and polished by
  Newton steps on the numerical Hessian;
* standard errors come from the numerical Hessian of the Laplace log-likelihood in the thresholds,
  fixed effects and log SDs (as clmm does; a variance on its zero boundary is left out).

Cross-checked against ``ordinal::clmm`` in ``tests/stats/test_clmm_r.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy
from scipy import linalg, optimize, stats
from scipy.special import expit
from statsmodels.miscmodels.ordinal_model import OrderedModel
from statsmodels.tools.numdiff import approx_fprime, approx_hess3
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from nonolab.stats.correlations import bh_fdr
from nonolab.stats.lmm import _single_thread_blas

__all__ = [
    "DENSE_MAX",
    "ClmmFit",
    "ClmmProblem",
    "fit_clmm",
    "lrt",
    "moderation_ordinal",
]

#: Up to this many random effects the conditional-mode Hessian is factored as a dense matrix.
DENSE_MAX = 500
#: A random-effect SD below this (logit units) is on its zero boundary.
SD_BOUNDARY = 1e-4
_INNER_TOL = 1e-20


def _logistic_parts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (F, f, f') of the standard logistic distribution at ``a`` (inf allowed)."""
    cdf = expit(a)
    dens = cdf * (1.0 - cdf)
    return cdf, dens, dens * (1.0 - 2.0 * cdf)


@dataclass
class ClmmProblem:
    """The data of one CLMM: category codes ``y`` (0..J-1), fixed-effect design ``x`` (no
    intercept), and one integer level code per grouping factor (``groups``, each n long).

    :meth:`laplace` evaluates the Laplace log-likelihood at given thresholds, coefficients and SDs.
    """

    y: np.ndarray
    x: np.ndarray
    groups: list[np.ndarray]
    n_levels: int
    dense_max: int = DENSE_MAX
    _u: np.ndarray = field(default=None, repr=False)  # warm start of the conditional mode

    def __post_init__(self) -> None:
        self.sizes = [int(g.max()) + 1 for g in self.groups]
        self.q = int(sum(self.sizes))
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self._u = np.zeros(self.q)

    def _log_p(self, theta: np.ndarray, eta: np.ndarray, derivs: bool):
        """Return log p_i (and the first/second derivatives of -log p_i in eta_i)."""
        ext = np.concatenate([[-np.inf], theta, [np.inf]])
        a, b = ext[self.y + 1] - eta, ext[self.y] - eta
        fa, da, ga = _logistic_parts(a)
        fb, db, gb = _logistic_parts(b)
        # upper tail where both CDFs are near 1 (as clmm does)
        p = np.where(b > 0, expit(-b) - expit(-a), fa - fb)
        with np.errstate(divide="ignore"):
            logp = np.log(p)
        if not derivs:
            return logp
        s = (da - db) / p
        return logp, s, s * s - (ga - gb) / p

    def _zt(self, v: np.ndarray) -> np.ndarray:
        """Return Z' v (sums of ``v`` per level, grouping factors stacked)."""
        return np.concatenate(
            [
                np.bincount(g, weights=v, minlength=k)
                for g, k in zip(self.groups, self.sizes, strict=True)
            ]
        )

    def _z(self, u: np.ndarray) -> np.ndarray:
        return sum(u[o + g] for g, o in zip(self.groups, self.offsets[:-1], strict=True))

    def _crossprod(self, w: np.ndarray, first: int) -> np.ndarray:
        """Return Z' W Z restricted to the grouping factors ``first``, ... (dense; random
        intercepts only, so each factor's own block is diagonal)."""
        sizes = self.sizes[first:]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        out = np.zeros((off[-1], off[-1]))
        for a, (ga, ka) in enumerate(zip(self.groups[first:], sizes, strict=True)):
            sl = slice(off[a], off[a + 1])
            out[sl, sl] = np.diag(np.bincount(ga, weights=w, minlength=ka))
            for b in range(a + 1, len(sizes)):
                gb, kb = self.groups[first + b], sizes[b]
                blk = np.bincount(ga * kb + gb, weights=w, minlength=ka * kb).reshape(ka, kb)
                out[sl, off[b] : off[b + 1]] = blk
                out[off[b] : off[b + 1], sl] = blk.T
        return out

    def _hessian_factor(self, lam: np.ndarray, w: np.ndarray):
        """Return (solve, logdet) of H = I + Lambda Z' W Z Lambda: dense up to ``dense_max``
        random effects, else by the Schur complement of the first factor's diagonal block."""
        k = self.sizes[0] if self.q > self.dense_max and len(self.groups) > 1 else 0
        c = self._crossprod(w, 1 if k else 0)
        c = lam[k:, None] * c * lam[None, k:] + np.eye(self.q - k)
        if k == 0:
            cf = linalg.cho_factor(c, lower=True)
            return (lambda r: linalg.cho_solve(cf, r)), 2.0 * np.log(np.diag(cf[0])).sum()
        g0 = self.groups[0]
        d = 1.0 + lam[:k] ** 2 * np.bincount(g0, weights=w, minlength=k)
        b = np.hstack(
            [
                np.bincount(g0 * kb + gb, weights=w, minlength=k * kb).reshape(k, kb)
                for gb, kb in zip(self.groups[1:], self.sizes[1:], strict=True)
            ]
        )
        b = lam[:k, None] * b * lam[None, k:]
        s = linalg.cho_factor(c - b.T @ (b / d[:, None]), lower=True)

        def solve(r: np.ndarray) -> np.ndarray:
            r1, r2 = r[:k], r[k:]
            x2 = linalg.cho_solve(s, r2 - b.T @ (r1 / d))
            return np.concatenate([(r1 - b @ x2) / d, x2])

        return solve, np.log(d).sum() + 2.0 * np.log(np.diag(s[0])).sum()

    def laplace(self, theta: np.ndarray, beta: np.ndarray, sd: np.ndarray) -> float:
        """Return the Laplace log-likelihood (natural log) at thresholds ``theta`` (increasing),
        fixed effects ``beta`` and random-effect SDs ``sd`` (logit units), or -inf."""
        if np.any(np.diff(theta) <= 0):
            return -np.inf
        eta0 = self.x @ beta
        if self.q == 0:
            return float(self._log_p(theta, eta0, False).sum())
        lam = np.repeat(np.asarray(sd, dtype=float), self.sizes)
        u = self._u.copy()
        obj = -np.inf
        for _ in range(200):
            logp, s, w = self._log_p(theta, eta0 + self._z(lam * u), True)
            obj = logp.sum() - 0.5 * u @ u
            if not np.isfinite(obj):
                if not u.any():
                    return -np.inf
                u = np.zeros(self.q)  # restart from zero (a warm start far off)
                continue
            grad = lam * self._zt(s) + u  # gradient of -obj
            solve, logdet = self._hessian_factor(lam, w)
            step, t = solve(grad), 1.0
            decrement = grad @ step  # squared Newton decrement
            if decrement < _INNER_TOL:
                break
            if decrement < 1e-8:  # quadratic convergence: full steps, rounding-level changes
                u = u - step
                continue
            while t > 1e-10:
                un = u - t * step
                val = self._log_p(theta, eta0 + self._z(lam * un), False).sum() - 0.5 * un @ un
                if np.isfinite(val) and val >= obj:
                    break
                t /= 2
            else:
                break  # no ascent along the Newton direction: at the mode to rounding
            u = un
        self._u = u
        return float(obj - 0.5 * logdet)


@dataclass(frozen=True)
class ClmmFit:
    """A fitted CLMM. ``thresholds`` (index ``"1|2"`` ...) and ``params`` (fixed effects) in
    log-odds; ``bse`` their standard errors; ``cov_params`` their covariance; ``sd`` the
    random-effect SDs (logit units) per grouping column; ``llf`` the Laplace log-likelihood."""

    thresholds: pd.Series
    params: pd.Series
    bse: pd.Series
    cov_params: pd.DataFrame
    sd: pd.Series
    llf: float
    n: int
    n_groups: dict[str, int]
    converged: bool
    message: str

    def wald(self, term: str) -> dict[str, float]:
        """Return ``coef``, ``se``, ``z`` and two-sided normal ``p`` of a fixed effect."""
        b, se = float(self.params[term]), float(self.bse[term])
        z = b / se if se > 0 else float("nan")
        return {"coef": b, "se": se, "z": z, "p": float(2 * stats.norm.sf(abs(z)))}


@_single_thread_blas
def fit_clmm(
    data: pd.DataFrame,
    formula: str,
    groups: Sequence[str] = ("participant_id", "puzzle_hash"),
    *,
    dense_max: int = DENSE_MAX,
) -> ClmmFit:
    """Fit ``factor(y) ~ rhs + (1|g) for g in groups`` as a logit CLMM (Laplace); return
    :class:`ClmmFit`.

    ``formula``: ``"y ~ rhs"`` in patsy syntax (numeric ``y``; its observed distinct values are
    the ordered categories); rows with a missing value are dropped. Columns of the fixed-effect
    design are scaled to unit SD for the optimisation and the estimates scaled back.
    ``groups=()`` fits the plain cumulative-link model.
    """
    lhs, rhs = (s.strip() for s in formula.split("~", 1))
    d = data.dropna(subset=[lhs, *groups])
    xdf = patsy.dmatrix(f"0 + {rhs}", d, return_type="dataframe", NA_action="drop")
    d = d.loc[xdf.index]
    levels = np.sort(d[lhs].unique())
    if len(levels) < 2:
        raise ValueError(f"fit_clmm: {lhs} has fewer than two observed categories")
    y = np.searchsorted(levels, d[lhs].to_numpy())
    scale = xdf.std(ddof=0).to_numpy()
    if np.any(scale == 0):
        raise ValueError("fit_clmm: a fixed-effect column is constant")
    xs = xdf.to_numpy() / scale
    codes = [pd.factorize(d[g], sort=True)[0] for g in groups]
    prob = ClmmProblem(y, xs, codes, len(levels), dense_max=dense_max)
    nt, nb, ng = len(levels) - 1, xs.shape[1], len(groups)

    # start: the fixed-effects cumulative logit fit (beta, then theta_1 and log increments)
    with warnings.catch_warnings():  # only a start: BFGS's precision-loss notice is moot
        warnings.simplefilter("ignore", ConvergenceWarning)
        om = OrderedModel(y, xs, distr="logit").fit(method="bfgs", disp=False, maxiter=1000)
    start = np.concatenate([om.params[nb:], om.params[:nb], np.zeros(ng)])

    def unpack(phi: np.ndarray):
        theta = np.cumsum(np.concatenate([phi[:1], np.exp(phi[1:nt])]))
        return theta, phi[nt : nt + nb], np.exp(phi[nt + nb :])

    def negll(phi: np.ndarray) -> float:
        v = -prob.laplace(*unpack(phi))
        return v if np.isfinite(v) else 1e300

    res = optimize.minimize(negll, start, method="BFGS", jac="3-point", options={"gtol": 1e-7})
    phi, message = res.x, str(res.message)
    # Newton polish on the parameters off the boundary
    free = np.ones(len(phi), bool)
    free[nt + nb :] = np.exp(phi[nt + nb :]) >= SD_BOUNDARY
    for _ in range(10):
        g = approx_fprime(phi, negll, centered=True)[free]
        h = approx_hess3(phi, negll, epsilon=_steps(phi))[np.ix_(free, free)]
        if np.any(np.linalg.eigvalsh(h) <= 0):
            break
        step = np.linalg.solve(h, g)
        if g @ step < 1e-12:  # squared Newton decrement: the optimum to rounding
            break
        t, f0 = 1.0, negll(phi)
        while t > 1e-4:
            trial = phi.copy()
            trial[free] -= t * step
            if negll(trial) <= f0:
                phi = trial
                break
            t /= 2
        else:
            break
    gmax = float(np.max(np.abs(approx_fprime(phi, negll, centered=True)[free])))
    theta, bs, sd = unpack(phi)
    llf = -negll(phi)

    # covariance in (theta, beta, sd) as clmm, the SDs on their zero boundary left out
    on = np.ones(nt + nb + ng, bool)
    on[nt + nb :] = sd >= SD_BOUNDARY
    psi = np.concatenate([theta, bs, sd])

    def negll_psi(p: np.ndarray) -> float:
        full = psi.copy()
        full[on] = p
        v = -prob.laplace(full[:nt], full[nt : nt + nb], full[nt + nb :])
        return v if np.isfinite(v) else 1e300

    hess = approx_hess3(psi[on], negll_psi, epsilon=_steps(psi[on]))
    cov = np.linalg.inv(hess)[: nt + nb, : nt + nb]
    back = np.concatenate([np.ones(nt), 1.0 / scale])
    cov = cov * back[:, None] * back[None, :]
    names_t = [f"{_fmt(a)}|{_fmt(b)}" for a, b in zip(levels[:-1], levels[1:], strict=True)]
    names = names_t + list(xdf.columns)
    se = np.sqrt(np.diag(cov))
    converged = bool(gmax < 1e-4 and np.all(np.linalg.eigvalsh(hess) > 0))
    return ClmmFit(
        thresholds=pd.Series(theta, index=names_t),
        params=pd.Series(bs / scale, index=list(xdf.columns)),
        bse=pd.Series(se, index=names),
        cov_params=pd.DataFrame(cov, index=names, columns=names),
        sd=pd.Series(sd, index=list(groups)),
        llf=float(llf),
        n=len(y),
        n_groups={g: int(c.max()) + 1 for g, c in zip(groups, codes, strict=True)},
        converged=converged,
        message=f"{message}; max|gradient| {gmax:.1e}",
    )


def _steps(x: np.ndarray) -> np.ndarray:
    """Finite-difference steps of the numerical Hessians: 1e-3 of each parameter (at least
    1e-4): well above the rounding noise of the Laplace log-likelihood, and the O(h^2)
    truncation error stays below 1e-5 relative on these smooth functions."""
    return 1e-3 * np.maximum(np.abs(x), 0.1)


def _fmt(v: float) -> str:
    return f"{v:g}"


def lrt(full: ClmmFit, reduced: ClmmFit, df: int = 1) -> tuple[float, float]:
    """Return (chi2, p) of the likelihood-ratio test of ``reduced`` nested in ``full`` (Laplace
    log-likelihoods; chi2 with ``df`` degrees of freedom; a negative statistic counts as 0)."""
    chi2 = max(0.0, 2.0 * (full.llf - reduced.llf))
    return chi2, float(stats.chi2.sf(chi2, df))


def moderation_ordinal(
    attempts: pd.DataFrame,
    covariates: pd.DataFrame,
    *,
    outcome: str = "final_difficulty",
    moderator: str = "expertise_composite",
    metrics: Sequence[str] = ("decisions", "propagations", "conflicts"),
    groups: Sequence[str] = ("participant_id", "puzzle_hash"),
) -> pd.DataFrame:
    """Return the ordinal moderation table: one row per metric of the logit CLMM
    ``factor(outcome) ~ metric * moderator + (1|participant) + (1|puzzle)`` (Laplace).

    ``covariates``: puzzle-level metric covariates (``puzzle_hash`` + metric columns, e.g.
    :func:`nonolab.stats.mixed_models.metric_covariates`). Columns: ``term`` (the interaction),
    ``coef``/``se`` (log-odds of a higher rating per covariate unit x moderator unit), Wald
    ``z``/``p``, ``p_fdr`` (Benjamini-Hochberg over the metrics), ``lrt_chi2``/``lrt_p``
    (likelihood-ratio test against the model without the interaction, 1 df), the thresholds
    ``threshold_<j>_<j+1>`` (logit P(Y <= j) at a zero linear predictor), ``sd_<group>``
    (random-intercept SDs, logit units), Laplace ``llf``, ``n``, ``n_<group>``, ``converged``,
    ``warnings``. A model that cannot be fitted gives NaN estimates and its reason in
    ``warnings``.
    """
    d = attempts.merge(covariates, on=groups[-1], how="left", validate="many_to_one")
    rows = []
    for m in metrics:
        term = f"{m}:{moderator}"
        row: dict[str, object] = {"metric": m, "term": term}
        used = d.dropna(subset=[outcome, m, moderator, *groups])
        try:
            full = fit_clmm(used, f"{outcome} ~ {m} * {moderator}", groups)
            reduced = fit_clmm(used, f"{outcome} ~ {m} + {moderator}", groups)
        except (ValueError, np.linalg.LinAlgError) as e:
            nan = float("nan")
            row |= dict.fromkeys(("coef", "se", "z", "p", "lrt_chi2", "lrt_p", "llf"), nan)
            row |= {"n": len(used), "converged": False, "warnings": f"not fitted: {e}"}
            rows.append(row)
            continue
        row |= full.wald(term)
        row["lrt_chi2"], row["lrt_p"] = lrt(full, reduced)
        for name, v in full.thresholds.items():
            row["threshold_" + name.replace("|", "_")] = float(v)
        for g, v in full.sd.items():
            row[f"sd_{g.removesuffix('_id').removesuffix('_hash')}"] = float(v)
        row["llf"] = full.llf
        row["n"] = full.n
        for g, k in full.n_groups.items():
            row[f"n_{g.removesuffix('_id').removesuffix('_hash')}s"] = k
        row["converged"] = full.converged and reduced.converged
        notes = [] if row["converged"] else [full.message, reduced.message]
        notes += [f"{g} SD on its zero boundary" for g, v in full.sd.items() if v < SD_BOUNDARY]
        row["warnings"] = "; ".join(notes)
        rows.append(row)
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p") + 1, "p_fdr", bh_fdr(out["p"]))
    return out
