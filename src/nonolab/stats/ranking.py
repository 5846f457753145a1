"""Bradley-Terry ranking of reported difficulty (METHODS 7).

Data format, stated once: a *comparisons* table with columns ``participant_id``, ``winner``,
``loser`` (item labels; the winner is the puzzle rated harder) and ``weight`` (1 for a decided
pair; a tie gives two rows, one each way, with weight 0.5). Within each participant every pair of
rated puzzles is one comparison.

The maximum-likelihood fit uses choix (``ilsr_pairwise`` with no regularisation, whose fixed point
is the ML estimate; about 30x faster than ``opt_pairwise``) on ``(winner, loser)`` index pairs in
which each decided comparison appears twice and each tie once each way (so every data point has
weight 1/2); the log-likelihood of the strengths is the weighted sum of
``log sigmoid(theta_w - theta_l)``. The bootstrap runs the same I-LSR iteration on all resamples
at once (:func:`ilsr_dense_batch`): one choix call per resample costs about 1 ms of Python and
LAPACK-wrapper overhead per resample for a 6 x 6 problem, which made two 5,000-resample
bootstraps take about 15 s of CPU.

The ML estimate exists (is finite and unique up to a constant) exactly when the directed *win
graph* (an edge ``winner -> loser`` for every comparison, both ways for a tie) is strongly
connected: every item can be reached from every other by a chain of wins (Zermelo 1929; Ford
1957). Otherwise some set of items never loses to the rest, the likelihood keeps rising as their
strengths go to infinity, and choix's ILSR does not converge. The check uses
``scipy.sparse.csgraph.connected_components(connection="strong")``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import choix
import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import log_expit

COMPARISON_COLUMNS = ["participant_id", "winner", "loser", "weight"]

Weighting = Literal["k", "k2"]
"""How a participant drawn ``k`` times in a bootstrap resample counts: ``"k"`` (``k`` copies of
each of their comparisons, the participant bootstrap) or ``"k2"`` (``k**2`` copies: the published
analysis concatenated the drawn participants' rows and then formed pairs within each participant
id, so every pair of copies also made comparisons)."""


class NotStronglyConnectedError(ValueError):
    """The directed win graph is not strongly connected: the Bradley-Terry ML is unbounded."""

    def __init__(self, components: list[list]) -> None:
        self.components = components
        shown = "; ".join("{" + ", ".join(map(str, c)) + "}" for c in components)
        super().__init__(
            f"the comparison (win) graph is not strongly connected (components: {shown}): no "
            "chain of wins leads from some items to the others, so the Bradley-Terry ML "
            "estimate is unbounded"
        )


def pairwise_comparisons(
    ratings: pd.DataFrame,
    rating_col: str = "final_difficulty",
    item_col: str = "puzzle_id",
    participant_col: str = "participant_id",
) -> pd.DataFrame:
    """Return the within-participant comparisons table (see module docstring).

    Rows with a missing rating are skipped. Raises ``ValueError`` when a participant rated the
    same item twice.
    """
    df = ratings[[participant_col, item_col, rating_col]].dropna(subset=[rating_col])
    dup = df.duplicated([participant_col, item_col])
    if dup.any():
        bad = df.loc[dup, [participant_col, item_col]].iloc[0].tolist()
        raise ValueError(f"participant {bad[0]!r} rated item {bad[1]!r} more than once")
    rows = []
    for pid, g in df.sort_values([participant_col, item_col]).groupby(participant_col, sort=True):
        recs = list(zip(g[item_col], g[rating_col], strict=True))
        for (a, ra), (b, rb) in itertools.combinations(recs, 2):
            if ra > rb:
                rows.append((pid, a, b, 1.0))
            elif rb > ra:
                rows.append((pid, b, a, 1.0))
            else:
                rows.append((pid, a, b, 0.5))
                rows.append((pid, b, a, 0.5))
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def _choix_data(comparisons: pd.DataFrame, items: Sequence) -> list[tuple[int, int]]:
    idx = {k: i for i, k in enumerate(items)}
    unknown = set(comparisons["winner"]).union(comparisons["loser"]) - set(idx)
    if unknown:
        raise ValueError(f"comparisons mention items not in the item list: {sorted(unknown)}")
    data: list[tuple[int, int]] = []
    for w, lo, wt in zip(
        comparisons["winner"], comparisons["loser"], comparisons["weight"], strict=True
    ):
        reps = int(round(wt * 2))
        if abs(reps - wt * 2) > 1e-9:
            raise ValueError(f"comparison weight {wt} is not a multiple of 1/2")
        data.extend([(idx[w], idx[lo])] * reps)
    return data


def log_likelihood(theta: np.ndarray, comparisons: pd.DataFrame, items: Sequence) -> float:
    """Return the Bradley-Terry log-likelihood (nats) of log-strengths ``theta`` (item order)."""
    idx = {k: i for i, k in enumerate(items)}
    w = comparisons["winner"].map(idx).to_numpy()
    lo = comparisons["loser"].map(idx).to_numpy()
    theta = np.asarray(theta, dtype=float)
    return float(np.sum(comparisons["weight"].to_numpy() * log_expit(theta[w] - theta[lo])))


def _win_adjacency(data: Sequence[tuple[int, int]], n_items: int) -> np.ndarray:
    """Return the boolean adjacency matrix (winner row, loser column) of choix index pairs."""
    adj = np.zeros((n_items, n_items), dtype=bool)
    if len(data):
        w, lo = np.asarray(data, dtype=int).T
        adj[w, lo] = True
    return adj


def _strong_labels(adj: np.ndarray) -> tuple[int, np.ndarray]:
    """Return the number of strongly connected components of ``adj`` and each node's label."""
    n, labels = connected_components(adj, directed=True, connection="strong")
    return int(n), labels


