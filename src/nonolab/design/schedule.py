"""Balanced schedules: which M of K puzzles each session serves, and in which order.

Construction (:func:`balanced_schedule`; docs/decisions.md, "Study design: schedules"). Sessions
come in blocks of K. Block ``b`` has an offset vector ``a = (0, a_1, ..., a_{M-1})`` of distinct
residues mod K and serves, in session ``s`` of the block, the puzzles ``(s + a_j) mod K`` in
position order ``j``. Within a block every puzzle is therefore served exactly once in every
position (a Latin rectangle), whatever ``a``: a study stopped after any whole block is exactly
position-balanced, and after a partial block off by at most one per puzzle and position.

Carry-over (which puzzle immediately follows which) is balanced across blocks: session ``s``
contributes the ordered pair ``(x, x + d)`` for each consecutive difference ``d = a_{j+1} -
a_j`` (mod K), so a block contributes every ordered pair with difference ``d`` exactly once, and
the carry-over counts are equal for all K(K-1) ordered pairs exactly when the blocks' consecutive
differences cover the K-1 non-zero residues equally often. With M = K and K even, one block with
the Williams base sequence ``0, 1, K-1, 2, K-2, ...`` does this (its differences are all
distinct): the Williams design. Otherwise no single block can, and the blocks are chosen one at
a time (a documented greedy optimisation): each next block's offset vector minimises the sum of
squares of the cumulative counts of consecutive differences, then of the within-session
differences ``+-(a_l - a_j)`` (how often each unordered pair of puzzles meets in a session, the
Bradley-Terry comparisons), ties broken by the seeded random order of the candidates. After every
``(K-1)/gcd(K-1, M-1)`` blocks the consecutive differences are covered equally when the greedy
finds a cover (it does for the designs tested; :func:`schedule_balance` reports what was
achieved). Finally the puzzle labels are permuted at random (seeded) and the sessions of each
block shuffled: neither changes any balance count of a whole block.

:func:`schedule_balance` measures a schedule (any list of sessions, e.g. the paper's) after its
first ``n`` sessions.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: candidate offset vectors enumerated per block up to this many, else sampled
MAX_CANDIDATES = 20_000


@dataclass(frozen=True)
class Schedule:
    """A schedule: ``sessions`` (n x M puzzle ids 0..K-1 in serving order), ``block_size``
    (sessions per block), ``method`` (``williams`` or ``greedy-cyclic``)."""

    n_puzzles: int
    sessions: np.ndarray
    block_size: int
    method: str

    @property
    def per_session(self) -> int:
        """Puzzles per session (M)."""
        return int(self.sessions.shape[1])


def williams_base(k: int) -> list[int]:
    """Return the Williams base sequence ``0, 1, k-1, 2, k-2, ...`` (length ``k``); for even
    ``k`` its consecutive differences mod ``k`` are all distinct."""
    out = [0]
    lo, hi = 1, k - 1
    for i in range(1, k):
        if i % 2:
            out.append(lo)
            lo += 1
        else:
            out.append(hi)
            hi -= 1
    return out


def _candidates(k: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Return offset vectors ``(0, a_1, ..., a_{m-1})`` of distinct residues, (n, m), in a seeded
    random order: all of them when there are at most :data:`MAX_CANDIDATES`, else a sample."""
    total = math.perm(k - 1, m - 1)
    if total <= MAX_CANDIDATES:
        c = np.array([(0, *t) for t in itertools.permutations(range(1, k), m - 1)], dtype=int)
        return c[rng.permutation(len(c))]
    rows = np.argsort(rng.random((MAX_CANDIDATES, k - 1)), axis=1)[:, : m - 1] + 1
    return np.column_stack([np.zeros(len(rows), dtype=int), rows])


