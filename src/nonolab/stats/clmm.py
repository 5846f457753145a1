"""Cumulative-link mixed model (CLMM): ordinal logit regression with random intercepts.

The model of R's ``ordinal::clmm(factor(y) ~ x + (1|g1) + (1|g2), link = "logit")``::

    logit P(Y_i <= j) = theta_j - x_i' beta - sum_g sigma_g u_g[i],   u_g ~ N(0, 1)

with flexible (increasing) thresholds ``theta_j``, fitted by maximum likelihood under the Laplace
approximation (clmm's default for crossed random effects). No Python library fits this model
(statsmodels' ``OrderedModel`` has no random effects), so it is implemented here on numpy/scipy:

* for given outer parameters the conditional mode of the spherical random effects ``u`` is found
  by Newton's method with step halving, for many parameter points at once
  (:meth:`ClmmProblem.laplace_many`: every point of a finite-difference gradient or Hessian in one
  vectorised call); the Hessian ``H = I + Lambda Z' W Z Lambda`` (``W`` the observed information
  of each rating in its linear predictor) is factored by the Schur complement of the (diagonal)
  block of the largest grouping factor (densely when ``dense_max`` is at least the number of
  random effects: a check of the Schur route);
* the Laplace log-likelihood is ``sum_i log p(y_i | u) - |u|^2 / 2 - log det(H) / 2`` at the mode
  to rounding (a last full Newton step after convergence);
* the outer parameters (first threshold and log threshold increments, fixed effects, log SDs)
  are optimised by BFGS (the exact gradient of the Laplace likelihood,
  :meth:`ClmmProblem.laplace_gradient`, up to :data:`GRADIENT_DENSE_MAX` random effects; central
  differences above) from the fixed-effects cumulative logit fit
  (the same likelihood without random effects, from the marginal thresholds) and polished by
  Newton steps on the numerical Hessian;
* standard errors come from the numerical Hessian of the Laplace log-likelihood in the thresholds,
  fixed effects and log SDs (as clmm does; a variance on its zero boundary is left out).

Cross-checked against ``ordinal::clmm`` in ``tests/stats/test_clmm_r.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy
from scipy import optimize, sparse, stats
from scipy.special import expit

from nonolab.stats.correlations import bh_fdr
from nonolab.stats.lmm import _single_thread_blas

__all__ = [
    "BATCH_ELEMENTS",
    "DENSE_MAX",
    "GRADIENT_DENSE_MAX",
    "ClmmFit",
    "ClmmProblem",
    "fit_clmm",
    "lrt",
    "moderation_ordinal",
]

#: Up to this many random effects the conditional-mode Hessian is factored as a dense matrix
#: (0: always by the Schur complement, which is exact and cheaper; a larger value checks it).
DENSE_MAX = 0
#: :meth:`ClmmProblem.laplace_many` evaluates at most this many array elements (points x ratings,
#: or points x random effects) at once: about 40 MB per working array.
BATCH_ELEMENTS = 5_000_000
#: Up to this many random effects BFGS uses the exact gradient of the Laplace likelihood
#: (:meth:`ClmmProblem.laplace_gradient`, a dense inverse of the mode's Hessian); above it, central
#: differences of :meth:`ClmmProblem.laplace_many`.
GRADIENT_DENSE_MAX = 2000
#: A random-effect SD below this (logit units) is on its zero boundary.
SD_BOUNDARY = 1e-4
#: The conditional mode is converged when the squared Newton decrement is below _INNER_TOL; the
#: likelihood is then evaluated after one more full Newton step (the mode to rounding: the
#: log-determinant is first-order in the mode's error, and the finite-difference Hessians of the
#: standard errors divide its rounding by 4 h_i h_j ~ 4e-8), unless the decrement is already at
#: the rounding floor (_FLOOR_TOL).
_INNER_TOL = 1e-20
_FLOOR_TOL = 1e-30


def _logistic_parts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (F, f, f') of the standard logistic distribution at ``a`` (inf allowed)."""
    cdf = expit(a)
    dens = cdf * (1.0 - cdf)
    return cdf, dens, dens * (1.0 - 2.0 * cdf)