def win_graph_components(comparisons: pd.DataFrame, items: Sequence) -> list[list]:
    """Return the strongly connected components of the directed win graph (lists of items, in
    item order, ordered by their first item); one component means the ML estimate exists."""
    n, labels = _strong_labels(_win_adjacency(_choix_data(comparisons, items), len(items)))
    groups: dict[int, list] = {}
    for item, lab in zip(items, labels, strict=True):
        groups.setdefault(int(lab), []).append(item)
    return list(groups.values()) if n > 1 else [list(items)]


def fit_log_strengths(comparisons: pd.DataFrame, items: Sequence, tol: float = 1e-10) -> np.ndarray:
    """Return the ML log-strengths (item order, centred to mean 0) fitted by choix.

    Raises :class:`NotStronglyConnectedError` (a ``ValueError``) when the win graph is not
    strongly connected (the ML estimate is infinite), e.g. when an item never wins or never
    loses, and ``RuntimeError`` if choix still does not converge.
    """
    components = win_graph_components(comparisons, items)
    if len(components) > 1:
        raise NotStronglyConnectedError(components)
    return _fit_data(_choix_data(comparisons, items), len(items), tol)


def _fit_data(data: list[tuple[int, int]], n_items: int, tol: float = 1e-10) -> np.ndarray:
    """Return choix's ML log-strengths centred to mean 0; the caller checks connectivity."""
    theta = choix.ilsr_pairwise(n_items, data, alpha=0.0, tol=tol, max_iter=10_000)
    return np.asarray(theta, dtype=float) - float(np.mean(theta))


def normalised_strengths(theta: np.ndarray) -> np.ndarray:
    """Return strengths ``exp(theta)`` scaled to geometric mean 1 (unitless)."""
    theta = np.asarray(theta, dtype=float)
    return np.exp(theta - theta.mean(axis=-1, keepdims=True))


