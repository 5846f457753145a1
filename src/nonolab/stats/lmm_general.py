"""General crossed linear mixed model: random intercepts and slopes, correlated or not.

``y ~ fixed effects + (1 + a | participant) + (1 + b | puzzle)`` as lme4 fits it: every random
term has a grouping factor and design columns; its relative covariance is ``Lambda Lambda'``
with ``Lambda`` lower triangular (``correlated=True``, lme4's ``(1 + a | g)``) or diagonal
(``correlated=False``, lme4's ``(1 + a || g)``); lme4's ``theta`` are ``Lambda``'s free entries
(column-major). :func:`fit_general` minimises lme4's profiled REML (or ML) deviance; the fixed
effects get Satterthwaite df as lmerTest computes them (:meth:`GeneralFit.satterthwaite`) and the
Kenward-Roger adjusted covariance and df as pbkrtest computes them (:meth:`GeneralFit.
kenward_roger`). :func:`nonolab.stats.lmm.fit_crossed` is the fast special case of random
intercepts; ``tests/stats/test_lmm_general.py`` checks the two agree and ``tests/stats/
test_r_crosscheck_maximal.py`` checks everything against lme4, lmerTest and pbkrtest.

How the deviance is evaluated: as in :mod:`nonolab.stats.lmm`, the factor with the most levels
(participants) is eliminated in closed form, here by one small ``q x q`` block per level
(``q`` = its number of design columns), the others (puzzles) stay as one dense block, so an
evaluation costs O(levels x m^2 + m^3) with m = (puzzle columns) + fixed effects + 1, and so
does the exact gradient in ``theta`` that the optimiser uses (:func:`_value_grad` for one
response, :func:`_batch_value_grad` for a stack of them, from the blocks of the inverse of
lme4's augmented system; ``tests/stats/test_lmm_general.py`` and
``tests/stats/test_lmm_general_fast_paths.py`` check them against dense formulas, each other
and central differences). The optimiser is scipy's L-BFGS-B, driven directly
(:func:`_lbfgsb`: the iterates of ``scipy.optimize.minimize``, without its per-evaluation
wrappers). The df computations (Satterthwaite, Kenward-Roger) work with dense ``n x n`` matrices: exact
and simple, and cheap for the study's few hundred attempts (O(n^3) per variance parameter).

Random-effect design columns enter scaled to unit root mean square (no centring), a pure
reparametrisation of ``Lambda`` that leaves the model, the fit and every df unchanged; it keeps
the optimiser's scale sensible when a covariate is a raw solver count, and it makes the
singular-fit flag (:attr:`GeneralFit.singular`) independent of the covariate's units.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dtrtri as _trtri
from scipy.optimize import minimize

from nonolab.stats.lmm import _codes, _formula_columns, _single_thread_blas, formula_design

__all__ = [
    "GeneralFit",
    "RandomTerm",
    "TTest",
    "fit_general",
    "refit",
    "refit_llf_batch",
    "simulate_general",
]

#: lme4's ``isSingular`` tolerance on a diagonal entry of ``Lambda``.
SINGULAR_TOL = 1e-4


@dataclass(frozen=True)
class RandomTerm:
    """One random-effect term: grouping column ``group``, design ``columns`` (``"1"`` = the
    intercept, else numeric data columns), correlated (lme4 ``|``) or independent (``||``)."""

    group: str
    columns: tuple[str, ...] = ("1",)
    correlated: bool = True

    def label(self) -> str:
        """Return the term in lme4 syntax, e.g. ``(1 + x | participant_id)``."""
        bar = "|" if self.correlated or len(self.columns) == 1 else "||"
        return f"({' + '.join(self.columns)} {bar} {self.group})"

    def describe(self) -> str:
        """Return the term in words without lme4's bar (safe in a Markdown table), e.g.
        ``participant_id: 1 + x, correlated``."""
        kind = (
            ""
            if len(self.columns) == 1
            else (", correlated" if self.correlated else ", uncorrelated")
        )
        return f"{self.group}: {' + '.join(self.columns)}{kind}"

    def n_theta(self) -> int:
        """Number of free entries of ``Lambda``."""
        q = len(self.columns)
        return q * (q + 1) // 2 if self.correlated else q

    def entries(self) -> list[tuple[int, int]]:
        """Return the free ``(row, col)`` entries of ``Lambda`` in lme4's order."""
        q = len(self.columns)
        if not self.correlated:
            return [(i, i) for i in range(q)]
        return [(i, j) for j in range(q) for i in range(j, q)]


@dataclass(frozen=True)
class TTest:
    """t test of one fixed-effect contrast: estimate (outcome units), se, df, t, two-sided p."""

    estimate: float
    se: float
    df: float
    t: float
    p: float


@dataclass(frozen=True)
class _Term:
    """A random term's data: level codes, design values (scaled), scale, level count."""

    codes: np.ndarray
    values: np.ndarray  # n x q, each column divided by ``scale``
    scale: np.ndarray  # q, root mean square of the raw column
    n_levels: int
    spec: RandomTerm

    @property
    def q(self) -> int:
        return self.values.shape[1]

    def lam(self, theta: np.ndarray) -> np.ndarray:
        """Return ``Lambda`` (q x q, scaled units) from this term's ``theta``."""
        L = np.zeros((self.q, self.q))
        for v, (i, j) in zip(theta, self.spec.entries(), strict=True):
            L[i, j] = v
        return L

    def design(self) -> sparse.csr_matrix:
        """Return the n x (levels*q) design, columns level-major (``level * q + component``)."""
        n, q = self.values.shape
        rows = np.repeat(np.arange(n), q)
        cols = (self.codes[:, None] * q + np.arange(q)[None, :]).ravel()
        return sparse.csr_matrix((self.values.ravel(), (rows, cols)), shape=(n, self.n_levels * q))

    def same_level(self) -> np.ndarray:
        """Return the n x n 0/1 matrix of observation pairs in the same level."""
        return (self.codes[:, None] == self.codes[None, :]).astype(float)