@dataclass
class ClmmProblem:
    """The data of one CLMM: category codes ``y`` (0..J-1), fixed-effect design ``x`` (no
    intercept), and one integer level code per grouping factor (``groups``, each n long).

    :meth:`laplace` evaluates the Laplace log-likelihood at given thresholds, coefficients and
    SDs; :meth:`laplace_many` at many parameter points at once (the inner Newton iterations of
    all points vectorised: one call for all the points of a finite-difference gradient or
    Hessian).
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
        n = len(self.y)
        rows = np.arange(n)
        # Z (n x q, one indicator column per level, factors stacked) and Z' as sparse matrices
        cols = np.concatenate(
            [o + g for g, o in zip(self.groups, self.offsets, strict=False)] or [np.zeros(0, int)]
        )
        self._zmat = sparse.csr_matrix(
            (np.ones(len(cols)), (np.tile(rows, len(self.groups)), cols)), shape=(n, self.q)
        )
        self._ztmat = self._zmat.T.tocsr()
        # the factor eliminated by the Schur complement (the largest; its own block of
        # Z'WZ is diagonal) and the rest, kept dense; dense throughout up to dense_max
        self._elim = int(np.argmax(self.sizes)) if self.q > self.dense_max and self.groups else -1
        rest = [i for i in range(len(self.groups)) if i != self._elim]
        self._rest_idx = np.concatenate(
            [np.arange(self.offsets[i], self.offsets[i + 1]) for i in rest] or [np.zeros(0, int)]
        )
        self._elim_idx = (
            np.arange(self.offsets[self._elim], self.offsets[self._elim + 1])
            if self._elim >= 0
            else np.zeros(0, int)
        )
        # (P_ab)' for the cross blocks of Z'WZ: w @ P_ab is the k_a x k_b block, flattened
        self._pairs = {}
        for a in range(len(self.groups)):
            for b in range(a + 1, len(self.groups)):
                ka, kb = self.sizes[a], self.sizes[b]
                code = self.groups[a] * kb + self.groups[b]
                self._pairs[a, b] = sparse.csr_matrix(
                    (np.ones(n), (code, rows)), shape=(ka * kb, n)
                )

    def _log_p(self, theta: np.ndarray, eta: np.ndarray, derivs: bool):
        """Return log p_i (and the first/second derivatives of -log p_i in eta_i): ``theta``
        (K, J-1) and ``eta`` (K, n) for K parameter points (or 1-d for one)."""
        theta = np.atleast_2d(theta)
        inf = np.full((theta.shape[0], 1), np.inf)
        ext = np.concatenate([-inf, theta, inf], axis=1)
        a, b = ext[:, self.y + 1] - eta, ext[:, self.y] - eta
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
        """Return Z' v per row of ``v`` (K, n): sums per level, grouping factors stacked."""
        return (self._ztmat @ v.T).T

    def _z(self, u: np.ndarray) -> np.ndarray:
        """Return Z u per row of ``u`` (K, q)."""
        return (self._zmat @ u.T).T

    def _cross(self, w: np.ndarray, a: int, b: int) -> np.ndarray:
        """Return the (K, k_a, k_b) blocks of Z_a' W Z_b (a < b) for the rows of ``w``."""
        return (self._pairs[a, b] @ w.T).T.reshape(len(w), self.sizes[a], self.sizes[b])

    def _block(self, w: np.ndarray, lam: np.ndarray, factors: list[int]) -> np.ndarray:
        """Return I + Lambda Z'WZ Lambda restricted to ``factors`` (K, r, r), dense."""
        sizes = [self.sizes[i] for i in factors]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        k = len(w)
        out = np.zeros((k, off[-1], off[-1]))
        diag = self._zt(w)
        for a, fa in enumerate(factors):
            sl = slice(off[a], off[a + 1])
            d = diag[:, self.offsets[fa] : self.offsets[fa + 1]]
            idx = np.arange(off[a], off[a + 1])
            out[:, idx, idx] = d
            for b in range(a + 1, len(factors)):
                fb = factors[b]
                blk = self._cross(w, fa, fb) if fa < fb else self._cross(w, fb, fa).swapaxes(1, 2)
                out[:, sl, off[b] : off[b + 1]] = blk
                out[:, off[b] : off[b + 1], sl] = blk.swapaxes(1, 2)
        idx = np.concatenate([np.arange(self.offsets[f], self.offsets[f + 1]) for f in factors])
        lr = lam[:, idx]
        out = lr[:, :, None] * out * lr[:, None, :]
        out[:, np.arange(off[-1]), np.arange(off[-1])] += 1.0
        return out

    def _hessian_factor(self, lam: np.ndarray, w: np.ndarray):
        """Return (solve, logdet) of H = I + Lambda Z' W Z Lambda for each row of ``lam``
        (K, q) and ``w`` (K, n): dense up to ``dense_max`` random effects, else by the Schur
        complement of the largest factor's (diagonal) block."""
        e = self._elim
        if e < 0:
            h = self._block(w, lam, list(range(len(self.groups))))
            chol = np.linalg.cholesky(h)
            logdet = 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(axis=1)
            return (lambda r: np.linalg.solve(h, r[..., None])[..., 0]), logdet
        rest = [i for i in range(len(self.groups)) if i != e]
        le, lr = lam[:, self._elim_idx], lam[:, self._rest_idx]
        d = 1.0 + le**2 * self._zt(w)[:, self._elim_idx]
        if not rest:
            return (lambda r: r / d), np.log(d).sum(axis=1)
        b = np.concatenate(
            [self._cross(w, e, f) if e < f else self._cross(w, f, e).swapaxes(1, 2) for f in rest],
            axis=2,
        )
        b = le[:, :, None] * b * lr[:, None, :]
        s = self._block(w, lam, rest) - np.einsum("kir,kis->krs", b, b / d[:, :, None])
        chol = np.linalg.cholesky(s)
        logdet = np.log(d).sum(axis=1) + 2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(
            axis=1
        )
        ei, ri = self._elim_idx, self._rest_idx

        def solve(r: np.ndarray) -> np.ndarray:
            r1, r2 = r[:, ei], r[:, ri]
            x2 = np.linalg.solve(s, (r2 - np.einsum("kir,ki->kr", b, r1 / d))[..., None])[..., 0]
            out = np.empty_like(r)
            out[:, ei] = (r1 - np.einsum("kir,kr->ki", b, x2)) / d
            out[:, ri] = x2
            return out

        return solve, logdet

    def laplace_gradient(
        self, theta: np.ndarray, beta: np.ndarray, sd: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """Return the Laplace log-likelihood and its exact gradient in (thresholds, fixed
        effects, SDs) at one point (all SDs positive): the implicit derivative through the
        conditional mode included (for ``log det H``; the joint is stationary there). The
        gradient is NaN where the likelihood is undefined."""
        theta, beta, sd = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (theta, beta, sd))
        nt, nb, ng = len(theta), len(beta), len(sd)
        val = self.laplace(theta, beta, sd)
        if not np.isfinite(val):
            return val, np.full(nt + nb + ng, np.nan)
        u, y = self._u, self.y
        lam = np.repeat(sd, self.sizes)
        eta = self.x @ beta + self._z((lam * u)[None])[0]
        ext = np.concatenate([[-np.inf], theta, [np.inf]])
        a, b = ext[y + 1] - eta, ext[y] - eta
        fa, da, ga = _logistic_parts(a)
        fb, db, gb = _logistic_parts(b)
        ha, hb = (
            da * (1.0 - 2.0 * fa) ** 2 - 2.0 * da * da,
            db * (1.0 - 2.0 * fb) ** 2 - 2.0 * db * db,
        )
        p = np.where(b > 0, expit(-b) - expit(-a), fa - fb)
        s, r = (da - db) / p, (ga - gb) / p
        w = s * s - r
        dw_eta = 2.0 * s * w + (ha - hb) / p - s * r
        # derivatives in the upper (a) and lower (b) threshold of each rating
        ds_up, ds_lo = ga / p - s * da / p, -gb / p + s * db / p
        dr_up, dr_lo = ha / p - r * da / p, -hb / p + r * db / p
        dw_up, dw_lo = 2.0 * s * ds_up - dr_up, 2.0 * s * ds_lo - dr_lo
        n, npar = len(y), nt + nb + ng
        up = np.zeros((n, nt))  # indicator of the rating's upper / lower threshold
        lo = np.zeros((n, nt))
        iu, il = np.flatnonzero(y < nt), np.flatnonzero(y >= 1)
        up[iu, y[iu]] = 1.0
        lo[il, y[il] - 1] = 1.0
        # direct derivatives (the mode held fixed)
        deta = np.zeros((n, npar))
        deta[:, nt : nt + nb] = self.x
        for g, (grp, o) in enumerate(zip(self.groups, self.offsets, strict=False)):
            deta[:, nt + nb + g] = u[o + grp]
        ds = w[:, None] * deta
        ds[:, :nt] += ds_up[:, None] * up + ds_lo[:, None] * lo
        dgrad = lam[:, None] * (self._ztmat @ ds)  # d(Lambda Z' s)/d psi, q x npar
        zts = self._zt(s[None])[0]
        for g in range(ng):
            sl = slice(self.offsets[g], self.offsets[g + 1])
            dgrad[sl, nt + nb + g] += zts[sl]
        h = self._block(w[None], lam[None], list(range(len(self.groups))))[0]
        hinv = np.linalg.inv(h)
        du = -hinv @ dgrad
        zl = self._zmat.multiply(lam[None, :]).tocsr()  # Z Lambda
        deta_tot = deta + zl @ du
        dw = dw_eta[:, None] * deta_tot
        dw[:, :nt] += dw_up[:, None] * up + dw_lo[:, None] * lo
        zh = np.asarray(zl @ hinv)
        c = np.asarray(zl.multiply(zh).sum(axis=1)).ravel()  # diag of Z Lambda H^-1 Lambda Z'
        dlogdet = c @ dw
        dh = np.concatenate(
            [
                (da / p) @ up - (db / p) @ lo,
                -self.x.T @ s,
                [-(s * deta[:, nt + nb + g]).sum() for g in range(ng)],
            ]
        )
        dhinv = 1.0 - np.diag(hinv)
        for g in range(ng):
            dlogdet[nt + nb + g] += 2.0 * dhinv[self.offsets[g] : self.offsets[g + 1]].sum() / sd[g]
        return val, dh - 0.5 * dlogdet

    def laplace(self, theta: np.ndarray, beta: np.ndarray, sd: np.ndarray) -> float:
        """Return the Laplace log-likelihood (natural log) at thresholds ``theta`` (increasing),
        fixed effects ``beta`` and random-effect SDs ``sd`` (logit units), or -inf."""
        th, b, sd = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (theta, beta, sd))
        return float(self.laplace_many(th[None], b[None], sd[None])[0])

    def laplace_many(self, theta: np.ndarray, beta: np.ndarray, sd: np.ndarray) -> np.ndarray:
        """Return the Laplace log-likelihoods at K parameter points: ``theta`` (K, J-1),
        ``beta`` (K, p), ``sd`` (K, number of grouping factors); -inf where the thresholds do
        not increase or the likelihood underflows. The conditional modes start from the last
        call's mode of the first point. Points are taken in chunks of at most
        :data:`BATCH_ELEMENTS` array elements per working array (memory bounded on large data)."""
        theta, beta = np.asarray(theta, float), np.asarray(beta, float)
        sd = np.asarray(sd, float)
        kk = len(theta)
        dense = self.q**2 if self._elim < 0 else len(self._elim_idx) * len(self._rest_idx)
        per_point = max(len(self.y), self.q, dense)
        chunk = max(1, BATCH_ELEMENTS // per_point)
        if kk > chunk:
            return np.concatenate(
                [
                    self.laplace_many(theta[i : i + chunk], beta[i : i + chunk], sd[i : i + chunk])
                    for i in range(0, kk, chunk)
                ]
            )
        out = np.full(kk, -np.inf)
        ok = np.all(np.diff(theta, axis=1) > 0, axis=1)
        if not ok.any():
            return out
        theta, eta0 = theta[ok], beta[ok] @ self.x.T
        if self.q == 0:
            out[ok] = self._log_p(theta, eta0, False).sum(axis=1)
            return out
        lam = np.repeat(np.asarray(sd, dtype=float)[ok], self.sizes, axis=1)
        m = len(theta)
        u = np.tile(self._u, (m, 1))
        res = np.full(m, -np.inf)
        act = np.arange(m)  # points still iterating
        final = np.zeros(m, bool)  # points evaluated after their last (polishing) step
        for _ in range(200):
            if not len(act):
                break
            ua, la, th, e0 = u[act], lam[act], theta[act], eta0[act]
            logp, s, w = self._log_p(th, e0 + self._z(la * ua), True)
            obj = logp.sum(axis=1) - 0.5 * (ua * ua).sum(axis=1)
            bad = ~np.isfinite(obj)
            again = act[:0]
            if bad.any():  # restart from zero (a warm start far off), or give up at zero
                zero = ~ua.any(axis=1)
                res[act[bad & zero]] = -np.inf
                again = act[bad & ~zero]
                u[again] = 0.0
                final[again] = False
                g = ~bad
                act, ua, la, th, e0 = act[g], ua[g], la[g], th[g], e0[g]
                s, w, obj = s[g], w[g], obj[g]
            grad = la * self._zt(s) + ua  # gradient of -obj
            solve, logdet = self._hessian_factor(la, w)
            step = solve(grad)
            dec = (grad * step).sum(axis=1)  # squared Newton decrement
            res[act] = obj - 0.5 * logdet
            stop = final[act] | (dec < _FLOOR_TOL)
            polish = ~stop & (dec < _INNER_TOL)
            final[act[polish]] = True
            quad = ~stop & (dec < 1e-8)  # quadratic convergence: full steps, rounding changes
            u[act[quad]] = ua[quad] - step[quad]
            search = np.flatnonzero(~stop & ~quad)
            t = np.ones(len(search))
            pending = np.arange(len(search))
            while len(pending):  # step halving until the objective does not decrease
                j = search[pending]
                un = ua[j] - t[pending, None] * step[j]
                val = self._log_p(th[j], e0[j] + self._z(la[j] * un), False).sum(axis=1)
                val = val - 0.5 * (un * un).sum(axis=1)
                acc = np.isfinite(val) & (val >= obj[j])
                u[act[j[acc]]] = un[acc]
                t[pending[~acc]] /= 2
                pending = pending[~acc]
                small = t[pending] <= 1e-10
                stop[search[pending[small]]] = True  # no ascent: at the mode to rounding
                pending = pending[~small]
            act = np.concatenate([act[~stop], again])
        self._u = u[0].copy()
        out[ok] = res
        return out


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
    start: ClmmFit | None = None,
) -> ClmmFit:
    """Fit ``factor(y) ~ rhs + (1|g) for g in groups`` as a logit CLMM (Laplace); return
    :class:`ClmmFit`.

    ``formula``: ``"y ~ rhs"`` in patsy syntax (numeric ``y``; its observed distinct values are
    the ordered categories); rows with a missing value are dropped. Columns of the fixed-effect
    design are scaled to unit SD for the optimisation and the estimates scaled back.
    ``groups=()`` fits the plain cumulative-link model. ``start``: a fit of a nested or nesting
    model on the same rows to start from (its thresholds, the fixed effects of the same names,
    else 0, and its SDs, 1 for an SD on its zero boundary); by default the start is the fit
    without random effects.
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

    names_t = [f"{_fmt(a)}|{_fmt(b)}" for a, b in zip(levels[:-1], levels[1:], strict=True)]
    if start is not None and (
        list(start.thresholds.index) != names_t or list(start.sd.index) != list(groups)
    ):
        raise ValueError("fit_clmm: the start fit has other categories or grouping factors")
    if start is not None:
        th = start.thresholds.to_numpy()
        b0 = start.params.reindex(xdf.columns).fillna(0.0).to_numpy() * scale
        s0 = np.where(start.sd.to_numpy() < SD_BOUNDARY, 1.0, start.sd.to_numpy())
        phi_start = np.concatenate([th[:1], np.log(np.diff(th)), b0, np.log(s0)])
    else:  # the fixed-effects cumulative logit fit (theta_1, log increments, beta; SDs 1)
        phi_start = np.concatenate([_fixed_effects_fit(y, xs, nt), np.zeros(ng)])

    def unpack(phi: np.ndarray):
        theta = np.cumsum(np.concatenate([phi[:1], np.exp(phi[1:nt])]))
        return theta, phi[nt : nt + nb], np.exp(phi[nt + nb :])

    def negll_many(phis: np.ndarray) -> np.ndarray:
        """-Laplace log-likelihood at each row of ``phis`` (1e300 where undefined)."""
        phis = np.atleast_2d(phis)
        theta = np.cumsum(np.concatenate([phis[:, :1], np.exp(phis[:, 1:nt])], axis=1), axis=1)
        v = -prob.laplace_many(theta, phis[:, nt : nt + nb], np.exp(phis[:, nt + nb :]))
        return np.where(np.isfinite(v), v, 1e300)

    def negll(phi: np.ndarray) -> float:
        return float(negll_many(phi)[0])

    def negll_and_gradient(phi: np.ndarray) -> tuple[float, np.ndarray]:
        """-Laplace log-likelihood and its exact gradient in phi (1e300 and 0 if undefined)."""
        val, g = prob.laplace_gradient(*unpack(phi))
        if not (np.isfinite(val) and np.all(np.isfinite(g))):
            return 1e300, np.zeros(len(phi))
        gt = g[:nt][::-1].cumsum()[::-1]  # d/d theta_1 and d/d log increments
        gt[1:] *= np.exp(phi[1:nt])
        return -val, -np.concatenate([gt, g[nt : nt + nb], g[nt + nb :] * np.exp(phi[nt + nb :])])

    exact = 0 < prob.q <= GRADIENT_DENSE_MAX and len(prob.y) * prob.q <= BATCH_ELEMENTS
    res = optimize.minimize(
        negll_and_gradient if exact else _value_and_gradient(negll_many),
        phi_start,
        method="BFGS",
        jac=True,
        options={"gtol": 1e-7},
    )
    phi, message = res.x, str(res.message)
    # Newton polish on the parameters off the boundary
    free = np.ones(len(phi), bool)
    free[nt + nb :] = np.exp(phi[nt + nb :]) >= SD_BOUNDARY

    def negll_free(base: np.ndarray):
        def f(points: np.ndarray) -> np.ndarray:
            full = np.tile(base, (len(points), 1))
            full[:, free] = points
            return negll_many(full)

        return f

    for _ in range(10):
        g = _central_gradient(negll_free(phi), phi[free])
        h = _hessian(negll_free(phi), phi[free], _steps(phi[free]))
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
    gmax = float(np.max(np.abs(_central_gradient(negll_free(phi), phi[free]))))
    theta, bs, sd = unpack(phi)
    llf = -negll(phi)

    # covariance in (theta, beta, sd) as clmm, the SDs on their zero boundary left out
    on = np.ones(nt + nb + ng, bool)
    on[nt + nb :] = sd >= SD_BOUNDARY
    psi = np.concatenate([theta, bs, sd])

    def negll_psi(points: np.ndarray) -> np.ndarray:
        full = np.tile(psi, (len(points), 1))
        full[:, on] = points
        v = -prob.laplace_many(full[:, :nt], full[:, nt : nt + nb], full[:, nt + nb :])
        return np.where(np.isfinite(v), v, 1e300)

    hess = _hessian(negll_psi, psi[on], _steps(psi[on]))
    cov = np.linalg.inv(hess)[: nt + nb, : nt + nb]
    back = np.concatenate([np.ones(nt), 1.0 / scale])
    cov = cov * back[:, None] * back[None, :]
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


def _fixed_effects_fit(y: np.ndarray, xs: np.ndarray, nt: int) -> np.ndarray:
    """Return the cumulative logit fit without random effects as (theta_1, log threshold
    increments, beta): BFGS from the marginal distribution's thresholds and beta 0."""
    fixed = ClmmProblem(y, xs, [], nt + 1)

    def negll_fixed(phis: np.ndarray) -> np.ndarray:
        theta = np.cumsum(np.concatenate([phis[:, :1], np.exp(phis[:, 1:nt])], axis=1), axis=1)
        v = -fixed.laplace_many(theta, phis[:, nt:], np.zeros((len(phis), 0)))
        return np.where(np.isfinite(v), v, 1e300)

    cum = np.cumsum(np.bincount(y, minlength=nt + 1))[:-1] / len(y)
    theta0 = np.log(cum / (1 - cum))  # the thresholds of the marginal distribution
    phi0 = np.concatenate([theta0[:1], np.log(np.diff(theta0)), np.zeros(xs.shape[1])])
    res = optimize.minimize(
        _value_and_gradient(negll_fixed), phi0, method="BFGS", jac=True, options={"gtol": 1e-6}
    )
    return res.x