def lr_test(comparisons: pd.DataFrame, items: Sequence) -> dict[str, float]:
    """Return the likelihood-ratio test of the fitted model against equal strengths.

    Keys: ``chi2`` (2 x log-likelihood difference), ``df`` (items - 1), ``p`` (chi-square upper
    tail), ``loglik`` and ``loglik_null`` (nats), ``n_comparisons`` (participant pairs).
    """
    theta = fit_log_strengths(comparisons, items)
    ll1 = log_likelihood(theta, comparisons, items)
    ll0 = log_likelihood(np.zeros(len(items)), comparisons, items)
    chi2 = max(2.0 * (ll1 - ll0), 0.0)
    df = len(items) - 1
    return {
        "chi2": chi2,
        "df": df,
        "p": float(stats.chi2.sf(chi2, df)),
        "loglik": ll1,
        "loglik_null": ll0,
        "n_comparisons": float(comparisons["weight"].sum()),
    }


@dataclass(frozen=True)
class Bootstrap:
    """Participant-bootstrap log-strengths.

    ``theta``: (resamples used x items) log-strengths, natural log, centred; ``n_not_connected``:
    resamples skipped because their win graph is not strongly connected (ML unbounded);
    ``n_not_converged``: resamples skipped because choix did not converge, found no stationary
    distribution or gave non-finite values; ``weighting``: see :data:`Weighting`.
    """

    theta: np.ndarray
    n_not_connected: int
    n_not_converged: int
    seed: int
    weighting: Weighting = "k"

    @property
    def n_used(self) -> int:
        """Number of resamples fitted (rows of ``theta``)."""
        return len(self.theta)

    @property
    def n_failed(self) -> int:
        """Number of resamples skipped, for any reason."""
        return self.n_not_connected + self.n_not_converged


def _strongly_connected_batch(adj: np.ndarray) -> np.ndarray:
    """Return, for each boolean adjacency matrix of ``adj`` (graphs x n x n), whether the graph
    is strongly connected: one scipy ``connected_components`` call on the block-diagonal union
    of the graphs (no edges between blocks, so each block's components are its own)."""
    g, n, _ = adj.shape
    b, i, j = np.nonzero(adj)
    union = csr_matrix((np.ones(len(b)), (b * n + i, b * n + j)), shape=(g * n, g * n))
    _, labels = connected_components(union, directed=True, connection="strong")
    labels = labels.reshape(g, n)
    return (labels == labels[:, :1]).all(axis=1)


def strongly_connected_batch(adj: np.ndarray) -> np.ndarray:
    """Return, per boolean adjacency matrix of ``adj`` (graphs x n x n), whether the win graph
    is strongly connected, i.e. whether its Bradley-Terry ML estimate exists
    (:func:`fit_log_strengths` raises :class:`NotStronglyConnectedError` otherwise)."""
    return _strongly_connected_batch(np.asarray(adj, dtype=bool))