@dataclass(frozen=True)
class _Stats:
    """Sufficient statistics of the design for deviance evaluations (see the module text).

    ``e``: index of the eliminated term; ``ZtZ``: its per-level ``Z_i'Z_i`` (levels x q x q);
    ``ZtR``: per-level ``Z_i'R`` (levels x q x m) with ``R = [Z_rest, X, y]``; ``RtR = R'R``;
    ``rest``: ``(term, first, stop)`` column ranges of ``Z_rest`` in ``R``.
    """

    n: int
    p: int
    terms: tuple[_Term, ...]
    e: int
    ZtZ: np.ndarray
    ZtR: np.ndarray
    RtR: np.ndarray
    rest: tuple[tuple[int, int, int], ...]
    offsets: tuple[int, ...]  # start of each term's theta in the full theta
    #: per level of the eliminated term, the columns of R its ``Z_i'R`` can be non-zero in
    #: (whole blocks of the other terms' levels it meets, then X and y), padded with ``m``
    support: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    #: the largest number of design columns of a term that is not eliminated
    max_rest_q: int = 1
    #: flat positions of every level's support pairs in an (m + 1) x (m + 1) matrix
    support_pairs: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    #: index arrays of :func:`_value_grad` (built on first use, :meth:`layout`)
    _layout: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, y: np.ndarray, X: np.ndarray, terms: Sequence[_Term]) -> _Stats:
        n, p = X.shape
        e = max(range(len(terms)), key=lambda k: (terms[k].n_levels, -k))
        rest, blocks, pos = [], [], 0
        for k, t in enumerate(terms):
            if k == e:
                continue
            blocks.append(t.design())
            rest.append((k, pos, pos + t.n_levels * t.q))
            pos += t.n_levels * t.q
        R = sparse.hstack(blocks + [sparse.csr_matrix(X), sparse.csr_matrix(y[:, None])])
        R = sparse.csr_matrix(R)
        te = terms[e]
        outer = te.values[:, :, None] * te.values[:, None, :]
        ZtZ = np.zeros((te.n_levels, te.q, te.q))
        np.add.at(ZtZ, te.codes, outer)
        ZtR = np.asarray((te.design().T @ R).todense()).reshape(te.n_levels, te.q, R.shape[1])
        RtR = np.asarray((R.T @ R).todense())
        offsets = tuple(np.cumsum([0] + [t.spec.n_theta() for t in terms])[:-1].tolist())
        m = R.shape[1]
        qr = rest[-1][2] if rest else 0
        touched = np.zeros((te.n_levels, qr), dtype=bool)
        for k, a, b in rest:  # whole blocks: T mixes the columns of one level of a term
            qk = terms[k].q
            hit = ZtR[:, :, a:b].reshape(te.n_levels, te.q, (b - a) // qk, qk) != 0
            touched[:, a:b] = np.repeat(hit.any(axis=(1, 3)), qk, axis=1)
        width = int(touched.sum(axis=1).max(initial=0)) + (m - qr)
        support = np.full((te.n_levels, width), m, dtype=np.intp)
        for lv in range(te.n_levels):
            cols = np.concatenate([np.flatnonzero(touched[lv]), np.arange(qr, m)])
            support[lv, : len(cols)] = cols
        max_q = max((terms[k].q for k, _, _ in rest), default=1)
        pairs = (support[:, :, None] * (m + 1) + support[:, None, :]).ravel()
        return cls(
            n, p, tuple(terms), e, ZtZ, ZtR, RtR, tuple(rest), offsets, support, max_q, pairs
        )

    @property
    def qr(self) -> int:
        return self.rest[-1][2] if self.rest else 0

    def gather(self, ZtR: np.ndarray) -> np.ndarray:
        """Return each level's ``Z_i'R`` on its own columns (levels x q x K; ``support``,
        the pad column zero) from ``ZtR`` (levels x q x m)."""
        nl, q, m = ZtR.shape
        ZtRe = np.concatenate([ZtR, np.zeros((nl, q, 1))], axis=2)
        return np.take_along_axis(
            ZtRe, np.broadcast_to(self.support[:, None, :], (nl, q, self.support.shape[1])), 2
        )

    def layout(self) -> _Layout:
        """Return the index arrays :func:`_value_grad` uses (computed once per design)."""
        if "layout" not in self._layout:
            self._layout["layout"] = _Layout.of(self)
        return self._layout["layout"]

    def lams(self, theta: np.ndarray) -> list[np.ndarray]:
        """Return every term's ``Lambda`` (scaled units)."""
        out = []
        for t, a in zip(self.terms, self.offsets, strict=True):
            out.append(t.lam(theta[a : a + t.spec.n_theta()]))
        return out


def _evaluate(
    theta: np.ndarray, s: _Stats, reml: bool
) -> tuple[float, np.ndarray, np.ndarray, float]:
    """Return ``(deviance, beta, (X'W^-1X)^-1, sigma^2)`` at ``theta`` (lme4's profiled REML
    or ML deviance; ``V = sigma^2 W``, ``W = I + Z Lambda Lambda' Z'``)."""
    lams = s.lams(theta)
    m = s.RtR.shape[0]
    T = np.eye(m)
    for k, a, b in s.rest:
        T[a:b, a:b] = np.kron(np.eye(s.terms[k].n_levels), lams[k])
    Le = lams[s.e]
    q = Le.shape[0]
    A = Le.T @ s.ZtZ @ Le + np.eye(q)
    B = Le.T @ (s.ZtR.reshape(-1, m) @ T).reshape(s.ZtR.shape)  # one GEMM over every level
    chol = np.linalg.cholesky(A)
    logdet = 2.0 * float(np.log(np.diagonal(chol, axis1=1, axis2=2)).sum())
    AiB = np.linalg.solve(A, B)
    Omega = T.T @ s.RtR @ T - B.reshape(-1, m).T @ AiB.reshape(-1, m)
    qr, p = s.qr, s.p
    if qr:
        Omega[:qr, :qr] += np.eye(qr)
        L = np.linalg.cholesky(Omega[:qr, :qr])
        logdet += 2.0 * float(np.log(np.diag(L)).sum())
        C = np.linalg.solve(L, Omega[:qr, qr:])
        Cxy = Omega[qr:, qr:] - C.T @ C
    else:
        Cxy = Omega
    XtWX, XtWy = Cxy[:p, :p], Cxy[:p, p]
    beta = np.linalg.solve(XtWX, XtWy)
    rss = float(Cxy[p, p] - beta @ XtWy)
    dfr = s.n - p if reml else s.n
    if not rss > 0:
        raise FloatingPointError("non-positive residual sum of squares")
    s2 = rss / dfr
    crit = logdet + dfr * (1.0 + np.log(2.0 * np.pi * s2))
    if reml:
        crit += np.linalg.slogdet(XtWX)[1]
    return float(crit), beta, np.linalg.inv(XtWX), s2


#: :func:`_value_grad` works in all ``m`` columns of ``R`` (dense products over the levels)
#: while ``m`` is at most this multiple of the widest level's ``K`` columns, else on each
#: level's own ``K`` columns (gathered and scattered back): ``levels x m^2`` flops in a few
#: matrix products against ``levels x K^2`` element gathers, which cost about 25 times more each.
_FULL_COLUMNS = 4


#: cofactor signs of a 2 x 2 inverse
_SIGNS = np.array([[1.0, -1.0], [-1.0, 1.0]])


@dataclass(frozen=True)
class _Layout:
    """Where ``theta``'s entries go and where the gradient's come from, for one design
    (:func:`_value_grad`): flat positions in the eliminated term's ``Lambda`` (``e_pos``, from
    ``theta[e_idx]``) and in the ``(m + 1) x (m + 1)`` padded ``T`` (``t_pos`` from
    ``theta[t_idx]``; ``t_base`` its identity part, zero in the pad); for the other terms'
    gradient, the flat positions in ``F`` (qr x qr) of every within-level entry (``f_pos``) and
    the ``theta`` index each sums into (``f_idx``); ``full``: work in all ``m`` columns
    (:data:`_FULL_COLUMNS`); ``Zc``: the design's own ``Z'R`` in the columns used
    (:meth:`columns`)."""

    e_pos: np.ndarray
    e_idx: np.ndarray
    t_pos: np.ndarray
    t_idx: np.ndarray
    t_base: np.ndarray
    f_pos: np.ndarray
    f_idx: np.ndarray
    full: bool
    Zc: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    @classmethod
    def of(cls, s: _Stats) -> _Layout:
        m = s.RtR.shape[0]
        te = s.terms[s.e]
        ent = te.spec.entries()
        e_pos = np.array([i * te.q + j for i, j in ent], dtype=np.intp)
        e_idx = s.offsets[s.e] + np.arange(len(ent))
        t_pos, t_idx, f_pos, f_idx = [], [], [], []
        qr = s.qr
        for k, a, _ in s.rest:
            t = s.terms[k]
            for v, (i, j) in enumerate(t.spec.entries()):
                rows = a + np.arange(t.n_levels) * t.q
                t_pos.append((rows + i) * (m + 1) + rows + j)
                t_idx.append(np.full(t.n_levels, s.offsets[k] + v))
                f_pos.append((rows + i) * qr + rows + j)
                f_idx.append(np.full(t.n_levels, s.offsets[k] + v))
        base = np.eye(m + 1)
        base[m, m] = 0.0

        def cat(x: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(x).astype(np.intp) if x else np.zeros(0, dtype=np.intp)

        full = m <= _FULL_COLUMNS * s.support.shape[1]
        lay = cls(e_pos, e_idx, cat(t_pos), cat(t_idx), base, cat(f_pos), cat(f_idx), full)
        object.__setattr__(lay, "Zc", lay.columns(s, s.ZtR))
        return lay

    def columns(self, s: _Stats, ZtR: np.ndarray) -> np.ndarray:
        """Return ``ZtR`` (levels x q x m) in the columns :func:`_value_grad` works in: itself
        when ``full``, else :meth:`_Stats.gather`."""
        return ZtR if self.full else s.gather(ZtR)


def _value_grad(
    theta: np.ndarray,
    s: _Stats,
    reml: bool,
    Zc: np.ndarray | None = None,
    RtR: np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Return lme4's profiled REML (or ML) deviance at ``theta`` and its exact gradient for
    one response: :func:`_batch_value_grad` with ``B = 1``, the same formulas with fewer
    array operations. ``Zc``: the response's ``Z'R`` in the columns used
    (:meth:`_Layout.columns`), ``RtR`` its ``R'R`` (default: the design's own).

    Two rearrangements of :func:`_batch_value_grad`'s sums (exact in real arithmetic): the
    gradient is linear in the inverse blocks ``Oi`` of the truncations, so their weighted sum
    is formed once, ``sum_s w_s Oi_s = Li' diag(c) Li`` with ``Li`` the inverse Cholesky
    factor of ``Omega`` and ``c_t`` the total weight of the truncations longer than ``t``;
    and the eliminated factor's ``F_ll`` terms combine as ``(ZtZ_l Le C_l - Z_l'R T) (C_l
    Oi)'``. ``T`` (and so ``T' R'R T``) is a scaling when every other term has one column.
    With few columns (:data:`_FULL_COLUMNS`) every per-level product runs over all ``m``
    columns as one matrix product (the sums over levels become products of the stacked
    ``levels * q`` rows); else on each level's own columns, as :func:`_batch_value_grad`.
    """
    lay = s.layout()
    Zc = lay.Zc if Zc is None else Zc
    RtR = s.RtR if RtR is None else RtR
    full = lay.full
    m = RtR.shape[0]
    te = s.terms[s.e]
    q, qr, p = te.q, s.qr, s.p
    nl, K = Zc.shape[0], Zc.shape[2]
    Le = np.zeros(q * q)
    Le[lay.e_pos] = theta[lay.e_idx]
    Le = Le.reshape(q, q)
    Te = lay.t_base.copy()
    Te.flat[lay.t_pos] = theta[lay.t_idx]
    pairs = s.support_pairs
    if s.max_rest_q == 1:  # T is diagonal: a scaling of the columns
        td = np.diagonal(Te)
        ZtRT = Zc * (td[:m] if full else td[s.support][:, None, :])
        tm = td[:m]
        RtRT = RtR * tm[None, :]
        Omega = tm[:, None] * RtRT
    else:
        T = Te[:m, :m]
        if full:
            ZtRT = (Zc.reshape(nl * q, m) @ T).reshape(nl, q, m)
        else:
            ZtRT = Zc @ Te.flat[pairs].reshape(nl, K, K)
        RtRT = RtR @ T
        Omega = T.T @ RtRT
    if q == 1:
        le = Le[0, 0]
        ZtZL = s.ZtZ * le
        A = 1.0 + le * ZtZL
        logA = float(np.log(A).sum())
        Ai = 1.0 / A
        Bm = le * ZtRT
        C = Ai * Bm
    else:
        ZtZL = s.ZtZ @ Le
        A = Le.T @ ZtZL + np.eye(q)
        if q == 2:  # closed form: A_l is positive definite iff a > 0 and det > 0
            a, b, d = A[:, 0, 0], A[:, 1, 0], A[:, 1, 1]
            det = a * d - b * b
            if not (np.all(a > 0) and np.all(det > 0)):
                raise np.linalg.LinAlgError("a level's block is not positive definite")
            logA = float(np.log(det).sum())
            Ai = A[:, ::-1, ::-1] * (_SIGNS / det[:, None, None])
        else:
            chol = np.linalg.cholesky(A)
            logA = 2.0 * float(np.log(np.diagonal(chol, axis1=1, axis2=2)).sum())
            Ai = np.linalg.inv(A)
        Bm = Le.T @ ZtRT
        C = Ai @ Bm
    if full:  # sum over levels of Bm_l' C_l
        Omega -= Bm.reshape(nl * q, m).T @ C.reshape(nl * q, m)
    else:
        BtC = Bm.transpose(0, 2, 1) * C if q == 1 else Bm.transpose(0, 2, 1) @ C
        size = (m + 1) * (m + 1)
        Omega -= np.bincount(pairs, BtC.reshape(-1), minlength=size).reshape(m + 1, m + 1)[:m, :m]
    Omega.flat[: qr * (m + 1) : m + 1] += 1.0
    Omega = (Omega + Omega.T) / 2
    dfr = s.n - p if reml else s.n
    sizes = (qr + p, m) if reml else (qr, qr + p, m)
    coefs = (1.0 - dfr, float(dfr)) if reml else (1.0, -float(dfr), float(dfr))
    Lo, info = _potrf(Omega, lower=1)
    if info:
        raise np.linalg.LinAlgError("Omega is not positive definite")
    cum = np.concatenate([[0.0], np.cumsum(2.0 * np.log(np.diagonal(Lo)))])
    logdets = [logA + float(cum[ms]) for ms in sizes]
    c = np.zeros(m)
    for ms, w in zip(sizes, coefs, strict=True):
        c[:ms] += w
    wsum = float(sum(coefs))
    Li, info = _trtri(Lo, lower=1)
    if info:
        raise np.linalg.LinAlgError("singular Cholesky factor")
    Ow = Li.T @ (c[:, None] * Li)  # sum over truncations of w_s Oi_s (zero-padded)
    if full:
        CO = (C.reshape(nl * q, m) @ Ow).reshape(nl, q, m)
    else:
        Oe = np.zeros((m + 1, m + 1))
        Oe[:m, :m] = Ow
        CO = C @ Oe.flat[pairs].reshape(nl, K, K)  # levels x q x K
    if q == 1:
        Ge = wsum * float((ZtZL * Ai).sum()) + float(((ZtZL * C - ZtRT) * CO).sum())
        Ge = np.array([[2.0 * Ge]])
    else:
        Ge = wsum * (ZtZL @ Ai).sum(axis=0)
        Ge += np.einsum("lak,lbk->ab", ZtZL @ C - ZtRT, CO)
        Ge *= 2.0
    grad = np.zeros(len(theta))
    grad[lay.e_idx] = Ge.ravel()[lay.e_pos]
    if qr:
        # other factors: F = (R'R T)[:qr] Ow[:, :qr] - sum_l Z_l'R' Le C_l Oi (within-block
        # entries only: entry (r, r - d) of a level's columns, d < the largest block)
        F = RtRT[:qr] @ Ow[:, :qr]
        Wb = Le[0, 0] * CO if q == 1 else Le @ CO
        if full:
            F -= Zc.reshape(nl * q, m)[:, :qr].T @ Wb.reshape(nl * q, m)[:, :qr]
        else:
            rows = np.arange(qr)
            for d in range(s.max_rest_q):
                band = np.einsum("lac,lac->lc", Zc[..., d:], Wb[..., : K - d])
                sums = np.bincount(s.support[:, d:].ravel(), band.ravel(), minlength=m + 1)
                F[rows[d:], rows[d:] - d] -= sums[d:qr]
        grad += 2.0 * np.bincount(lay.f_idx, F.ravel()[lay.f_pos], minlength=len(theta))
    ld_x, ld = logdets[-2], logdets[-1]
    rss = np.exp(ld - ld_x)
    crit = (ld_x if reml else logdets[0]) + dfr * (1.0 + np.log(2.0 * np.pi * rss / dfr))
    if not rss > 0:
        raise FloatingPointError("non-positive residual sum of squares")
    return float(crit), grad


def _schur_value_grad(theta: np.ndarray, s: _Stats, reml: bool) -> tuple[float, np.ndarray]:
    """Return lme4's profiled REML (or ML) deviance at ``theta`` and its exact gradient
    (:func:`_value_grad` on the design's own response)."""
    return _value_grad(theta, s, reml)


def _batch_value_grad(
    theta: np.ndarray, s: _Stats, ZtR: np.ndarray, RtR: np.ndarray, reml: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Return the profiled REML (or ML) deviances and their exact gradients of ``B`` responses
    of one design, response ``b`` at ``theta[b]`` with the statistics ``ZtR[b]``, ``RtR[b]``
    (:class:`_Stats`; ``s`` gives the design). Shapes ``B`` and ``B x len(theta)``;
    O(B x levels x q x m^2 + B x m^3) as :func:`_evaluate`.

    With ``K`` lme4's augmented matrix ``Lambda~' [Z X y]' [Z X y] Lambda~ + diag(I, 0, 0)``
    and ``K1``, ``K0`` its leading blocks without ``y`` and with the random effects only, the
    REML deviance is ``(1 - r) log|K1| + r log|K| + const`` (``r = n - p``) and the ML deviance
    ``log|K0| + n (log|K| - log|K1|) + const``. For each, ``d log|K_s| / d Lambda_k[a, b] =
    2 sum over levels l of F_ll[a, b]`` with ``F = [Z X y]'[Z X y] Lambda~ K_s^-1`` (its
    random-effect rows and columns); ``K_s^-1``'s blocks follow from the Schur complement of
    the eliminated factor's block-diagonal part (``Omega`` of :func:`_evaluate`).
    """
    nb, m = RtR.shape[0], RtR.shape[1]
    lams = []
    for t, a in zip(s.terms, s.offsets, strict=True):
        L = np.zeros((nb, t.q, t.q))
        for v, (i, j) in enumerate(t.spec.entries()):
            L[:, i, j] = theta[:, a + v]
        lams.append(L)
    T = np.broadcast_to(np.eye(m), (nb, m, m)).copy()
    for k, a, _ in s.rest:
        qk = s.terms[k].q
        for lv in range(s.terms[k].n_levels):
            c = a + lv * qk
            T[:, c : c + qk, c : c + qk] = lams[k]
    Le = lams[s.e][:, None]  # B x 1 x q x q
    LeT = Le.transpose(0, 1, 3, 2)
    q, nl, qr, p = Le.shape[-1], ZtR.shape[1], s.qr, s.p
    # Each level of the eliminated factor touches few columns of R (a participant: the puzzles
    # it attempted, X and y): every per-level product works on those K columns only
    # (s.support, padded with the zero column m), and the level sums are scattered back into
    # m x m matrices; the cost is O(levels x K^2), not O(levels x m^2).
    idx = s.support  # levels x K
    K = idx.shape[1]
    ZtRe = np.concatenate([ZtR, np.zeros((nb, nl, q, 1))], axis=3)
    Zc = np.take_along_axis(ZtRe, np.broadcast_to(idx[None, :, None, :], (nb, nl, q, K)), 3)
    ZtZL = s.ZtZ[None] @ Le  # B x levels x q x q
    A = LeT @ ZtZL + np.eye(q)
    if s.max_rest_q == 1:  # T is diagonal: a column scaling
        td = np.concatenate([np.diagonal(T, axis1=1, axis2=2), np.zeros((nb, 1))], axis=1)
        ZtRT = Zc * td[:, idx][:, :, None, :]  # B x levels x q x K: Z_l'R T on its columns
    else:
        Te = np.zeros((nb, m + 1, m + 1))
        Te[:, :m, :m] = T
        ZtRT = Zc @ Te[:, idx[:, :, None], idx[:, None, :]]
    Bm = LeT @ ZtRT
    chol = np.linalg.cholesky(A)
    logA = 2.0 * np.log(np.diagonal(chol, axis1=2, axis2=3)).sum(axis=(1, 2))
    Ai = np.linalg.inv(A)
    C = Ai @ Bm  # B x levels x q x K
    flat = s.support_pairs  # levels x K x K positions in an (m + 1) x (m + 1) matrix
    offs = (np.arange(nb) * (m + 1) ** 2)[:, None]

    def scatter(blocks: np.ndarray) -> np.ndarray:
        """Sum per-level K x K blocks (B x levels x K x K) into B x m x m."""
        pos = flat if nb == 1 else (offs + flat[None, :]).ravel()
        out = np.bincount(pos, blocks.reshape(-1), minlength=nb * (m + 1) ** 2)
        return out.reshape(nb, m + 1, m + 1)[:, :m, :m]

    RtRT = RtR @ T
    Omega = T.transpose(0, 2, 1) @ RtRT
    Omega -= scatter(Bm.transpose(0, 1, 3, 2) @ C)
    Omega[:, :qr, :qr] += np.eye(qr)
    Omega = (Omega + Omega.transpose(0, 2, 1)) / 2
    dfr = s.n - p if reml else s.n
    sizes = (qr + p, m) if reml else (qr, qr + p, m)
    coefs = (1.0 - dfr, float(dfr)) if reml else (1.0, -float(dfr), float(dfr))
    logdets, grad = [], np.zeros(theta.shape)
    te = s.terms[s.e]
    # one Cholesky factor serves every truncation: the leading blocks of L and of L^-1 are
    # the factor and the inverse factor of the leading blocks of Omega
    Lo = np.linalg.cholesky(Omega)
    logdiag = 2.0 * np.log(np.diagonal(Lo, axis1=1, axis2=2))
    Li = np.linalg.inv(Lo)
    for ms, w in zip(sizes, coefs, strict=True):
        if ms == 0:
            logdets.append(logA)
            Ge = 2.0 * (ZtZL @ Ai).sum(axis=1)
        else:
            logdets.append(logA + logdiag[:, :ms].sum(axis=1))
            Oi = Li[:, :ms, :ms].transpose(0, 2, 1) @ Li[:, :ms, :ms]
            # Oi on each level's columns, zero on columns at or beyond ms (and the pad)
            Oe = np.zeros((nb, m + 1, m + 1))
            Oe[:, :ms, :ms] = Oi
            Oc = Oe[:, idx[:, :, None], idx[:, None, :]]  # B x levels x K x K
            CO = C @ Oc  # B x levels x q x K
            COC = CO @ C.transpose(0, 1, 3, 2)
            # eliminated factor: F_ll = ZtZ_l Le (Ai_l + C_l Oi C_l') - (ZtR_l T) Oi C_l'
            Fe = (ZtZL @ (Ai + COC)).sum(axis=1)
            Fe -= (ZtRT @ Oc @ C.transpose(0, 1, 3, 2)).sum(axis=1)
            Ge = 2.0 * Fe
            if qr:
                # other factors: F = (R'R T)[:qr, :ms] Oi[:, :qr] - sum_l ZtR_l' Le C_l Oi
                F = RtRT[:, :qr, :ms] @ Oi[:, :, :qr]
                # of sum_l Z_l'R' Le C_l Oi only the entries within one level's block are used:
                # entry (r, r - d) of a level's columns, d < the largest block, scattered
                W = Le @ CO  # B x levels x q x K
                rows = np.arange(qr)
                for d in range(s.max_rest_q):
                    band = np.einsum("blac,blac->blc", Zc[..., d:], W[..., : K - d])
                    pos = (np.arange(nb)[:, None, None] * (m + 1) + idx[None, :, d:]).ravel()
                    sums = np.bincount(pos, band.ravel(), minlength=nb * (m + 1))
                    sums = sums.reshape(nb, m + 1)
                    F[:, rows[d:], rows[d:] - d] -= sums[:, d:qr]
                for k, a, b in s.rest:
                    t = s.terms[k]
                    blocks = F[:, a:b, a:b].reshape(nb, t.n_levels, t.q, t.n_levels, t.q)
                    Gk = 2.0 * np.diagonal(blocks, axis1=1, axis2=3).sum(axis=-1)
                    for v, (i, j) in enumerate(t.spec.entries()):
                        grad[:, s.offsets[k] + v] += w * Gk[:, i, j]
        for v, (i, j) in enumerate(te.spec.entries()):
            grad[:, s.offsets[s.e] + v] += w * Ge[:, i, j]
    ld_x, ld = logdets[-2], logdets[-1]
    rss = np.exp(ld - ld_x)
    crit = (ld_x if reml else logdets[0]) + dfr * (1.0 + np.log(2.0 * np.pi * rss / dfr))
    if not np.all(rss > 0):
        raise FloatingPointError("non-positive residual sum of squares")
    return crit, grad


@dataclass(frozen=True)
class GeneralFit:
    """One fit of :func:`fit_general`.

    ``params``/``bse`` by fixed-effect term (outcome units per covariate unit), ``cov_params``
    lme4's ``vcov``; ``theta`` lme4's parameters in the covariates' own units (lme4's order:
    terms as given, ``Lambda`` column-major); ``varcorr`` one row per variance or covariance
    (``group``, ``var1``, ``var2`` (empty for a variance), ``vcov`` in squared outcome units,
    ``sdcor`` SD or correlation); ``var_residual``; ``llf`` the REML (or ML) log-likelihood on
    lme4's scale; ``singular`` as lme4's ``isSingular`` on unit-RMS design columns.
    """

    formula: str
    terms: tuple[RandomTerm, ...]
    reml: bool
    n: int
    n_levels: dict[str, int]
    params: pd.Series
    bse: pd.Series
    cov_params: pd.DataFrame
    theta: np.ndarray
    varcorr: pd.DataFrame
    var_residual: float
    llf: float
    converged: bool
    singular: bool
    warnings: tuple[str, ...] = field(default_factory=tuple)
    _X: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _y: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _terms: tuple[_Term, ...] = field(default=(), repr=False, compare=False)
    _theta_scaled: np.ndarray = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    #: the dense pieces of the df computations, built once (:meth:`_dense`)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def structure(self) -> str:
        """Return the random part in lme4 syntax, e.g. ``(1 + x | p) + (1 | g)``."""
        return " + ".join(t.label() for t in self.terms)

    def contrast(self, c: Sequence[float] | str) -> np.ndarray:
        """Return a contrast vector over the fixed effects (a term name selects one)."""
        names = list(self.params.index)
        if isinstance(c, str):
            v = np.zeros(len(names))
            v[names.index(c)] = 1.0
            return v
        return np.asarray(c, dtype=float)

    def boundary_terms(self) -> list[str]:
        """Return ``"group:column"`` of every ``Lambda`` diagonal entry below the singular
        tolerance (unit-RMS scale): the directions in which the fitted covariance is flat."""
        out = []
        pos = 0
        for t in self._terms:
            for v, (i, j) in zip(
                self._theta_scaled[pos : pos + t.spec.n_theta()], t.spec.entries(), strict=True
            ):
                if i == j and v < SINGULAR_TOL:
                    out.append(f"{t.spec.group}:{t.spec.columns[i]}")
            pos += t.spec.n_theta()
        return out

    def _dense(self) -> _Dense:
        """Return the fit's :class:`_Dense` pieces (built on first use, then shared by
        :meth:`satterthwaite` and :meth:`kenward_roger`)."""
        if "dense" not in self._cache:
            self._cache["dense"] = _Dense.of(self)
        return self._cache["dense"]

    @_single_thread_blas
    def satterthwaite(self, c: Sequence[float] | str) -> TTest:
        """Return the Satterthwaite t test of contrast ``c`` as lmerTest computes it.

        ``df = 2 (c'Phi c)^2 / (g' A g)`` with ``Phi = (X'V^-1X)^-1``, ``g`` its gradient and
        ``A = 2 H^+`` (``H`` the Hessian of the REML or ML deviance) in lmerTest's variance
        parameters ``(theta, sigma)``; ``H^+`` keeps the eigenvalues above 1e-8 as lmerTest
        does. ``g`` and ``H`` are exact (dense ``n x n`` formulas, not numerical derivatives:
        ``H_ij = tr(Q V_ij) - tr(Q V_i Q V_j) + 2 y'P V_i P V_j P y - y'P V_ij P y``, ``Q = P``
        for REML and ``V^-1`` for ML). At an interior optimum the df do not depend on the
        parametrisation; at a boundary they are lmerTest's by construction.
        """
        cv = self.contrast(c)
        d = self._dense()
        phi = d.Phi
        k = d.k
        Vi = [d.dV(i) for i in range(k)]
        Q = d.P if self.reml else d.Vinv
        QV = [Q @ v for v in Vi]
        Py = d.P @ self._y
        VPy = [v @ Py for v in Vi]
        PVPy = [d.P @ u for u in VPy]
        H = np.zeros((k, k))
        for i in range(k):
            for j in range(i, k):
                Vij = d.d2V(i, j)
                h = -np.sum(QV[i] * QV[j].T) + 2.0 * VPy[i] @ PVPy[j]
                if Vij is not None:
                    h += np.sum(Q * Vij) - Py @ Vij @ Py
                H[i, j] = H[j, i] = h
        w = d.Vinv @ self._X @ phi @ cv
        g = np.array([w @ v @ w for v in Vi])
        ev, U = np.linalg.eigh(H)
        pos = ev > 1e-8
        A = 2.0 * (U[:, pos] / ev[pos]) @ U[:, pos].T
        var = float(cv @ phi @ cv)
        df = 2.0 * var**2 / float(g @ A @ g)
        return _t_test(float(cv @ self.params.to_numpy()), var, df)

    @_single_thread_blas
    def kenward_roger(self, c: Sequence[float] | str) -> TTest:
        """Return the Kenward-Roger t test of contrast ``c`` as lmerTest computes it with
        pbkrtest (``vcovAdj`` and ``Lb_ddf``): the adjusted covariance ``Phi_A = Phi + 2 Phi
        U Phi`` (second-derivative terms zero: ``V`` is linear in pbkrtest's parameters, the
        random-effect variances and covariances and the residual variance) and the KR df.

        Needs a REML fit. ``se`` is ``sqrt(c' Phi_A c)`` (outcome units).
        """
        if not self.reml:
            raise ValueError("Kenward-Roger needs a REML fit")
        cv = self.contrast(c)
        d = self._dense()
        Phi, X, Si = d.Phi, self._X, d.Vinv
        G = d.linear_G()
        ng = len(G)
        TT = Si @ X
        HH = [g @ Si for g in G]
        OO = [h @ X for h in HH]
        PP = [-(o.T @ TT) for o in OO]
        PP = [(p_ + p_.T) / 2 for p_ in PP]
        QQ = {(r, s_): OO[r].T @ Si @ OO[s_] for r in range(ng) for s_ in range(r, ng)}
        IE2 = np.zeros((ng, ng))
        for i in range(ng):
            PhiPi = Phi @ PP[i]
            for j in range(i, ng):
                kt = np.sum(HH[i].T * HH[j])
                IE2[i, j] = IE2[j, i] = (
                    kt - 2 * np.sum(Phi * QQ[i, j]) + np.sum(PhiPi * (PP[j] @ Phi))
                )
        condi = np.min(np.abs(np.linalg.eigvalsh(IE2)))
        W = 2 * (np.linalg.inv(IE2) if condi > 1e-10 else np.linalg.pinv(IE2))
        W = (W + W.T) / 2
        U = np.zeros_like(Phi)
        for i in range(ng):
            for j in range(i, ng):
                term = W[i, j] * (QQ[i, j] - PP[i] @ Phi @ PP[j])
                U += term if i == j else term + term.T
        PhiA = Phi + 2 * Phi @ U @ Phi
        df = _lb_ddf(cv, Phi, PP, W)
        return _t_test(float(cv @ self.params.to_numpy()), float(cv @ PhiA @ cv), df)


def _t_test(est: float, var: float, df: float) -> TTest:
    se = float(np.sqrt(var))
    t = est / se if se > 0 else float("nan")
    p = float(2 * stats.t.sf(abs(t), df)) if np.isfinite(df) and df > 0 else float("nan")
    return TTest(est, se, float(df), t, p)


def _lb_ddf(cv: np.ndarray, V0: np.ndarray, P: list[np.ndarray], W: np.ndarray) -> float:
    """Return pbkrtest's ``Lb_ddf`` (Kenward-Roger denominator df) for one contrast row."""
    L = cv[None, :]
    Theta = L.T @ np.linalg.solve(L @ V0 @ L.T, L)
    ThetaV0 = Theta @ V0
    A1 = A2 = 0.0
    ng = len(P)
    for i in range(ng):
        for j in range(i, ng):
            e = 1.0 if i == j else 2.0
            ui = ThetaV0 @ P[i] @ V0
            uj = ThetaV0 @ P[j] @ V0
            A1 += e * W[i, j] * np.trace(ui) * np.trace(uj)
            A2 += e * W[i, j] * np.sum(ui * uj.T)
    q = 1
    B = (A1 + 6 * A2) / (2 * q)
    g = ((q + 1) * A1 - (q + 4) * A2) / ((q + 2) * A2)
    den = 3 * q + 2 * (1 - g)
    c1, c2, c3 = g / den, (q - g) / den, (q + 2 - g) / den
    v0 = 1 + c1 * B
    v0 = 0.0 if abs(v0) < 1e-10 else v0
    v1, v2 = 1 - c2 * B, 1 - c3 * B
    num = 1 - A2 / q
    ratio = 1.0 if abs(num) < 1e-14 and abs(v1) < 1e-14 else num / v1
    rho = ratio**2 * v0 / v2 / q
    return float(4 + (q + 2) / (q * rho - 1))


@dataclass
class _Dense:
    """Dense ``n x n`` pieces of a fit for the df computations (variance parameters in lmerTest's
    order: every term's ``theta`` (scaled units), then the residual SD ``sigma``)."""

    fit: GeneralFit
    S: list[np.ndarray]  # same-level matrices per term
    Zc: list[np.ndarray]  # scaled design values per term (n x q)
    lams: list[np.ndarray]
    sigma: float
    W: np.ndarray
    Vinv: np.ndarray
    Phi: np.ndarray
    P: np.ndarray
    index: list[tuple[int, int, int]]  # theta index -> (term, row, col)

    @classmethod
    def of(cls, fit: GeneralFit) -> _Dense:
        n = fit.n
        S = [t.same_level() for t in fit._terms]
        Zc = [t.values for t in fit._terms]
        lams, pos, index = [], 0, []
        for k, t in enumerate(fit._terms):
            nt = t.spec.n_theta()
            lams.append(t.lam(fit._theta_scaled[pos : pos + nt]))
            index += [(k, i, j) for i, j in t.spec.entries()]
            pos += nt
        W = np.eye(n)
        for s_, z, lam in zip(S, Zc, lams, strict=True):
            W += s_ * (z @ lam @ lam.T @ z.T)
        sigma = float(np.sqrt(fit.var_residual))
        V = sigma**2 * W
        Vinv = cho_solve(cho_factor(V), np.eye(n))
        X = fit._X
        Phi = np.linalg.inv(X.T @ Vinv @ X)
        VX = Vinv @ X
        P = Vinv - VX @ Phi @ VX.T
        return cls(fit, S, Zc, lams, sigma, W, Vinv, Phi, P, index)

    @property
    def k(self) -> int:
        return len(self.index) + 1

    def _unit(self, i: int) -> tuple[int, np.ndarray]:
        k, r, c = self.index[i]
        E = np.zeros_like(self.lams[k])
        E[r, c] = 1.0
        return k, E

    def _embed(self, k: int, M: np.ndarray) -> np.ndarray:
        z = self.Zc[k]
        return self.S[k] * (z @ M @ z.T)

    def dV(self, i: int) -> np.ndarray:
        """Return ``dV/d(parameter i)``."""
        if i == len(self.index):
            return 2.0 * self.sigma * self.W
        k, E = self._unit(i)
        lam = self.lams[k]
        return self.sigma**2 * self._embed(k, E @ lam.T + lam @ E.T)

    def d2V(self, i: int, j: int) -> np.ndarray | None:
        """Return ``d2V/d(parameter i)d(parameter j)`` (``None`` when zero)."""
        last = len(self.index)
        if i == last and j == last:
            return 2.0 * self.W
        if j == last or i == last:
            return 2.0 / self.sigma * self.dV(min(i, j))
        ki, Ei = self._unit(i)
        kj, Ej = self._unit(j)
        if ki != kj:
            return None
        return self.sigma**2 * self._embed(ki, Ei @ Ej.T + Ej @ Ei.T)

    def linear_G(self) -> list[np.ndarray]:
        """Return pbkrtest's ``G`` matrices: ``dV`` per random-effect variance or covariance
        (lower triangle, column-major, per term), then the identity (residual variance)."""
        out = []
        for k, t in enumerate(self.fit._terms):
            q = t.q
            pairs = t.spec.entries() if t.spec.correlated else [(i, i) for i in range(q)]
            for i, j in pairs:
                E = np.zeros((q, q))
                E[i, j] = E[j, i] = 1.0
                out.append(self._embed(k, E))
        out.append(np.eye(self.fit.n))
        return out


#: Designs built by :func:`_design`, by formula and the data's content (a reduction rule fits
#: one formula with several random structures; patsy costs more than a fit's optimisation).
_DESIGNS: dict[tuple[str, bytes], tuple[np.ndarray, np.ndarray, list[str], tuple]] = {}


def _design(data: pd.DataFrame, formula: str) -> tuple[np.ndarray, np.ndarray, list[str], tuple]:
    """Return ``(y, X, names, warnings)`` of ``formula`` on ``data`` (patsy via statsmodels),
    memoised on the formula and a hash of the index and values of the columns it names."""
    cols = _formula_columns(formula, data)
    h = hashlib.sha256(repr(cols).encode())
    h.update(np.asarray(data.index).tobytes())
    for c in cols:
        h.update(pd.util.hash_pandas_object(data[c], index=False).to_numpy().tobytes())
        h.update(str(data[c].dtype).encode())
    key = (formula, h.digest())
    if key not in _DESIGNS:
        if len(_DESIGNS) > 512:
            _DESIGNS.clear()
        _DESIGNS[key] = formula_design(data, formula)
    y, X, names, msgs = _DESIGNS[key]
    return y.copy(), X.copy(), list(names), msgs


def _starts(terms: Sequence[RandomTerm]) -> list[np.ndarray]:
    """lme4's start (``Lambda = I``) and two rescaled copies."""
    base = np.concatenate([[1.0 if i == j else 0.0 for i, j in t.entries()] for t in terms])
    return [base, 0.3 * base, 3.0 * base]


@_single_thread_blas
def fit_general(
    data: pd.DataFrame,
    formula: str,
    terms: Sequence[RandomTerm],
    *,
    reml: bool = True,
    start: GeneralFit | None = None,
) -> GeneralFit:
    """Fit ``formula`` (fixed part, statsmodels/patsy syntax) plus the random ``terms``.

    Rows with a missing value in a formula, term or grouping column are dropped. The deviance
    (lme4's profiled REML, or ML with ``reml=False``) is minimised over ``theta`` (diagonal of
    ``Lambda`` >= 0, unit-RMS design columns) by L-BFGS-B with the exact gradient
    (:func:`_value_grad`) from lme4's start ``Lambda = I`` (then from 0.3 and 3 times it
    only while no start has converged), then, if a diagonal entry ends below 1e-3, once more
    from the best point with those entries set to 0.1; the lowest deviance is kept. (With
    finite-difference gradients all three starts ran; on the study's 240 moderation and
    behaviour fits the first start with the restart reaches the same optimum or a lower
    one.) ``start``: a fit with the same random terms on the same rows (e.g. the model with
    one more fixed effect) whose optimum is tried first. Returns a :class:`GeneralFit`.
    """
    terms = tuple(terms)
    if not terms:
        raise ValueError("fit_general needs at least one random term")
    groups = [t.group for t in terms]
    if len(set(groups)) != len(groups):
        raise ValueError("one random term per grouping factor (merge them)")
    cols = _formula_columns(formula, data)
    cols += [c for t in terms for c in t.columns if c != "1" and c not in cols]
    d = data.dropna(subset=cols + groups).reset_index(drop=True)
    if len(d) == 0:
        raise ValueError(f"fit_general: no complete rows for {formula!r}")
    y, X, names, msgs = _design(d, formula)
    if len(y) <= X.shape[1]:
        raise ValueError(f"fit_general: {len(y)} rows for {X.shape[1]} fixed effects")
    tdata = []
    for t in terms:
        vals = np.column_stack(
            [np.ones(len(d)) if c == "1" else d[c].to_numpy(dtype=float) for c in t.columns]
        )
        scale = np.sqrt(np.mean(vals**2, axis=0))
        scale[scale == 0] = 1.0
        codes = _codes(d[t.group])
        tdata.append(_Term(codes, vals / scale, scale, int(codes.max()) + 1, t))
    first = None
    if start is not None and start.terms == terms and start.n == len(y):
        first = start._theta_scaled
    return _fit_arrays(y, X, names, tuple(tdata), formula, reml, first, msgs, precise=True)


@_single_thread_blas
def refit(
    fit: GeneralFit,
    y: np.ndarray,
    *,
    X: np.ndarray | None = None,
    names: Sequence[str] | None = None,
    reml: bool | None = None,
    warm: bool = True,
    precise: bool = False,
) -> GeneralFit:
    """Return ``fit``'s model refitted to response ``y`` (same rows and random terms; outcome
    units), optionally with another fixed-effect design ``X`` (columns ``names``) or
    criterion (``reml``). ``warm``: start from ``fit``'s ``theta`` only, with L-BFGS-B
    tolerances ``ftol`` 1e-11 and ``gtol`` 1e-7 instead of 1e-15 and 1e-10 (bootstrap refits:
    the deviance to ~1e-8, a quarter of the evaluations). ``precise``: start from ``fit``'s
    ``theta`` with the tolerances of :func:`fit_general`, then, unless that ends at an
    interior optimum, from :func:`fit_general`'s starts (a full fit with a good first
    start)."""
    X = fit._X if X is None else np.asarray(X, dtype=float)
    names = list(fit.params.index) if names is None else list(names)
    reml = fit.reml if reml is None else reml
    start = fit._theta_scaled if warm or precise else None
    return _fit_arrays(
        np.asarray(y, dtype=float), X, names, fit._terms, fit.formula, reml, start, (), precise
    )


@_single_thread_blas
def refit_llf_batch(fit: GeneralFit, Y: np.ndarray, *, reml: bool | None = None) -> np.ndarray:
    """Return the maximised REML (or ML with ``reml=False``) log-likelihoods of ``fit``'s model
    refitted to each response ``Y[b]`` (B x n, outcome units; same rows, design and random
    terms), as :func:`refit` with ``warm=True`` would give them: the design's statistics are
    computed once and shared (only ``y``'s row and column of ``R'R`` and ``Z'R`` change per
    response), and each response is refitted by L-BFGS-B (``ftol`` 1e-11, ``gtol`` 1e-7) from
    ``fit``'s ``theta`` with exact gradients (:func:`_value_grad`). A response with a diagonal entry of ``Lambda`` below 1e-3 is
    restarted with those entries at 0.1 (as :func:`refit`) and keeps the lower deviance.
    Returns B log-likelihoods (lme4's scale; NaN where the deviance could not be evaluated).
    """
    reml = fit.reml if reml is None else reml
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    nb = len(Y)
    X = fit._X
    s = _Stats.of(fit._y, X, fit._terms)
    te = fit._terms[s.e]
    Rd = np.column_stack(
        [fit._terms[k].design().toarray() for k, _, _ in s.rest] + [X]
    )  # n x (m - 1)
    m = s.RtR.shape[0]
    ZtR = np.broadcast_to(s.ZtR, (nb, *s.ZtR.shape)).copy()
    ZtR[..., -1] = np.asarray(te.design().T @ Y.T).T.reshape(nb, te.n_levels, te.q)
    RtR = np.broadcast_to(s.RtR, (nb, m, m)).copy()
    Rty = Y @ Rd
    RtR[:, -1, :-1] = Rty
    RtR[:, :-1, -1] = Rty
    RtR[:, -1, -1] = np.einsum("bi,bi->b", Y, Y)
    terms = tuple(t.spec for t in fit._terms)
    lower = np.concatenate([[0.0 if i == j else -np.inf for i, j in t.entries()] for t in terms])
    opts = {"ftol": 1e-11, "gtol": 1e-7, "maxiter": 5000, "maxfun": 50000}
    start = np.maximum(fit._theta_scaled, lower)
    out = np.full(nb, np.nan)
    lay = s.layout()
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for b in range(nb):
            zr, rr = lay.columns(s, ZtR[b]), RtR[b]

            def f(th: np.ndarray, zr: np.ndarray = zr, rr: np.ndarray = rr) -> tuple:
                try:
                    return _value_grad(th, s, reml, zr, rr)
                except (np.linalg.LinAlgError, FloatingPointError):
                    return np.inf, np.zeros_like(th)

            res = _lbfgsb(f, start, lower, opts)
            best_x, best_f = np.asarray(res.x, dtype=float), float(res.fun)
            zero = (lower == 0) & (best_x < 1e-3)
            if zero.any() and np.isfinite(best_f):
                x0 = best_x.copy()
                x0[zero] = 0.1
                res = _lbfgsb(f, x0, lower, opts)
                best_f = min(best_f, float(res.fun)) if res.fun < best_f - 1e-12 else best_f
            if np.isfinite(best_f):
                out[b] = -best_f / 2
    return out


class _Result(NamedTuple):
    """What :func:`_lbfgsb` returns: scipy's ``OptimizeResult`` fields used here."""

    x: np.ndarray
    fun: float
    status: int


def _lbfgsb(
    f: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    lower: np.ndarray,
    opts: dict[str, float],
) -> _Result:
    """Minimise ``f`` (value and gradient) from ``x0`` over ``x >= lower`` (``-inf``: free) by
    L-BFGS-B with ``opts`` (``ftol``, ``gtol``, ``maxiter``, ``maxfun``): what
    ``scipy.optimize.minimize(f, x0, jac=True, method="L-BFGS-B", bounds=..., options=opts)``
    returns, the same iterates (:func:`_setulb_driver_matches` checks it once per process),
    driving scipy's L-BFGS-B routine directly without the wrapper objects, which cost about
    as much per evaluation as a small model's deviance. With another scipy, ``minimize``."""
    if _setulb_driver_matches():
        return _lbfgsb_direct(f, x0, lower, opts)
    return _scipy_lbfgsb(f, x0, lower, opts)


def _lbfgsb_direct(
    f: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    lower: np.ndarray,
    opts: dict[str, float],
) -> _Result:
    """:func:`_lbfgsb` by scipy's private ``setulb`` (scipy >= 1.15's signature), driven as
    ``scipy.optimize._lbfgsb_py._minimize_lbfgsb`` drives it (no callback; ``f`` evaluated
    once per distinct point, the first time at the clipped ``x0``)."""
    from scipy.optimize import _lbfgsb as lb

    n, m, maxls = len(x0), 10, 20
    finite = np.isfinite(lower)
    low = np.where(finite, lower, 0.0)
    nbd = finite.astype(np.int32)
    x = np.clip(np.asarray(x0, dtype=np.float64).ravel(), lower, np.inf)
    last = x.copy()
    fx, gx = f(last.copy())
    nfev = 1
    fval: float | np.ndarray = np.array(0.0)
    g = np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task = np.zeros(2, dtype=np.int32)
    ln_task = np.zeros(2, dtype=np.int32)
    lsave = np.zeros(4, dtype=np.int32)
    isave = np.zeros(44, dtype=np.int32)
    dsave = np.zeros(29)
    factr, pgtol = opts["ftol"] / np.finfo(float).eps, opts["gtol"]
    it = 0
    while True:
        g = np.asarray(g, dtype=np.float64).copy()
        lb.setulb(m, x, low, np.zeros(n), nbd, fval, g, factr, pgtol, wa, iwa, task, lsave,
                  isave, dsave, maxls, ln_task)  # fmt: skip
        if task[0] == 3:  # f and g at x
            if not np.array_equal(x, last):
                last = x.copy()
                fx, gx = f(last.copy())
                nfev += 1
            fval, g = fx, np.atleast_1d(gx)
        elif task[0] == 1:  # a new iteration
            it += 1
            if it >= opts["maxiter"]:
                task[0], task[1] = 5, 504
            elif nfev > opts["maxfun"]:
                task[0], task[1] = 5, 502
        else:
            break
    status = 0 if task[0] == 4 else (1 if nfev > opts["maxfun"] or it >= opts["maxiter"] else 2)
    return _Result(x, float(fval), status)


def _scipy_lbfgsb(
    f: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    lower: np.ndarray,
    opts: dict[str, float],
) -> _Result:
    """:func:`_lbfgsb` by ``scipy.optimize.minimize``."""
    bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]
    res = minimize(f, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)
    return _Result(np.asarray(res.x, dtype=float), float(res.fun), int(res.status))


@functools.cache
def _setulb_driver_matches() -> bool:
    """Return whether :func:`_lbfgsb`'s direct driver reproduces ``scipy.optimize.minimize``
    exactly (iterates, value, status) on a small bounded problem with this scipy; False when
    scipy's private routine has another signature."""
    A = np.array([[3.0, 1.0, 0.2], [1.0, 2.0, 0.3], [0.2, 0.3, 1.0]])
    b = np.array([1.0, -2.0, 0.5])

    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        r = A @ x - b
        return float(r @ r + np.sin(x).sum()), 2.0 * A.T @ r + np.cos(x)

    lower = np.array([0.0, -np.inf, 0.0])
    opts = {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 5000, "maxfun": 50000}
    try:
        ours = _lbfgsb_direct(f, np.ones(3), lower, opts)
    except Exception:  # noqa: BLE001 (another scipy: its private routine differs)
        return False
    ref = _scipy_lbfgsb(f, np.ones(3), lower, opts)
    return bool(np.array_equal(ours.x, ref.x) and ours.fun == ref.fun and ours.status == ref.status)


def _fit_arrays(
    y: np.ndarray,
    X: np.ndarray,
    names: list[str],
    tdata: tuple[_Term, ...],
    formula: str,
    reml: bool,
    start: np.ndarray | None,
    msgs: tuple[str, ...],
    precise: bool = False,
) -> GeneralFit:
    """Return the :class:`GeneralFit` of arrays ``y``, ``X`` and prepared terms (see
    :func:`fit_general`; ``start``: a single start in scaled units instead of the three)."""
    terms = tuple(t.spec for t in tdata)
    s = _Stats.of(y, X, tdata)
    lower = np.concatenate([[0.0 if i == j else -np.inf for i, j in t.entries()] for t in terms])

    def f(th: np.ndarray) -> tuple[float, np.ndarray]:
        try:
            return _schur_value_grad(th, s, reml)
        except (np.linalg.LinAlgError, FloatingPointError):
            return np.inf, np.zeros_like(th)

    loose = start is not None and not precise
    opts = {"ftol": 1e-11 if loose else 1e-15, "gtol": 1e-7 if loose else 1e-10}
    opts |= {"maxiter": 5000, "maxfun": 50000}
    best_x, best_f, ok = None, np.inf, False
    starts = [] if start is None else [np.maximum(start, lower)]
    if start is None or precise:
        starts += _starts(terms)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for x0 in starts:
            res = _lbfgsb(f, x0, lower, opts)
            if res.fun < best_f - 1e-12:
                best_x, best_f, ok = np.asarray(res.x, dtype=float), float(res.fun), res.status != 1
            if best_x is not None and ok:
                break  # converged with the exact gradient: the other starts are fallbacks
        if best_x is None:
            raise FloatingPointError("fit_general: deviance not finite at any start")
        # Restart from the best point with every zero diagonal pushed off the boundary (zero
        # is a stationary point of the deviance in theta, so the optimiser can stop there).
        zero = (lower == 0) & (best_x < 1e-3)
        if zero.any():
            x0 = best_x.copy()
            x0[zero] = 0.1
            res = _lbfgsb(f, x0, lower, opts)
            if res.fun < best_f - 1e-12:
                best_x, best_f = np.asarray(res.x, dtype=float), float(res.fun)
                ok = res.status != 1
    crit, beta, xtwx_inv, s2 = _evaluate(best_x, s, reml)
    if not ok:
        msgs = msgs + ("ConvergenceWarning: L-BFGS-B stopped at its iteration limit",)
    cov = pd.DataFrame(s2 * xtwx_inv, index=names, columns=names)
    theta_raw, vc_rows, pos, singular = [], [], 0, False
    for t in tdata:
        nt = t.spec.n_theta()
        th = best_x[pos : pos + nt]
        pos += nt
        lam = t.lam(th) / t.scale[:, None]  # back to the covariates' units
        theta_raw += [lam[i, j] for i, j in t.spec.entries()]
        singular |= any(
            v < SINGULAR_TOL for v, (i, j) in zip(th, t.spec.entries(), strict=True) if i == j
        )
        cov_re = s2 * lam @ lam.T
        for j in range(t.q):
            vc_rows.append((t.spec.group, t.spec.columns[j], "", cov_re[j, j]))
        if t.spec.correlated:
            for j in range(t.q):
                for i in range(j + 1, t.q):
                    vc_rows.append(
                        (t.spec.group, t.spec.columns[j], t.spec.columns[i], cov_re[i, j])
                    )
    return GeneralFit(
        formula=formula,
        terms=terms,
        reml=reml,
        n=len(y),
        n_levels={t.spec.group: t.n_levels for t in tdata},
        params=pd.Series(beta, index=names),
        bse=pd.Series(np.sqrt(np.diag(cov.to_numpy())), index=names),
        cov_params=cov,
        theta=np.asarray(theta_raw),
        varcorr=_varcorr(vc_rows),
        var_residual=float(s2),
        llf=-crit / 2,
        converged=ok,
        singular=bool(singular),
        warnings=msgs,
        _X=X,
        _y=y,
        _terms=tdata,
        _theta_scaled=best_x,
    )


def _varcorr(rows: list[tuple[str, str, str, float]]) -> pd.DataFrame:
    """Return lme4's ``as.data.frame(VarCorr(.))`` layout: ``group, var1, var2, vcov, sdcor``."""
    vc = pd.DataFrame(rows, columns=["group", "var1", "var2", "vcov"])
    sd = {(g, v): np.sqrt(max(x, 0.0)) for g, v, w, x in rows if w == ""}
    sdcor = []
    for g, a, b, x in rows:
        if b == "":
            sdcor.append(sd[(g, a)])
        else:
            den = sd[(g, a)] * sd[(g, b)]
            sdcor.append(x / den if den > 0 else np.nan)
    vc["sdcor"] = sdcor
    return vc


def simulate_general(fit: GeneralFit, rng: np.random.Generator) -> np.ndarray:
    """Return one response vector simulated from ``fit`` (same design; outcome units):
    ``X beta + sum_k Z_k sigma Lambda_k u_k + sigma e`` with standard normal ``u``, ``e``."""
    sigma = np.sqrt(fit.var_residual)
    y = fit._X @ fit.params.to_numpy()
    pos = 0
    for t in fit._terms:
        nt = t.spec.n_theta()
        lam = t.lam(fit._theta_scaled[pos : pos + nt])
        pos += nt
        b = rng.standard_normal((t.n_levels, t.q)) @ lam.T * sigma
        y = y + np.einsum("ij,ij->i", t.values, b[t.codes])
    return y + sigma * rng.standard_normal(fit.n)