def _diffs(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (consecutive differences, within-session differences both ways) of offset
    vectors ``a`` (n, m), as (n, m-1) and (n, m(m-1)) residues mod ``k``."""
    cons = (a[:, 1:] - a[:, :-1]) % k
    i, j = np.triu_indices(a.shape[1], 1)
    d = (a[:, j] - a[:, i]) % k
    return cons, np.concatenate([d, (-d) % k], axis=1)


def balanced_schedule(n_puzzles: int, per_session: int, n_sessions: int, seed: int) -> Schedule:
    """Return a schedule of ``n_sessions`` sessions serving ``per_session`` of ``n_puzzles``
    puzzles each (see the module docstring for the construction and its guarantees).

    Deterministic for a given ``seed``. Raises ``ValueError`` unless ``1 <= per_session <=
    n_puzzles`` and ``n_sessions >= 1``.
    """
    k, m = n_puzzles, per_session
    if not 1 <= m <= k:
        raise ValueError(f"per_session must be between 1 and n_puzzles ({k}), got {m}")
    if n_sessions < 1:
        raise ValueError("need at least one session")
    rng = np.random.default_rng(np.random.SeedSequence([seed, k, m]))
    n_blocks = -(-n_sessions // k)
    if m == k and k % 2 == 0:
        offsets = [np.array(williams_base(k))] * n_blocks
        method = "williams"
    elif m == 1:
        offsets = [np.zeros(1, dtype=int)] * n_blocks
        method = "cyclic"
    else:
        cand = _candidates(k, m, rng)
        cons, within = _diffs(cand, k)
        c_cons = np.zeros(k)
        c_within = np.zeros(k)
        offsets = []
        for _ in range(n_blocks):
            # sum of squares after adding a candidate = const + 2 sum(counts[d]) + #repeats
            g_cons = c_cons[cons].sum(axis=1) + _repeats(cons)
            g_within = c_within[within].sum(axis=1) + _repeats(within)
            best = np.lexsort((g_within, g_cons))[0]
            offsets.append(cand[best])
            np.add.at(c_cons, cons[best], 1)
            np.add.at(c_within, within[best], 1)
        method = "greedy-cyclic"
    relabel = rng.permutation(k)
    blocks = []
    for a in offsets:
        s = (np.arange(k)[:, None] + np.asarray(a)[None, :]) % k
        blocks.append(relabel[s][rng.permutation(k)])
    sessions = np.concatenate(blocks)[:n_sessions]
    return Schedule(k, sessions, k, method)


def _repeats(d: np.ndarray) -> np.ndarray:
    """Return, per row, ``sum_v C(c_v, 2)`` with ``c_v`` the times value ``v`` occurs in the row:
    adding the row to counts ``n`` raises ``sum n^2`` by ``2 (n[row].sum() + this) + len(row)``."""
    s = np.sort(d, axis=1)
    out = np.zeros(len(d))
    run = np.ones(len(d))
    for j in range(1, d.shape[1]):
        same = s[:, j] == s[:, j - 1]
        run = np.where(same, run + 1, 1)
        out += np.where(same, run - 1, 0)  # sum of c^2 = n + 2 * sum C(c, 2)
    return out


BALANCE_COLUMNS = [
    "design",
    "sessions",
    "n_puzzles",
    "per_session",
    "exposures_min",
    "exposures_max",
    "position_min",
    "position_max",
    "position_chi2",
    "carryover_min",
    "carryover_max",
    "carryover_pairs_seen",
    "carryover_pairs_total",
    "pair_min",
    "pair_max",
    "pairs_never_met",
    "pairs_total",
    "distinct_sequences",
]


def schedule_balance(
    sessions: Sequence[Sequence[int]] | np.ndarray,
    n_puzzles: int,
    design: str = "",
    n: int | None = None,
) -> dict[str, object]:
    """Return the balance of the first ``n`` sessions (all by default) as one row of
    :data:`BALANCE_COLUMNS`.

    ``exposures``: times each puzzle is served (min, max over puzzles); ``position``: times each
    puzzle is served in each position (min, max over puzzle x position cells) and the chi-square
    statistic of that table against equal counts; ``carryover``: times each ordered pair of
    distinct puzzles is served consecutively (min, max over all K(K-1) ordered pairs, and how
    many pairs occur at all); ``pair``: times each unordered pair meets in a session (the
    Bradley-Terry comparisons); ``distinct_sequences``: number of distinct ordered sessions.
    """
    s = np.asarray(sessions, dtype=int)
    if n is not None:
        s = s[:n]
    k = n_puzzles
    m = s.shape[1]
    expo = np.bincount(s.ravel(), minlength=k)
    pos = np.zeros((k, m))
    for j in range(m):
        pos[:, j] = np.bincount(s[:, j], minlength=k)
    expected = len(s) / k
    chi2 = float(((pos - expected) ** 2 / expected).sum()) if expected > 0 else float("nan")
    carry = np.zeros((k, k))
    for j in range(m - 1):
        np.add.at(carry, (s[:, j], s[:, j + 1]), 1)
    pair = np.zeros((k, k))
    for a, b in itertools.combinations(range(m), 2):
        np.add.at(pair, (s[:, a], s[:, b]), 1)
    pair = pair + pair.T
    off = ~np.eye(k, dtype=bool)
    iu = np.triu_indices(k, 1)
    return {
        "design": design,
        "sessions": int(len(s)),
        "n_puzzles": k,
        "per_session": m,
        "exposures_min": int(expo.min()),
        "exposures_max": int(expo.max()),
        "position_min": int(pos.min()),
        "position_max": int(pos.max()),
        "position_chi2": chi2,
        "carryover_min": int(carry[off].min()) if m > 1 else 0,
        "carryover_max": int(carry[off].max()) if m > 1 else 0,
        "carryover_pairs_seen": int((carry[off] > 0).sum()),
        "carryover_pairs_total": k * (k - 1),
        "pair_min": int(pair[iu].min()) if m > 1 else 0,
        "pair_max": int(pair[iu].max()) if m > 1 else 0,
        "pairs_never_met": int((pair[iu] == 0).sum()),
        "pairs_total": k * (k - 1) // 2,
        "distinct_sequences": int(len({tuple(r) for r in s.tolist()})),
    }


def balance_text(row: dict[str, object]) -> str:
    """Return, in plain words, what a :func:`schedule_balance` row achieves: positions,
    first-order carry-over (which puzzle directly follows which) and pairs that meet."""
    n, m = int(row["sessions"]), int(row["per_session"])
    seen, total = int(row["carryover_pairs_seen"]), int(row["carryover_pairs_total"])
    never, pairs = int(row["pairs_never_met"]), int(row["pairs_total"])
    pmin, pmax = int(row["position_min"]), int(row["position_max"])
    pos = (
        f"every puzzle is served exactly {pmin} times in each of the {m} positions"
        if pmin == pmax
        else f"a puzzle is served {pmin} to {pmax} times in a position"
    )
    need_carry = -(-total // max(m - 1, 1))
    need_meet = -(-pairs // max(m * (m - 1) // 2, 1))
    cmin, cmax = int(row["carryover_min"]), int(row["carryover_max"])
    if m < 2:
        carry = "one puzzle per session: no carry-over"
    elif cmin == cmax:
        carry = f"first-order carry-over is balanced: each of the {total} ordered puzzle pairs "
        carry += f"is served directly one after the other {cmin} times"
    elif seen == total:
        carry = f"every one of the {total} ordered puzzle pairs is served directly one after "
        carry += f"the other, but {cmin} to {cmax} times: first-order carry-over is nearly, not "
        carry += "exactly, balanced"
    else:
        carry = f"first-order carry-over is NOT balanced: only {seen} of the {total} ordered "
        carry += f"puzzle pairs are ever served directly one after the other ({total - seen} "
        carry += f"never are); every ordered pair once needs at least {need_carry} sessions "
        carry += f"of {m} puzzles"
    meet = (
        f"every one of the {pairs} puzzle pairs meets in a session ({int(row['pair_min'])} to "
        f"{int(row['pair_max'])} times)"
        if never == 0
        else f"{never} of the {pairs} puzzle pairs never meet in a session (every pair once "
        f"needs at least {need_meet} sessions)"
    )
    return f"Over {n} sessions {pos}; {carry}; {meet}."


def balance_table(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """Return balance rows (:func:`schedule_balance`) as a table in :data:`BALANCE_COLUMNS`."""
    return pd.DataFrame(list(rows), columns=BALANCE_COLUMNS)


def read_schedule_file(path: str) -> np.ndarray:
    """Return the sequences of a platform schedule file (JSON ``{"sequences": [...]}`` or a
    list), e.g. the public study's ``assignment_schedule_6puzzles_3perms.json``, as (n, M)."""
    import json
    from pathlib import Path

    data = json.loads(Path(path).read_text(encoding="utf-8"))
    seqs = data["sequences"] if isinstance(data, dict) else data
    return np.asarray(seqs, dtype=int)