def _stationary_batch(chain: np.ndarray) -> np.ndarray:
    """Return the stationary distributions (rows scaled to sum ``n``) of the generators
    ``chain`` (batch x n x n, zero row sums), as ``choix.utils.statdist`` does for one: the last
    state's mass is fixed at 1 and one (redundant) balance equation is dropped. A batch member
    whose system is singular gets NaN."""
    n = chain.shape[-1]
    a = chain.transpose(0, 2, 1)
    lhs, rhs = a[:, :-1, :-1], -a[:, :-1, -1]
    try:
        x = np.linalg.solve(lhs, rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        x = np.full(rhs.shape, np.nan)
        for m in range(len(x)):
            try:
                x[m] = np.linalg.solve(lhs[m], rhs[m])
            except np.linalg.LinAlgError:
                pass
    res = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    return (n / res.sum(axis=1, keepdims=True)) * res


def ilsr_dense_batch(
    wins: np.ndarray, tol: float = 1e-9, max_iter: int = 10_000
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``choix.ilsr_pairwise_dense(wins[b], alpha=0, tol=tol, max_iter=max_iter)`` for every
    win-count matrix ``wins[b]`` (batch x n x n, winner row) at once.

    Each step is choix's: the LSR Markov chain with rates ``wins[w, l] / (s_w + s_l)`` from the
    current strengths (1 at the start, then choix's ``exp_transform`` of the last estimate), its
    stationary distribution (:func:`_stationary_batch`), log and centre; a matrix is done when the
    L1 distance between successive centred estimates is at most ``tol * n`` (choix's
    ``NormOfDifferenceTest``). Returns ``(theta, ok)``: log-strengths centred to mean 0 (batch x
    n; NaN where not ok) and whether each converged within ``max_iter`` steps to finite values
    (choix would raise or return non-finite values otherwise).
    """
    wins = np.asarray(wins, dtype=float)
    g, n, _ = wins.shape
    theta = np.full((g, n), np.nan)
    ok = np.zeros(g, dtype=bool)
    rates = wins.transpose(0, 2, 1)  # rates[l, w]: the chain moves from loser to winner
    active = np.arange(g)
    strengths = np.ones((g, n))
    prev: np.ndarray | None = None
    diag = np.arange(n)
    for _ in range(max_iter):
        if not len(active):
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            chain = rates[active] / (strengths[:, :, None] + strengths[:, None, :])
            chain[:, diag, diag] -= chain.sum(axis=2)
            logp = np.log(_stationary_batch(chain))
            params = logp - logp.mean(axis=1, keepdims=True)
        finite = np.isfinite(params).all(axis=1)
        done = np.zeros(len(active), dtype=bool)
        if prev is not None:
            done = np.abs(prev - params).sum(axis=1) <= tol * n
        done &= finite
        theta[active[done]] = params[done] - params[done].mean(axis=1, keepdims=True)
        ok[active[done]] = True
        keep = ~done & finite
        active, params = active[keep], params[keep]
        prev = params
        e = np.exp(params - params.mean(axis=1, keepdims=True))
        strengths = (n / e.sum(axis=1, keepdims=True)) * e
    return theta, ok


def bootstrap_log_strengths(
    comparisons: pd.DataFrame,
    items: Sequence,
    n_boot: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = 500,
    weighting: Weighting = "k",
) -> Bootstrap:
    """Resample participants with replacement ``n_boot`` times and refit each time.

    Uses ``numpy.random.default_rng(seed)`` (one ``integers`` draw of the participant indices per
    resample, participants sorted by id), so both weightings see the same resamples for the same
    seed. ``weighting="k"`` (default) counts a participant drawn ``k`` times ``k`` times;
    ``"k2"`` counts them ``k**2`` times, the published analysis's semantics (see
    :data:`Weighting`). A resample whose win graph is not strongly connected is skipped and
    counted in ``n_not_connected`` (this includes an item that never wins or never loses); a
    resample whose fit does not converge or gives non-finite values is skipped and counted in
    ``n_not_converged``.

    A resample is its win-count matrix (the drawn participants' per-pair counts, weighted by
    ``k`` or ``k**2``), fitted by :func:`ilsr_dense_batch` (choix's I-LSR, ``tol`` 1e-9, for
    ``progress_every`` resamples at a time; the same iterates as ``choix.ilsr_pairwise`` on the
    resample's index pairs up to rounding). ``progress(i, n_boot)`` is called every
    ``progress_every`` resamples. Returns a :class:`Bootstrap`.
    """
    if weighting not in ("k", "k2"):
        raise ValueError(f"weighting must be 'k' or 'k2', not {weighting!r}")
    rng = np.random.default_rng(seed)
    n_items = len(items)
    parts = sorted(comparisons["participant_id"].unique())
    by_part = {
        p: _choix_data(g, items) for p, g in comparisons.groupby("participant_id", sort=True)
    }
    # Per participant: count of each (winner, loser) index pair, in half-comparison units.
    wins = np.zeros((len(parts), n_items, n_items))
    for j, p in enumerate(parts):
        np.add.at(wins[j], tuple(np.asarray(by_part[p], dtype=int).reshape(-1, 2).T), 1.0)
    flat = wins.reshape(len(parts), n_items * n_items)
    edges = (flat > 0).astype(float)
    out, not_connected, not_converged = [], 0, 0
    step = max(int(progress_every), 1)
    for start in range(0, n_boot, step):
        stop = min(start + step, n_boot)
        draws = np.array([rng.integers(0, len(parts), size=len(parts)) for _ in range(start, stop)])
        k = np.stack([np.bincount(d, minlength=len(parts)) for d in draws]).astype(float)
        connected = _strongly_connected_batch(
            ((k > 0).astype(float) @ edges).reshape(-1, n_items, n_items) > 0
        )
        not_connected += int((~connected).sum())
        weights = k[connected] if weighting == "k" else k[connected] ** 2
        theta, ok = ilsr_dense_batch((weights @ flat).reshape(-1, n_items, n_items))
        not_converged += int((~ok).sum())
        out.append(theta[ok])
        if progress is not None:
            for i in range(start, stop):
                if (i + 1) % progress_every == 0:
                    progress(i + 1, n_boot)
    theta = np.concatenate(out) if out else np.empty((0, n_items))
    return Bootstrap(
        theta=theta,
        n_not_connected=not_connected,
        n_not_converged=not_converged,
        seed=seed,
        weighting=weighting,
    )


def _percentile_interval(
    boot: Bootstrap | None, n_items: int, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return the percentile interval of the normalised strengths (NaN without resamples)."""
    if boot is None or not len(boot.theta):
        nan = np.full(n_items, np.nan)
        return nan, nan
    a = (1 - level) / 2
    lo, hi = np.quantile(normalised_strengths(boot.theta), [a, 1 - a], axis=0)
    return lo, hi


def strengths_table(
    comparisons: pd.DataFrame,
    items: Sequence,
    boot: Bootstrap | None = None,
    level: float = 0.95,
    hashes: dict | None = None,
    published: Bootstrap | None = None,
) -> pd.DataFrame:
    """Return one row per item (table ``bt_strengths``).

    Columns: ``puzzle_id``, ``puzzle_hash``, ``strength`` (geometric mean 1), ``log_strength``
    (natural log), ``ci_low``/``ci_high`` (percentile interval of the normalised strength at
    ``level`` from ``boot``, weighting ``"k"``), ``rank`` (1 = rated hardest),
    ``ci_low_published_semantics``/``ci_high_published_semantics`` (the same from ``published``,
    weighting ``"k2"``; only when ``published`` is given: a study with a published analysis),
    ``n_boot_used``, ``n_boot_not_connected``, ``n_boot_not_converged``
    (resample counts of ``boot``; 0 without it) and ``status`` (``"ok"``, or why the point
    estimate is undefined). Interval columns are NaN without their bootstrap.

    When the full-data win graph is not strongly connected the ML estimate does not exist:
    strengths, intervals and ranks are missing and ``status`` names the components (every
    resample is then a sub-graph, so the bootstrap has no usable resample either).
    """
    for b, want in ((boot, "k"), (published, "k2")):
        if b is not None and b.weighting != want:
            raise ValueError(f"expected a bootstrap with weighting {want!r}, got {b.weighting!r}")
    n = len(items)
    status = "ok"
    try:
        s = normalised_strengths(fit_log_strengths(comparisons, items))
    except NotStronglyConnectedError as e:
        s, status = np.full(n, np.nan), f"point estimate undefined: {e}"
    lo, hi = _percentile_interval(boot, n, level)
    plo, phi = _percentile_interval(published, n, level)
    df = pd.DataFrame(
        {
            "puzzle_id": [str(k) for k in items],
            "puzzle_hash": [(hashes or {}).get(k, "") for k in items],
            "strength": s,
            "log_strength": np.log(s),
            "ci_low": lo,
            "ci_high": hi,
        }
    )
    if status == "ok":
        df["rank"] = df["strength"].rank(ascending=False, method="min").astype(int)
    else:
        df["rank"] = pd.array([pd.NA] * n, dtype="Int64")
    if published is not None:
        df["ci_low_published_semantics"] = plo
        df["ci_high_published_semantics"] = phi
    df["n_boot_used"] = boot.n_used if boot is not None else 0
    df["n_boot_not_connected"] = boot.n_not_connected if boot is not None else 0
    df["n_boot_not_converged"] = boot.n_not_converged if boot is not None else 0
    df["status"] = status
    return df
