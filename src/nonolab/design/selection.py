"""Puzzle selection for a new study: K puzzles from a pool that carry the most information.

Pools (:func:`load_pool`): the workflow's pool folder (``results/pool``: ``pool.csv`` and
``metrics.csv``, one solver and encoding), or any puzzle file with a table of SAT metrics
(``--metrics``, rows in the file's order or keyed by ``puzzle_hash``); the public study's pool
(``nonograms10x10.txt``, one puzzle a line: ``column clues;row clues|solution bits``, with
``nonogram_solver_stats.csv``) is read by :func:`read_packed_pool`.

Criterion (docs/decisions.md, "Study design: puzzle selection"). The planned analyses regress
puzzle difficulty (Bradley-Terry strength, or behaviour through a mixed model) on the target
metrics ``x = log1p(metric)``, standardised over the eligible pool (mean 0, SD 1, so the units
do not depend on the selection). For puzzle-level effects the information about the slopes is
proportional to ``M = X'X / K`` with ``X = [1, x_1, ..., x_p]`` over the K selected puzzles, and
the D-criterion ``D = det(M)^(1/(p+1))`` (:func:`d_criterion`) rewards both the spread of each
metric (one metric: ``D^2`` is its variance over the selection) and low correlation between the
metrics (their effects can be separated); ``D`` is per puzzle, so designs with different K
compare. :func:`select_puzzles` maximises it by Fedorov's exchange algorithm (:func:`exchange`,
the one exchange of every criterion here and in :mod:`nonolab.design.discriminate`: each selected
puzzle in turn swapped for the eligible candidate that most increases ``det``, by the matrix
determinant lemma for all candidates at once (:func:`log_det_scores`), until no swap helps),
from several seeded random starts. Constraints filter the eligible pool first (:class:`Constraints`: unique solution,
size, line-solvable or not, fill range, a top fraction of the metric dropped as in the paper).
:func:`criterion_comparison` reports ``D`` of the selection against random selections of the
same size from the same eligible pool and against any other selection (the paper's six).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nonolab.sat.puzzles import Puzzle, PuzzleError
from nonolab.study.schemas import read_csv

#: the solver metrics the study's analyses use
DEFAULT_METRICS = ("conflicts", "decisions", "propagations")


class SelectionError(ValueError):
    """A pool or a selection request cannot be satisfied."""


@dataclass(frozen=True)
class Constraints:
    """Which pool puzzles are eligible.

    ``unique``: require a unique solution (puzzles whose uniqueness is unknown are checked
    with MiniSat22, :func:`nonolab.sat.solvers.uniqueness`); ``size``: ``(height, width)`` or
    None for any; ``line_solvable``: True / False to require / exclude puzzles that line
    propagation alone solves, None for either; ``fill``: (min, max) share of filled cells;
    ``drop_top``: share of the pool with the highest ``drop_metric`` left out (the paper drops
    the top 5% by conflicts as outliers; 0 keeps all).
    """

    unique: bool = True
    size: tuple[int, int] | None = None
    line_solvable: bool | None = None
    fill: tuple[float, float] = (0.0, 1.0)
    drop_top: float = 0.05
    drop_metric: str = "conflicts"

    def record(self) -> dict[str, object]:
        """Return the constraints as a plain mapping (plan and provenance)."""
        return {
            "unique": self.unique,
            "size": list(self.size) if self.size else None,
            "line_solvable": self.line_solvable,
            "fill": list(self.fill),
            "drop_top": self.drop_top,
            "drop_metric": self.drop_metric,
        }


# ----------------------------------------------------------------------------------------------
# pools


def read_packed_pool(path: str | Path) -> list[Puzzle]:
    """Return the puzzles of a packed pool file: one puzzle a line, ``c_1;...;c_W;r_1;...;r_H|
    bits`` (column clues first) with each clue's blocks joined by ``.`` (``0`` = empty line)
    and the solution as ``H*W`` 0/1 characters row by row (the public study's ``nonograms10x10.txt``). Labels are
    the 1-based line numbers (the pool statistics' ``puzzle_id``). The clues are checked
    against the solution; raises :class:`SelectionError` naming the line."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            clues, bits = line.strip().split("|")
            fields = clues.split(";")
            cells = len(bits)
            side = math.isqrt(cells)
            # H + W clue fields and H * W cells: the roots of t^2 - (H+W) t + H W
            s, p = len(fields), cells
            disc = s * s - 4 * p
            if disc < 0 or math.isqrt(disc) ** 2 != disc:
                raise SelectionError(f"{len(fields)} clue lines do not fit {cells} cells")
            h = (s - math.isqrt(disc)) // 2 if side * side != cells else side
            w = cells // h
            grid = [[int(bits[r * w + c]) for c in range(w)] for r in range(h)]
            parse = [[int(b) for b in f.split(".")] for f in fields]
            p_ = Puzzle(rows=parse[w:], cols=parse[:w], solution=grid, label=str(n))
        except (ValueError, PuzzleError) as exc:
            raise SelectionError(f"{path}:{n}: not a packed puzzle line ({exc})") from None
        out.append(p_)
    return out


def _pool_frame(puzzles: Sequence[Puzzle], metrics: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for i, p in enumerate(puzzles):
        assert p.solution is not None
        rows.append(
            {
                "pool_index": i,
                "pool_id": p.label if p.label is not None else str(i),
                "puzzle_hash": p.hash,
                "height": p.height,
                "width": p.width,
                "fill": sum(map(sum, p.solution)) / (p.height * p.width),
            }
        )
    df = pd.DataFrame(rows)
    df["puzzle"] = list(puzzles)
    return pd.concat([df, metrics.reset_index(drop=True)], axis=1)


def load_pool(
    pool: str | Path,
    metrics: str | Path | None = None,
    *,
    solver: str = "minisat22",
    encoding: str = "block_start",
) -> pd.DataFrame:
    """Return a candidate pool: one row per puzzle with ``pool_index``, ``pool_id``,
    ``puzzle_hash``, ``height``, ``width``, ``fill`` (share of filled cells), ``puzzle`` (the
    :class:`~nonolab.sat.puzzles.Puzzle`, with its solution), the metric counts
    (``decisions``, ``propagations``, ``conflicts``, ...) and ``unique`` (True when known
    unique, else NA: checked by :func:`eligible`).

    ``pool``: the workflow's pool folder (``pool.csv`` + ``metrics.csv``: the ``solver`` x
    ``encoding`` rows with status ``sat``; ``excluded.csv`` repeats dropped; generated puzzles
    are unique by construction), a packed pool file (``.txt``, :func:`read_packed_pool`) or
    any puzzle file :func:`nonolab.measure.puzzle_files.read_puzzles` reads, with ``metrics``:
    a CSV of metrics in the file's order (the study's pool statistics format,
    :func:`nonolab.measure.tables.read_pool_statistics`, or any table with the metric columns),
    or keyed by a ``puzzle_hash`` column. Puzzles without a solution are refused.
    """
    from nonolab.measure.sweep import puzzle_from_record

    path = Path(pool)
    if path.is_dir():
        pt = read_csv(path / "pool.csv")
        mt = read_csv(path / "metrics.csv")
        mt = mt[(mt["solver"] == solver) & (mt["encoding"] == encoding) & (mt["status"] == "sat")]
        if (path / "excluded.csv").exists():
            ex = read_csv(path / "excluded.csv")
            pt = pt[~pt["pool_index"].isin(ex["pool_index"])]
        pt = pt.merge(
            mt.drop(columns=["puzzle_hash"], errors="ignore"), on="pool_index", how="inner"
        )
        puzzles = [puzzle_from_record(r) for _, r in pt.iterrows()]
        keep = [c for c in ("variables", "clauses", *DEFAULT_METRICS, "restarts") if c in pt]
        out = _pool_frame(puzzles, pt[keep])
        out["pool_id"] = pt["pool_index"].astype(str).to_numpy()
        out["unique"] = True
        return out
    if metrics is None:
        raise SelectionError(f"{path}: a puzzle file needs a metrics table (--metrics)")
    if path.suffix.lower() == ".txt" and "|" in path.read_text(encoding="utf-8")[:2000]:
        puzzles = read_packed_pool(path)
    else:
        from nonolab.measure.puzzle_files import read_puzzles

        puzzles = read_puzzles(path)
    if any(p.solution is None for p in puzzles):
        raise SelectionError(f"{path}: every pool puzzle needs its solution")
    mt = read_csv(metrics)
    if "nvars_input" in mt.columns:
        from nonolab.measure.tables import read_pool_statistics

        mt = read_pool_statistics(metrics)
    if "puzzle_hash" in mt.columns:
        mt = mt.drop_duplicates("puzzle_hash").set_index("puzzle_hash")
        missing = [p.hash for p in puzzles if p.hash not in mt.index]
        if missing:
            raise SelectionError(f"{metrics}: no metrics for {len(missing)} pool puzzles")
        mt = mt.loc[[p.hash for p in puzzles]].reset_index(drop=True)
    elif len(mt) != len(puzzles):
        raise SelectionError(
            f"{metrics}: {len(mt)} metric rows for {len(puzzles)} puzzles in {path}"
        )
    keep = [c for c in ("variables", "clauses", *DEFAULT_METRICS, "restarts") if c in mt]
    out = _pool_frame(puzzles, mt[keep])
    out["unique"] = pd.array([pd.NA] * len(out), dtype="boolean")
    dup = out["puzzle_hash"].duplicated()
    return out[~dup].reset_index(drop=True)


def eligible(pool: pd.DataFrame, constraints: Constraints) -> pd.DataFrame:
    """Return the pool rows that meet ``constraints`` (see :class:`Constraints`), with
    ``unique`` and ``line_solvable`` filled in where they were checked.

    Order of the filters: size, fill, top-fraction drop (by rank over the whole pool, as the
    paper's selection), then the checks that need a solver (line propagation; uniqueness with
    MiniSat22) on what remains."""
    from nonolab.sat.linesolver import Contradiction, propagation_fixpoint
    from nonolab.sat.solvers import uniqueness

    d = pool.copy()
    if constraints.drop_top > 0:
        m = d[constraints.drop_metric].astype(float)
        n_drop = int(math.floor(constraints.drop_top * len(d)))
        order = np.argsort(-m.to_numpy(), kind="stable")
        dropped = np.zeros(len(d), dtype=bool)
        dropped[order[:n_drop]] = True
        d = d[~dropped]  # the n_drop highest, ties by pool order
    if constraints.size is not None:
        h, w = constraints.size
        d = d[(d["height"] == h) & (d["width"] == w)]
    lo, hi = constraints.fill
    d = d[(d["fill"] >= lo) & (d["fill"] <= hi)]
    if constraints.line_solvable is not None:
        ls = []
        for p in d["puzzle"]:
            try:
                st = propagation_fixpoint(p)
                ls.append(bool(st.is_complete()))
            except Contradiction:
                ls.append(False)
        d = d.assign(line_solvable=ls)
        d = d[d["line_solvable"] == constraints.line_solvable]
    if constraints.unique:
        u = d["unique"].astype("boolean")
        checked = [
            bool(x) if not pd.isna(x) else uniqueness(p).status == "unique"
            for x, p in zip(u, d["puzzle"], strict=True)
        ]
        d = d.assign(unique=checked)
        d = d[d["unique"]]
    return d.reset_index(drop=True)


# ----------------------------------------------------------------------------------------------
# criterion and exchange


#: with ``distinct``, at most one selected puzzle in this many shares a value of the primary
#: metric (24 puzzles: at most 3 with the same value; the straight-line D-optimum of the public
#: pool has 8 with 0 conflicts)
TIE_SHARE = 8

#: selection criteria: D-optimal for straight-line effects of the metrics (puzzles at the
#: extremes), or for a quadratic in the first (primary) metric beside the others' lines
#: (puzzles also in the middle of the range, so that curvature can be seen)
CRITERIA = ("d_linear", "d_quadratic")


def design_matrix(
    pool: pd.DataFrame, metrics: Sequence[str], criterion: str = "d_linear"
) -> np.ndarray:
    """Return ``[1, x_1, ..., x_p]`` per pool row: ``x = log1p(metric)`` standardised over
    ``pool`` (population SD; a constant metric raises :class:`SelectionError`); with
    ``criterion`` ``d_quadratic`` also ``x_1^2 - 1`` (the primary metric's curvature)."""
    if criterion not in CRITERIA:
        raise SelectionError(f"unknown selection criterion {criterion!r}; known: {CRITERIA}")
    cols = [np.ones(len(pool))]
    for m in metrics:
        x = np.log1p(pool[m].to_numpy(dtype=float))
        sd = x.std()
        if not sd > 0:
            raise SelectionError(f"metric {m!r} is constant over the eligible pool")
        cols.append((x - x.mean()) / sd)
    if criterion == "d_quadratic":
        cols.append(cols[1] ** 2 - 1.0)
    return np.column_stack(cols)


def d_criterion(X: np.ndarray) -> float:
    """Return ``det(X'X / K)^(1/q)`` of a K x q design (0 when singular): the D-criterion per
    puzzle (unitless, in the pool-standardised log-metric scale)."""
    k, q = X.shape
    sign, logdet = np.linalg.slogdet(X.T @ X / k)
    return float(math.exp(logdet / q)) if sign > 0 else 0.0


def log_det_scores(X: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Return ``score(rest)``: ``log det`` of ``X_rest' X_rest + x x'`` for every row ``x`` of
    ``X`` at once (the matrix determinant lemma, ``log det A + log1p(x' A^-1 x)``; a singular or
    ill-conditioned ``A`` evaluates every candidate directly), the D-criterion's score for
    :func:`exchange`."""

    def score(rest: np.ndarray) -> np.ndarray:
        A = X[rest].T @ X[rest]
        sign, base = np.linalg.slogdet(A)
        if sign > 0 and np.linalg.cond(A) < 1e10:
            return np.log1p(np.einsum("ij,jk,ik->i", X, np.linalg.inv(A), X)) + base
        return np.array([np.linalg.slogdet(A + np.outer(x, x))[1] for x in X], dtype=float)

    return score


def exchange(
    score: Callable[[np.ndarray], np.ndarray],
    n: int,
    start: np.ndarray,
    max_rounds: int = 100,
    *,
    values: np.ndarray | None = None,
    cap: int = 1,
) -> np.ndarray:
    """Return a selection (sorted indices into ``n`` candidates) improved from ``start`` by
    Fedorov exchanges, the one exchange of every selection criterion (D-optimal here with
    :func:`log_det_scores`, the discriminating criterion of :mod:`nonolab.design.discriminate`):
    each selected index in turn is swapped for the unselected candidate that maximises
    ``score(rest)[candidate]`` when that beats the current one by more than a relative 1e-10
    (from a selection scoring ``-inf``, any finite score), until a round makes no swap.
    ``score(rest)`` returns the criterion of ``rest`` plus each of the ``n`` candidates. With
    ``values`` (one per candidate) a swap never brings in a value ``cap`` other selected
    candidates already have (a selection that starts within the cap stays within it)."""
    sel = np.array(start, dtype=int).copy()
    for _ in range(max_rounds):
        improved = False
        for i in range(len(sel)):
            rest = np.delete(sel, i)
            gain = np.array(score(rest), dtype=float)
            cur = gain[sel[i]]
            taken = np.zeros(n, dtype=bool)
            taken[sel] = True
            if values is not None:  # no value ``cap`` other selected candidates have
                u, c = np.unique(values[rest], return_counts=True)
                taken |= np.isin(values, u[c >= cap])
            gain[taken] = -np.inf
            j = int(np.argmax(gain))
            better = (
                gain[j] > cur + 1e-10 * max(1.0, abs(cur))
                if np.isfinite(cur)
                else np.isfinite(gain[j])  # from a singular selection any regular one is better
            )
            if better:
                sel[i] = j
                improved = True
        if not improved:
            break
    return np.sort(sel)


def select_puzzles(
    pool: pd.DataFrame,
    k: int,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    seed: int = 0,
    starts: int = 20,
    criterion: str = "d_linear",
    distinct: bool = False,
    max_tied: int | None = None,
) -> np.ndarray:
    """Return the row positions in ``pool`` (already :func:`eligible`) of the K puzzles that
    maximise :func:`d_criterion` of :func:`design_matrix` for ``metrics`` and ``criterion``
    (Fedorov exchange from ``starts`` seeded random starts; the best kept, ties by the lowest
    sorted positions); ``distinct``: few ties in the primary (first) metric: at most
    ``ceil(K / TIE_SHARE)`` selected puzzles share a value (``max_tied`` when given), or the
    fewest the pool allows, ``ceil(K / distinct values in the pool)``, when that is more. Raises :class:`SelectionError` when the pool has
    fewer than ``k`` puzzles or ``k`` is below the number of parameters."""
    X = design_matrix(pool, metrics, criterion)
    n, q = X.shape
    values = pool[metrics[0]].to_numpy(dtype=float) if distinct else None
    if k > n:
        raise SelectionError(f"{k} puzzles requested from an eligible pool of {n}")
    cap = 1
    if values is not None:
        u, c = np.unique(values, return_counts=True)
        cap = max(-(-k // len(u)), -(-k // TIE_SHARE) if max_tied is None else max_tied)
        while np.minimum(c, cap).sum() < k:  # values with few puzzles: a higher cap
            cap += 1
    if k < q:
        raise SelectionError(f"{k} puzzles cannot separate {q - 1} effects: need >= {q}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, k]))
    score = log_det_scores(X)
    best, best_val = None, -np.inf
    for _ in range(starts):
        if values is None:
            start = rng.choice(n, k, replace=False)
        else:  # random puzzles, at most ``cap`` per value
            order = rng.permutation(n)
            rank = pd.Series(values[order]).groupby(values[order]).cumcount().to_numpy()
            start = rng.choice(order[rank < cap], k, replace=False)
        sel = exchange(score, n, start, values=values, cap=cap)
        val = d_criterion(X[sel])
        if val > best_val + 1e-12 or (
            abs(val - best_val) <= 1e-12 and best is not None and tuple(sel) < tuple(best)
        ):
            best, best_val = sel, val
    assert best is not None
    return best


def random_criteria(
    pool: pd.DataFrame, k: int, metrics: Sequence[str], n_draws: int, seed: int
) -> np.ndarray:
    """Return :func:`d_criterion` of ``n_draws`` random K-subsets of ``pool`` (seeded)."""
    X = design_matrix(pool, metrics)
    rng = np.random.default_rng(np.random.SeedSequence([seed, k, 1]))
    return np.array([d_criterion(X[rng.choice(len(X), k, replace=False)]) for _ in range(n_draws)])


COMPARISON_COLUMNS = [
    "selection",
    "n_puzzles",
    "d_criterion",
    "d_efficiency",
    "random_share_below",
    *(f"{m}_sd" for m in DEFAULT_METRICS),
    "max_abs_metric_correlation",
    "distinct_values",
    "puzzles_sharing_a_value",
]


def selection_summary(
    name: str,
    values: pd.DataFrame,
    pool: pd.DataFrame,
    metrics: Sequence[str],
    reference: float,
    random: np.ndarray | None = None,
) -> dict[str, object]:
    """Return one :data:`COMPARISON_COLUMNS` row for the puzzles ``values`` (metric columns),
    standardised with ``pool``'s log-metric mean and SD.

    ``d_efficiency`` = D / ``reference`` (the optimal selection's D); ``random_share_below``:
    share of the ``random`` selections' D below this one; ``<metric>_sd``: SD of the
    standardised log metric over the selection; ``max_abs_metric_correlation``: the largest
    |Pearson r| between two target metrics over the selection."""
    pool_x = {m: np.log1p(pool[m].to_numpy(dtype=float)) for m in metrics}
    z = {
        m: (np.log1p(values[m].to_numpy(dtype=float)) - pool_x[m].mean()) / pool_x[m].std()
        for m in metrics
    }
    X = np.column_stack([np.ones(len(values)), *(z[m] for m in metrics)])
    d = d_criterion(X)
    row: dict[str, object] = {
        "selection": name,
        "n_puzzles": int(len(values)),
        "d_criterion": d,
        "d_efficiency": d / reference if reference > 0 else float("nan"),
        "random_share_below": float((random < d).mean()) if random is not None else None,
    }
    for m in DEFAULT_METRICS:
        row[f"{m}_sd"] = float(z[m].std()) if m in z else None
    if len(metrics) > 1:
        c = np.corrcoef(np.vstack([z[m] for m in metrics]))
        row["max_abs_metric_correlation"] = float(np.abs(c[np.triu_indices(len(metrics), 1)]).max())
    else:
        row["max_abs_metric_correlation"] = None
    v = values[metrics[0]].to_numpy(dtype=float)
    u, c = np.unique(v, return_counts=True)
    row["distinct_values"] = int(len(u))  # of the primary (first) metric
    row["puzzles_sharing_a_value"] = int(c[c > 1].sum())
    return row


def random_summary(name: str, random: np.ndarray, k: int, reference: float) -> dict[str, object]:
    """Return a :data:`COMPARISON_COLUMNS` row for random selections of ``k`` puzzles: their
    median D and its efficiency against ``reference``."""
    med = float(np.median(random))
    return {
        "selection": name,
        "n_puzzles": k,
        "d_criterion": med,
        "d_efficiency": med / reference if reference > 0 else float("nan"),
        "random_share_below": 0.5,
    }


def pool_metric_json(pool: pd.DataFrame) -> str:
    """Return the pool's metric columns as compact JSON (for provenance)."""
    return json.dumps(pool[[c for c in DEFAULT_METRICS if c in pool]].to_dict("list"))


def pool_scales(
    pool: pd.DataFrame, metric: str, values: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``values`` of ``metric`` on the pool's scales: (normal scores of their mid-rank
    percentiles in ``pool``, ``Phi^-1((#below + #equal / 2) / n)`` clipped to (1/(2n), 1 -
    1/(2n)); log1p z-scores with the pool's mean and population SD). The latent difficulty of
    the power simulation depends on these (:class:`nonolab.design.power.Design`)."""
    from scipy import special

    ref = np.sort(pool[metric].to_numpy(dtype=float))
    v = np.asarray(values, dtype=float)
    n = len(ref)
    below = np.searchsorted(ref, v, side="left")
    equal = np.searchsorted(ref, v, side="right") - below
    pct = np.clip((below + equal / 2) / n, 0.5 / n, 1 - 0.5 / n)
    lx = np.log1p(ref)
    z = (np.log1p(v) - lx.mean()) / lx.std()
    return special.ndtri(pct), z