def _steps(x: np.ndarray) -> np.ndarray:
    """Finite-difference steps of the numerical Hessians: 1e-3 of each parameter (at least
    1e-4): well above the rounding noise of the Laplace log-likelihood, and the O(h^2)
    truncation error stays below 1e-5 relative on these smooth functions."""
    return 1e-3 * np.maximum(np.abs(x), 0.1)


_EPS = np.finfo(float).eps


def _value_and_gradient(f_many):
    """Return ``fg(x) -> (f(x), gradient)`` for ``f_many`` (a function of the rows of a
    matrix of points): central differences with scipy's 3-point steps, all 2p + 1 points in one
    call."""

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        h = _EPS ** (1 / 3) * np.where(x >= 0, 1.0, -1.0) * np.maximum(1.0, np.abs(x))
        h = (x + h) - x
        up, down = x + np.diag(h), x - np.diag(h)
        v = f_many(np.vstack([x, up, down]))
        p = len(x)
        return float(v[0]), (v[1 : p + 1] - v[p + 1 :]) / (np.diag(up) - np.diag(down))

    return fg


def _central_gradient(f_many, x: np.ndarray) -> np.ndarray:
    """Return the central-difference gradient of statsmodels' ``approx_fprime(x, f,
    centered=True)`` (steps ``EPS**(1/3) max(|x|, 0.1) / 2``), all points in one call."""
    eps = _EPS ** (1.0 / 3) * np.maximum(np.abs(x), 0.1) / 2.0
    e = np.diag(eps)
    p = len(x)
    v = f_many(np.vstack([x + e, x - e]))
    return (v[:p] - v[p:]) / (2 * eps)


def _hessian(f_many, x: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Return statsmodels' ``approx_hess3(x, f, epsilon=h)`` (the four-point central
    second difference of every pair), all 4 p (p + 1) / 2 points in one call."""
    p = len(x)
    ee = np.diag(h)
    pairs = [(i, j) for i in range(p) for j in range(i, p)]
    pts = np.vstack(
        [
            np.array(
                [
                    x + ee[i, :] + ee[j, :],
                    x + ee[i, :] - ee[j, :],
                    x - ee[i, :] + ee[j, :],
                    x - ee[i, :] - ee[j, :],
                ]
            )
            for i, j in pairs
        ]
    ).reshape(-1, p)
    v = f_many(pts).reshape(-1, 4)
    hh = np.outer(h, h)
    hess = np.empty((p, p))
    for (i, j), (a, b, c, d) in zip(pairs, v, strict=True):
        hess[i, j] = hess[j, i] = (a - b - (c - d)) / (4.0 * hh[i, j])
    return hess


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
            reduced = fit_clmm(used, f"{outcome} ~ {m} + {moderator}", groups, start=full)
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
