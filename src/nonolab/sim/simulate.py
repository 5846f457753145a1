"""Study simulator: synthetic Nonogram studies in the public study's exact file format.

:func:`simulate_study` draws a whole study from a :class:`SimParams` and a seed, and
:func:`write_study` writes it in the public study's folder layout:

* ``nonograms_6.json``: the puzzles (list of ``{id, solution, clues: {rows, columns}, density}``,
  4-space indented; the name is kept whatever the number of puzzles, as the ``default`` preset
  expects);
* ``assignment_schedule_<P>puzzles_3perms.json``: ``{"version": 1, "sequences": [...]}``, the
  ordered triples sessions draw from;
* ``backend/logs/<participant>.ndjson``: one NDJSON interaction log per participant, with the
  study's event types and fields (``session_start_three``, ``survey_submit`` pre / per puzzle /
  post, ``move``, ``drag``, ``hint``, ``hint_none``, ``undo``, ``reset``, ``check_bank``,
  ``skip_puzzle``, ``puzzle_advanced``, ``completed_all_three``,
  ``ended_without_full_completion``, ``session_end``);
* ``riyad-analysis/derived/coded_responses.csv``: the coded free-text answers (one 0/1 column
  per theme / strategy code, same columns as the public file);
* ``ground_truth.json``: what the analysis should recover (true pause threshold of the gap
  mixture, true puzzle difficulties and ranking, true metric slope, theme effects, seeds).

The generative model, in short (see docs/decisions.md, "Simulation"):

* puzzles: random ``height x width`` grids with ``filled`` cells, kept when the SAT layer
  proves them unique (:func:`nonolab.sat.solvers.uniqueness`); MiniSat22 statistics on the
  block-start encoding are their solver metrics;
* latent puzzle difficulty ``D_j = scale * (s * z_j + sqrt(1 - s^2) * e_j)``, where ``z_j`` is
  the standardised ``log1p`` of the chosen metric (population SD over the study's puzzles),
  ``s`` the chosen strength (the puzzle-level correlation of ``D`` with ``z``);
* participants: latent expertise ``E_i ~ N(0, 1)`` driving the pre-survey answers, ratings,
  errors, hints and skips;
* ratings: ``y* = mean + D_j + b_E * E_i + v_i + noise``; the after-puzzle (initial) rating is
  ``y*`` rounded and clipped to 1-5, the retrospective (final) one adds a little more noise;
* inter-event gaps: i.i.d. draws from a 3-component log-normal mixture (drag speed, smooth
  chaining, reasoning pauses), so the pooled gap distribution is exactly that mixture and its
  posterior crossing is known (:meth:`GapMixture.threshold_s`);
* coded themes: each theme present with a chosen prevalence, whose log-odds shift by a chosen
  effect per rating point above 3 (so the truth of the theme-vs-difficulty tests is known).

Every random draw comes from ``numpy.random.SeedSequence(seed)`` children (puzzles,
participants one stream each, faults), so the same parameters and seed give byte-identical files,
and adding participants does not change the earlier ones.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from nonolab.sat.puzzles import Puzzle

PUZZLE_FILE = "nonograms_6.json"
LOG_DIR = "backend/logs"
CODED_FILE = "riyad-analysis/derived/coded_responses.csv"
GROUND_TRUTH = "ground_truth.json"

THEMES = ("FOOT", "CLUE", "PROP", "AMBIG", "GUESS", "HINT", "ERR", "LEARN", "LOAD", "VIS", "TIME",
          "UI", "AFF")  # fmt: skip
STRATEGIES = ("S_FORCED", "S_CONSTR", "S_OVERLAP", "S_EDGE", "S_CROSS", "S_NEG", "S_TRIAL",
              "S_HINT")  # fmt: skip
CODED_COLUMNS = (
    ["response_id", "participant_id", "source_file", "response_kind", "text", "char_len"]
    + ["word_len", "order", "puzzle_id", "final_difficulty", "immediate_difficulty"]
    + ["skill_nonogram", "codeable", "n_codes"]
    + [f"code_{c}" for c in THEMES + STRATEGIES]
    + ["codes_str"]
)
SOLVER_METRICS = ("conflicts", "decisions", "propagations")
#: line-solver metrics (:func:`nonolab.sat.linesolver.line_metrics`, depth-1 probing, no time limit)
LINE_METRICS = ("propagation_line_solves", "probes")
METRICS = SOLVER_METRICS + LINE_METRICS + ("none",)
FAULTS = (
    "non_json",
    "truncated_last_line",
    "unknown_event",
    "move_outside_grid",
    "missing_field",
    "bad_timestamp",
)
GUESS_LEVELS = ("never", "few", "many", "all")
FREQ_LEVELS = ("never", "few", "many", "regular")
SIZE_OPTIONS = ("<=10*10", "10*10", ">=10*10", "other")
LOGIC_OPTIONS = ("sudoku", "minesweeper", "battleships", "other")
START = datetime(2026, 2, 2, 9, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class GapMixture:
    """Three-component log-normal mixture of inter-event gaps (seconds).

    ``medians_s``: exp of each component's mean log gap; ``log_sds``: SD of the log gap;
    ``weights``: mixing weights. Defaults: means and weights of the published fit to the public
    study's gaps (0.012/0.794/6.014 s, 2.4/62.1/35.5 %), log-SDs from our refit of the same gaps
    (0.60/0.65/0.94).
    """

    medians_s: tuple[float, float, float] = (0.012, 0.794, 6.014)
    log_sds: tuple[float, float, float] = (0.60, 0.65, 0.94)
    weights: tuple[float, float, float] = (0.024, 0.621, 0.355)

    def __post_init__(self) -> None:
        if not (len(self.medians_s) == len(self.log_sds) == len(self.weights) == 3):
            raise ValueError("gap mixture needs exactly 3 components")
        if list(self.medians_s) != sorted(self.medians_s) or min(self.medians_s) <= 0:
            raise ValueError(f"gap medians must be positive and ascending: {self.medians_s}")
        if min(self.log_sds) <= 0 or min(self.weights) <= 0:
            raise ValueError("gap log-SDs and weights must be positive")
        if abs(sum(self.weights) - 1) > 1e-6:
            raise ValueError(f"gap weights must sum to 1: {self.weights}")

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Return ``n`` i.i.d. gaps in seconds."""
        comp = rng.choice(3, size=n, p=np.asarray(self.weights))
        mu = np.log(np.asarray(self.medians_s))[comp]
        sd = np.asarray(self.log_sds)[comp]
        return np.exp(mu + sd * rng.standard_normal(n))

    def threshold_log(self) -> float:
        """Return the natural-log gap where the middle and slowest components' posteriors are equal."""
        w, m, s = np.asarray(self.weights), np.log(self.medians_s), np.asarray(self.log_sds)

        def diff(x: float) -> float:
            return float(
                w[1] * stats.norm.pdf(x, m[1], s[1]) - w[2] * stats.norm.pdf(x, m[2], s[2])
            )

        return float(optimize.brentq(diff, m[1], m[2], xtol=1e-12))

    def threshold_s(self) -> float:
        """Return the true pause threshold in seconds (exp of :meth:`threshold_log`)."""
        return math.exp(self.threshold_log())


def _default_theme_prevalence() -> dict[str, float]:
    return {"FOOT": 0.35, "CLUE": 0.18, "PROP": 0.10, "AMBIG": 0.12, "GUESS": 0.12,
            "HINT": 0.12, "ERR": 0.06, "LEARN": 0.18, "LOAD": 0.05, "VIS": 0.08,
            "TIME": 0.02, "UI": 0.03, "AFF": 0.06}  # fmt: skip


def _default_theme_effects() -> dict[str, float]:
    # log-odds change per rating point above 3: positive = mentioned more when rated harder
    return {"FOOT": -0.7, "AMBIG": 0.7, "GUESS": 0.6, "HINT": 0.5}


def _default_strategy_prevalence() -> dict[str, float]:
    return {"S_FORCED": 0.55, "S_CONSTR": 0.2, "S_OVERLAP": 0.4, "S_EDGE": 0.15,
            "S_CROSS": 0.25, "S_NEG": 0.3, "S_TRIAL": 0.15, "S_HINT": 0.15}  # fmt: skip


@dataclass(frozen=True)
class SimParams:
    """Parameters of a simulated study (all rating-scale quantities in rating points).

    ``metric``: solver metric (MiniSat22, block-start) or line-solver metric
    (:data:`LINE_METRICS`) driving latent difficulty, or ``none``;
    ``metric_strength``: puzzle-level correlation of latent difficulty with ``z(log1p(metric))``
    (0 = the metric has no effect); ``difficulty_sd``: SD of latent puzzle difficulty;
    ``expertise_effect``: rating change per SD of expertise; ``participant_sd``: SD of a
    participant's rating bias; ``noise_sd`` / ``final_noise_sd``: residual SD of the initial
    rating and the extra SD of the retrospective (final) one. Behaviour: ``error_logit``,
    ``hint_log_rate``, ``skip_logit`` are baseline log-odds / log-rates, modulated by
    ``behaviour_difficulty_effect`` per SD of (difficulty - expertise).
    """

    n_participants: int = 30
    n_puzzles: int = 6
    height: int = 10
    width: int = 10
    filled: int = 50
    metric: str = "conflicts"
    metric_strength: float = 0.6
    difficulty_sd: float = 0.6
    rating_mean: float = 3.4
    expertise_effect: float = -0.15
    participant_sd: float = 0.4
    noise_sd: float = 0.7
    final_noise_sd: float = 0.35
    error_logit: float = -3.2
    hint_log_rate: float = 0.7
    skip_logit: float = -2.1
    reset_prob: float = 0.06
    behaviour_difficulty_effect: float = 0.6
    gaps: GapMixture = field(default_factory=GapMixture)
    theme_prevalence: Mapping[str, float] = field(default_factory=_default_theme_prevalence)
    theme_effects: Mapping[str, float] = field(default_factory=_default_theme_effects)
    strategy_prevalence: Mapping[str, float] = field(default_factory=_default_strategy_prevalence)
    faults: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.n_participants < 1:
            raise ValueError("need at least one participant")
        if self.n_puzzles < 3:
            raise ValueError("each participant sees 3 puzzles: need at least 3 puzzles")
        if not 0 < self.filled < self.height * self.width:
            raise ValueError(f"filled={self.filled} must be between 1 and height*width-1")
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; known: {METRICS}")
        if not -1 <= self.metric_strength <= 1:
            raise ValueError("metric_strength is a correlation: between -1 and 1")
        if self.metric == "none" and self.metric_strength != 0:
            raise ValueError("metric 'none' needs metric_strength 0")
        bad = [f for f in self.faults if f not in FAULTS]
        if bad:
            raise ValueError(f"unknown fault classes {bad}; known: {FAULTS}")
        for name, table, keys in (
            ("theme_prevalence", self.theme_prevalence, THEMES),
            ("theme_effects", self.theme_effects, THEMES),
            ("strategy_prevalence", self.strategy_prevalence, STRATEGIES),
        ):
            unknown = sorted(set(table) - set(keys))
            if unknown:
                raise ValueError(f"{name}: unknown codes {unknown}; known: {list(keys)}")
        for k, v in {**self.theme_prevalence, **self.strategy_prevalence}.items():
            if not 0 < v < 1:
                raise ValueError(f"prevalence of {k} must be in (0, 1), got {v}")


# ----------------------------------------------------------------------------------------------
# puzzles


def random_grid(height: int, width: int, filled: int, rng: np.random.Generator) -> list[list[int]]:
    """Return a uniformly random 0/1 grid with exactly ``filled`` filled cells."""
    flat = np.zeros(height * width, dtype=int)
    flat[rng.choice(height * width, size=filled, replace=False)] = 1
    return flat.reshape(height, width).tolist()


def solver_metrics(puzzle: Puzzle, solver: str = "minisat22") -> dict[str, int]:
    """Return decisions, propagations, conflicts of one ``solver`` run (block-start encoding)."""
    from nonolab.sat.encodings import get_encoding
    from nonolab.sat.solvers import run_solver

    res = run_solver(get_encoding("block_start")(puzzle).clauses, solver)
    return {k: int(res.stats.get(k, 0)) for k in ("decisions", "propagations", "conflicts")}


def generate_unique_puzzles(
    n: int, height: int, width: int, filled: int, rng: np.random.Generator, max_tries: int = 10000
) -> list[Puzzle]:
    """Return ``n`` distinct puzzles with a unique solution, labelled ``"0"`` .. ``str(n-1)``.

    Grids are drawn by :func:`random_grid` from ``rng`` and kept when
    :func:`nonolab.sat.solvers.uniqueness` proves them unique, so the result depends only on ``rng``.
    """
    from nonolab.sat.solvers import uniqueness

    out: list[Puzzle] = []
    seen: set[str] = set()
    for _ in range(max_tries):
        if len(out) == n:
            break
        p = Puzzle.from_grid(random_grid(height, width, filled, rng), label=str(len(out)))
        if p.hash in seen or uniqueness(p).status != "unique":
            continue
        seen.add(p.hash)
        out.append(p)
    if len(out) < n:
        raise ValueError(
            f"found only {len(out)} unique {height}x{width} puzzles in {max_tries} draws"
        )
    return out


def puzzle_records(puzzles: Sequence[Puzzle]) -> list[dict[str, Any]]:
    """Return the puzzles in the study file's layout (``id``, ``solution``, ``clues``, ``density``)."""
    out = []
    for p in puzzles:
        assert p.solution is not None
        cells = p.height * p.width
        out.append(
            {
                "id": int(p.label or 0),
                "solution": [list(r) for r in p.solution],
                "clues": p.clues_dict(),
                "density": round(sum(map(sum, p.solution)) / cells, 4),
            }
        )
    return out


def ordered_triples(n_puzzles: int, n_sessions: int, rng: np.random.Generator) -> list[list[int]]:
    """Return ``n_sessions`` ordered triples of distinct puzzle ids, balanced over puzzles.

    Each session gets the three least-served puzzles so far (ties broken at random) in random
    order, so every puzzle is served equally often up to one.
    """
    counts = np.zeros(n_puzzles)
    out: list[list[int]] = []
    for _ in range(n_sessions):
        pick = np.argsort(counts + rng.random(n_puzzles), kind="stable")[:3]
        counts[pick] += 1
        out.append([int(x) for x in rng.permutation(pick)])
    return out


# ----------------------------------------------------------------------------------------------
# ratings and truth


def cut_rating(y: float) -> int:
    """Return the 1-5 rating of latent value ``y`` (rounded, clipped)."""
    return int(min(5, max(1, math.floor(y + 0.5))))


def expected_rating(mean: np.ndarray | float, sd: float) -> np.ndarray:
    """Return E[cut_rating(Y)] for ``Y ~ N(mean, sd^2)`` (exact, via the normal CDF)."""
    mean = np.asarray(mean, dtype=float)
    cuts = np.array([1.5, 2.5, 3.5, 4.5])
    # E[R] = 1 + sum_k P(Y >= cut_k)
    return 1.0 + stats.norm.sf((cuts[None, :] - mean.reshape(-1, 1)) / sd).sum(axis=1).reshape(
        mean.shape
    )


def rating_scale_slope(params: SimParams, final: bool = True) -> float:
    """Return the true slope of the expected 1-5 rating per SD of the metric ``z``.

    The latent slope is ``difficulty_sd * metric_strength``; rounding and clipping to 1-5
    attenuate it. This is the least-squares slope of ``E[rating | z]`` on ``z`` for
    ``z ~ N(0, 1)``, integrating every other term (puzzle residual, expertise, participant bias,
    noise) as normal (Gauss-Hermite, 80 nodes). Units: rating points per SD of ``z``.
    """
    s = params.metric_strength
    b = params.difficulty_sd * s
    if b == 0:
        return 0.0
    var = (
        (params.difficulty_sd**2) * (1 - s**2)
        + params.expertise_effect**2
        + params.participant_sd**2
        + params.noise_sd**2
        + (params.final_noise_sd**2 if final else 0.0)
    )
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()
    ey = expected_rating(params.rating_mean + b * x, math.sqrt(var))
    return float(np.sum(w * x * ey) / np.sum(w * x * x))


def standardise(x: Sequence[float]) -> np.ndarray:
    """Return ``(x - mean) / population SD`` (all zeros when ``x`` is constant)."""
    a = np.asarray(x, dtype=float)
    sd = a.std()
    return np.zeros_like(a) if sd == 0 else (a - a.mean()) / sd


# ----------------------------------------------------------------------------------------------
# one attempt's event stream


def _iso(us: int) -> str:
    return (START + timedelta(microseconds=int(us))).isoformat(timespec="microseconds")


def _mismatches(board: np.ndarray, solution: np.ndarray) -> list[list[int]]:
    rows, cols = np.nonzero((board == 1) != (solution == 1))
    return [[int(r), int(c)] for r, c in zip(rows, cols, strict=True)]


@dataclass
class Attempt:
    """One simulated attempt: its events (without times yet) and outcome."""

    puzzle_id: int
    events: list[dict[str, Any]]  # interaction events, in order, without "t"
    solved: bool
    skipped: bool
    n_errors: int
    n_hints: int


def _line_plan(targets: dict[tuple[int, int], int], h: int, w: int, rng) -> list[tuple]:
    """Order ``targets`` (cell -> value) line by line: random lines, cells in line order."""
    lines = [("r", i) for i in range(h)] + [("c", j) for j in range(w)]
    order = rng.permutation(len(lines))
    plan, done = [], set()
    for k in order:
        kind, i = lines[int(k)]
        cells = [(i, j) for j in range(w)] if kind == "r" else [(j, i) for j in range(h)]
        for cell in cells:
            if cell in targets and cell not in done:
                done.add(cell)
                plan.append((cell[0], cell[1], targets[cell]))
    return plan


def simulate_attempt(
    puzzle: Puzzle,
    puzzle_id: int,
    severity: float,
    style: Mapping[str, float],
    params: SimParams,
    rng: np.random.Generator,
) -> Attempt:
    """Return one attempt's interaction events (no times) for a participant ``style``.

    ``severity``: standardised difficulty minus expertise (raises errors, hints, skips).
    ``style``: ``cross_frac`` (share of empty cells crossed), ``hint_bias`` (log-rate shift),
    ``drag_ui`` (1 = the interface logs drags as ``drag`` events).
    """
    assert puzzle.solution is not None
    sol = np.array(puzzle.solution)
    h, w = sol.shape
    k = params.behaviour_difficulty_effect
    p_err = 1 / (1 + math.exp(-(params.error_logit + k * severity)))
    n_hints = int(rng.poisson(math.exp(params.hint_log_rate + k * severity + style["hint_bias"])))
    skipped = bool(rng.random() < 1 / (1 + math.exp(-(params.skip_logit + k * severity))))
    stop_frac = float(rng.uniform(0.15, 0.9)) if skipped else 2.0
    reset_at = float(rng.uniform(0.05, 0.6)) if rng.random() < params.reset_prob else None
    n_checks = int(rng.poisson(0.25))

    targets = {(int(r), int(c)): 1 for r, c in zip(*np.nonzero(sol == 1), strict=True)}
    for r, c in zip(*np.nonzero(sol == 0), strict=True):
        if rng.random() < style["cross_frac"]:
            targets[(int(r), int(c))] = -1
    plan = _line_plan(targets, h, w, rng)
    total = len(plan)
    hint_at = sorted(int(x) for x in rng.integers(0, total, size=min(n_hints, total)))
    check_at = sorted(int(x) for x in rng.integers(1, total, size=n_checks))
    board = np.zeros_like(sol)
    events: list[dict[str, Any]] = []
    pending: list[tuple[int, int, int]] = []  # corrections of errors: (due step, r, c)
    n_err = n_hint_used = 0
    step = 0
    did_reset = False

    def move(r: int, c: int, v: int) -> None:
        board[r, c] = v
        events.append({"type": "move", "r": r, "c": c, "value": v})

    while plan:
        if step >= stop_frac * total:
            break
        if reset_at is not None and not did_reset and step >= reset_at * total:
            did_reset = True
            events.append({"type": "reset"})
            placed = {(r, c): int(board[r, c]) for r, c in zip(*np.nonzero(board), strict=True)}
            board[:] = 0
            pending.clear()
            redo = {cell: targets[cell] for cell in placed if cell in targets}
            rest = {(r, c): v for r, c, v in plan}
            plan = _line_plan({**redo, **rest}, h, w, rng)
            continue
        # pending corrections that are due
        for due in [p for p in pending if p[0] <= step]:
            pending.remove(due)
            _, r, c = due
            if board[r, c] == 1 and sol[r, c] == 0:
                move(r, c, -1 if rng.random() < 0.6 else 0)
        while hint_at and hint_at[0] <= step:
            hint_at.pop(0)
            r, c, v = plan.pop(int(rng.integers(len(plan))))
            events.append({"type": "hint", "r": r, "c": c})
            move(r, c, v)
            n_hint_used += 1
            step += 1
            if not plan:
                break
        if not plan:
            break
        while check_at and check_at[0] <= step:
            check_at.pop(0)
            mm = _mismatches(board, sol)
            if not mm:  # every filled cell already right: this check solves the puzzle
                plan.clear()
                break
            events.append(
                {"type": "check_bank", "puzzle_id": puzzle_id, "solved": False, "mismatches": mm}
            )
        if not plan:
            break
        if rng.random() < p_err:
            empties = np.argwhere((sol == 0) & (board == 0))
            if len(empties):
                r, c = (int(x) for x in empties[int(rng.integers(len(empties)))])
                move(r, c, 1)
                n_err += 1
                if rng.random() < 0.5:
                    board[r, c] = 0
                    events.append({"type": "undo", "label": "cell", "diffs_len": 1})
                else:
                    pending.append((step + int(rng.integers(1, 15)), r, c))
        r, c, v = plan.pop(0)
        # a run of same-valued cells in this line -> maybe one drag gesture
        run = [(r, c)]
        if style["drag_ui"] and rng.random() < 0.35 and board[r, c] == 0:
            step_rc: tuple[int, int] | None = None
            while plan and len(run) < 6:
                r2, c2, v2 = plan[0]
                d = (r2 - run[-1][0], c2 - run[-1][1])
                if v2 != v or d not in ((0, 1), (1, 0)) or board[r2, c2] != 0:
                    break
                if step_rc is not None and d != step_rc:
                    break
                step_rc = d
                run.append((r2, c2))
                plan.pop(0)
        if len(run) > 1 and board[r, c] == 0:
            for rr, cc in run:
                board[rr, cc] = v
            a, b = run[0], run[-1]
            events.append(
                {
                    "type": "drag",
                    "mode": "flip" if v == 1 else "cross_toggle",
                    "start": {"r": a[0], "c": a[1]},
                    "end": {"r": b[0], "c": b[1]},
                    "normalized_start": {"r": a[0], "c": a[1]},
                    "normalized_end": {"r": b[0], "c": b[1]},
                    "changed_cells": len(run),
                }
            )
            step += len(run)
        else:
            for rr, cc in run:
                move(rr, cc, v)
                step += 1
            if rng.random() < 0.01:  # second thoughts: undo a correct move and redo it
                board[r, c] = 0
                events.append({"type": "undo", "label": "cell", "diffs_len": 1})
                move(r, c, v)
    solved = False
    if not plan and not (stop_frac <= 1.0 and step >= stop_frac * total):
        for _, r, c in pending:
            if board[r, c] == 1 and sol[r, c] == 0:
                move(r, c, -1 if rng.random() < 0.6 else 0)
        pending.clear()
        if rng.random() < 0.05:
            events.append({"type": "hint_none"})
        mm = _mismatches(board, sol)
        solved = not mm
        events.append(
            {"type": "check_bank", "puzzle_id": puzzle_id, "solved": solved, "mismatches": mm}
        )
    skipped = not solved
    return Attempt(puzzle_id, events, solved, skipped, n_err, n_hint_used)


# ----------------------------------------------------------------------------------------------
# surveys and free text (synthetic phrase banks, written for the simulator)

_THEME_TEXT = {
    "FOOT": ("some lines could be filled right away", "there was no obvious line to start from"),
    "CLUE": ("the clue numbers were mostly small", "big numbers in the clues helped"),
    "PROP": ("each line I finished unlocked the next one", "the deductions chained nicely"),
    "AMBIG": ("many arrangements seemed possible", "I had to weigh several placements"),
    "GUESS": ("I had to guess at one point", "there was no certain next step"),
    "HINT": ("I needed the hint button", "a hint got me unstuck"),
    "ERR": ("a mistake early on cost me time", "I had to undo a wrong deduction"),
    "LEARN": ("I was getting used to the rules", "practice from the earlier grid helped"),
    "LOAD": ("it was hard to keep track of everything", "too much to hold in my head"),
    "VIS": ("the empty areas were confusing to look at", "starting from the edges helped"),
    "TIME": ("I felt rushed",),
    "UI": ("the cross tool was awkward",),
    "AFF": ("I felt unsure of myself", "it was satisfying"),
}
_STRATEGY_TEXT = {
    "S_FORCED": "fill the lines that are fully determined first",
    "S_CONSTR": "start with the lines with the largest sums",
    "S_OVERLAP": "compare leftmost and rightmost placements and fill the overlap",
    "S_EDGE": "work from the borders inwards",
    "S_CROSS": "cross out cells that cannot be filled",
    "S_NEG": "mark empty cells to narrow the options",
    "S_TRIAL": "try a placement and see whether it breaks",
    "S_HINT": "use a hint when stuck",
}
_COMMENT_THEMES = {"UI": 0.08, "TIME": 0.04, "AFF": 0.1, "LEARN": 0.1}


def pre_survey(expertise: float, rng: np.random.Generator) -> dict[str, Any]:
    """Return pre-survey answers (the study's keys) consistent with latent ``expertise``."""

    def level(x: float, cuts: Sequence[float], labels: Sequence[str]) -> str:
        return labels[int(np.searchsorted(cuts, x))]

    played = level(expertise + 0.6 * rng.standard_normal(), (0.0, 0.7, 1.6), FREQ_LEVELS)
    skill_nonogram = int(np.clip(round(4.5 + 2.2 * expertise + rng.normal(0, 1.0)), 1, 10))
    if played == "never":
        sizes = ["N/A"]
    else:
        n = int(np.clip(round(1.5 + expertise + rng.normal(0, 0.7)), 1, 3))
        sizes = [SIZE_OPTIONS[int(i)] for i in rng.permutation(3)[:n]]
    n_logic = int(np.clip(round(1.8 + 0.7 * expertise + rng.normal(0, 0.8)), 1, 4))
    logic = [LOGIC_OPTIONS[int(i)] for i in sorted(rng.permutation(4)[:n_logic])]
    ans: dict[str, Any] = {
        "played_before": played,
        "skill_nonogram": skill_nonogram,
        "nonogram_size_experience": sizes,
        "logic_experience": logic,
    }
    if "other" in logic:
        ans["logic_experience_other"] = "a puzzle app"
    ans["puzzle_played_frequency"] = level(
        0.7 * expertise + 0.7 * rng.standard_normal(), (-1.2, 0.5, 1.3), FREQ_LEVELS
    )
    ans["skill_puzzles"] = int(np.clip(round(5.5 + 1.5 * expertise + rng.normal(0, 1.2)), 1, 10))
    return ans


def _guess_answer(severity: float, rng: np.random.Generator) -> str:
    x = 0.8 * severity + rng.standard_normal()
    return GUESS_LEVELS[int(np.searchsorted((0.3, 1.3, 2.6), x))]


def _codes(prev: Mapping[str, float], effects: Mapping[str, float], shift: float, rng) -> list[str]:
    out = []
    for code, p in prev.items():
        lo = math.log(p / (1 - p)) + effects.get(code, 0.0) * shift
        if rng.random() < 1 / (1 + math.exp(-lo)):
            out.append(code)
    return out


def _text(codes: Sequence[str], bank: Mapping[str, Any], rng, empty: str) -> str:
    parts = []
    for c in codes:
        opts = bank[c]
        parts.append(opts if isinstance(opts, str) else opts[int(rng.integers(len(opts)))])
    if not parts:
        return empty
    s = "; ".join(parts)
    return s[0].upper() + s[1:] + "."


# ----------------------------------------------------------------------------------------------
# the whole study


@dataclass
class SimStudy:
    """A simulated study in memory: files' contents and the ground truth."""

    params: SimParams
    seed: int
    puzzles: list[Puzzle]
    schedule: list[list[int]]
    logs: dict[str, list[str]]  # participant id -> NDJSON lines (without newline)
    coded: list[dict[str, Any]]
    truth: dict[str, Any]


def _r(x: float) -> float:
    return float(f"{float(x):.10g}")


def simulate_study(params: SimParams, seed: int) -> SimStudy:
    """Return a simulated study drawn from ``params`` with master ``seed`` (deterministic)."""
    ss = np.random.SeedSequence(seed)
    s_puz, s_sched, s_part, s_fault = ss.spawn(4)
    rng_p = np.random.default_rng(s_puz)
    puzzles = generate_unique_puzzles(
        params.n_puzzles, params.height, params.width, params.filled, rng_p
    )
    metrics = [solver_metrics(p) for p in puzzles]
    if params.metric in LINE_METRICS:
        from nonolab.sat.linesolver import line_metrics

        for m, p in zip(metrics, puzzles, strict=True):
            lm = line_metrics(p, max_depth=1, time_limit_s=None)
            m.update({k: int(lm[k]) for k in LINE_METRICS})
    if params.metric == "none":
        z = np.zeros(len(puzzles))
    else:
        z = standardise([math.log1p(m[params.metric]) for m in metrics])
    eps = rng_p.standard_normal(len(puzzles))
    s = params.metric_strength
    difficulty = params.difficulty_sd * (s * z + math.sqrt(1 - s**2) * eps)
    d_std = difficulty / params.difficulty_sd if params.difficulty_sd > 0 else difficulty
    schedule = ordered_triples(
        params.n_puzzles, max(params.n_participants, 1), np.random.default_rng(s_sched)
    )

    logs: dict[str, list[str]] = {}
    coded: list[dict[str, Any]] = []
    parts_truth = []
    clock = 0  # microseconds since START
    part_seeds = s_part.spawn(params.n_participants)
    n_resp = 0
    post_rows: list[dict[str, Any]] = []
    for i in range(params.n_participants):
        rng = np.random.default_rng(part_seeds[i])
        pid = f"Sim-p{i + 1}"
        expertise = float(rng.standard_normal())
        bias = float(rng.normal(0, params.participant_sd))
        style = {
            "cross_frac": float(rng.uniform(0.3, 1.0)),
            "hint_bias": float(rng.normal(0, 0.8)),
            "drag_ui": float(rng.random() < 0.5),
        }
        clock += int(rng.exponential(20 * 3600) * 1e6) + 600_000_000
        t = clock
        queue = schedule[i]
        lines: list[dict[str, Any]] = []

        def emit(ev: dict[str, Any], at: int, _lines: list[dict[str, Any]] = lines) -> None:
            _lines.append({**ev, "t": _iso(at)})

        emit({"type": "session_start_three", "queue": queue, "schedule_idx": i}, t)
        pre = pre_survey(expertise, rng)
        t += int(rng.uniform(30, 240) * 1e6)
        emit({"type": "survey_submit", "survey_type": "pre", "puzzle_idx": None, "answers": pre}, t)
        outcomes = []
        for k, j in enumerate(queue):
            sev = float(d_std[j] - 0.5 * expertise)
            att = simulate_attempt(puzzles[j], j, sev, style, params, rng)
            y = params.rating_mean + difficulty[j] + params.expertise_effect * expertise + bias
            y += rng.normal(0, params.noise_sd)
            initial = cut_rating(y)
            final = cut_rating(y + rng.normal(0, params.final_noise_sd))
            t += int(rng.uniform(3, 12) * 1e6)
            gaps = params.gaps.sample(rng, max(len(att.events) - 1, 0))
            times = [t] + [int(x) for x in t + np.cumsum(np.maximum(np.round(gaps * 1e6), 1))]
            is_last = k == 2
            for ev, at in zip(att.events, times, strict=True):
                emit(ev, at)
            t = times[-1] if att.events else t
            ratable = not att.skipped or rng.random() < 0.5
            answers = {
                "difficulty": initial if ratable else -1,
                f"puzzle_{k + 1}_guesses": _guess_answer(sev, rng) if ratable else "n/a",
            }
            outcomes.append((att, initial if ratable else -1, final, sev))
            solved_flags = [o[0].solved for o in outcomes] + [False] * (2 - k)
            if att.solved:
                if is_last:
                    t_end = t + 1100
                    if all(o[0].solved for o in outcomes):
                        emit({"type": "completed_all_three"}, t_end)
                    else:
                        emit(
                            {
                                "type": "ended_without_full_completion",
                                "solved_flags": solved_flags,
                                "skipped_flags": [o[0].skipped for o in outcomes],
                            },
                            t_end,
                        )
                t += int(rng.uniform(4, 30) * 1e6)
                emit(
                    {
                        "type": "survey_submit",
                        "survey_type": f"puzzle_{k + 1}",
                        "puzzle_idx": k,
                        "answers": answers,
                    },
                    t,
                )
                if is_last:
                    t_end_final = t_end
            else:
                t += int(rng.uniform(4, 30) * 1e6)
                emit(
                    {
                        "type": "survey_submit",
                        "survey_type": f"puzzle_{k + 1}",
                        "puzzle_idx": k,
                        "answers": answers,
                    },
                    t,
                )
                t += 3900
                emit({"type": "skip_puzzle", "idx": k, "puzzle_id": j}, t)
                if is_last:
                    t_end_final = t + 300
                    emit(
                        {
                            "type": "ended_without_full_completion",
                            "solved_flags": solved_flags,
                            "skipped_flags": [o[0].skipped for o in outcomes],
                        },
                        t_end_final,
                    )
                    t = t_end_final
                else:
                    t += 250
                    emit(
                        {
                            "type": "puzzle_advanced",
                            "from_idx": k,
                            "to_idx": k + 1,
                            "puzzle_id": queue[k + 1],
                        },
                        t,
                    )
        # post survey
        post: dict[str, Any] = {}
        reasons: dict[int, tuple[str, list[str]]] = {}
        for k, (att, _init, final, sev) in enumerate(outcomes):
            if att.skipped:
                continue
            post[f"puzzle_{k + 1}_rate_again"] = final
            post[f"puzzle_{k + 1}_guesses"] = _guess_answer(sev, rng)
        for k, (att, _init, final, _sev) in enumerate(outcomes):
            if att.skipped:
                continue
            codes = _codes(params.theme_prevalence, params.theme_effects, final - 3, rng)
            text = _text(codes, _THEME_TEXT, rng, "It felt about average to me.")
            post[f"puzzle_{k + 1}_rating_reason"] = text
            reasons[k] = (text, codes)
        strat = _codes(params.strategy_prevalence, {}, 0.0, rng)
        post["strategy"] = (
            "I "
            + ("; then ".join(_STRATEGY_TEXT[c] for c in strat) if strat else "just tried things")
            + "."
        )
        comment_codes = _codes(_COMMENT_THEMES, {}, 0.0, rng)
        comment = _text(comment_codes, _THEME_TEXT, rng, "n/a")
        post["comments"] = comment
        t += int(rng.uniform(60, 400) * 1e6)
        emit(
            {"type": "survey_submit", "survey_type": "post", "puzzle_idx": None, "answers": post}, t
        )
        emit({"type": "session_end"}, t_end_final)
        clock = t
        logs[pid] = [json.dumps(ev) for ev in lines]

        # coded responses: 3 rating reasons, strategy, comments, size_experience_other
        skill = float(pre["skill_nonogram"])
        base = {"participant_id": f"P{i + 1:03d}", "source_file": f"{pid}.ndjson",
                "skill_nonogram": skill}  # fmt: skip
        for k, (att, init, final, _sev) in enumerate(outcomes):
            text, codes = reasons.get(k, ("", []))
            post_rows.append(
                {
                    **base,
                    "response_kind": "rating_reason",
                    "text": text,
                    "order": float(k + 1),
                    "puzzle_id": float(queue[k]),
                    "final_difficulty": float(final) if not att.skipped else -1.0,
                    "immediate_difficulty": float(init),
                    "codes": codes,
                }  # fmt: skip
            )
        post_rows.append({**base, "response_kind": "strategy", "text": post["strategy"],
                          "codes": strat})  # fmt: skip
        post_rows.append({**base, "response_kind": "comments", "text": comment,
                          "codes": comment_codes, "uncodeable": comment == "n/a"})  # fmt: skip
        other = pre.get("logic_experience_other", "")
        post_rows.append({**base, "response_kind": "size_experience_other", "text": other,
                          "codes": []})  # fmt: skip
        parts_truth.append(
            {
                "participant_id": pid,
                "expertise": _r(expertise),
                "rating_bias": _r(bias),
                "attempts": [
                    {
                        "puzzle_id": o[0].puzzle_id,
                        "solved": o[0].solved,
                        "skipped": o[0].skipped,
                        "errors": o[0].n_errors,
                        "hints": o[0].n_hints,
                        "initial_rating": o[1],
                        "final_rating": o[2] if not o[0].skipped else None,
                    }
                    for o in outcomes
                ],  # fmt: skip
            }
        )

    # coded rows: rating reasons first (participant order), then the other kinds
    kinds = ("rating_reason", "strategy", "comments", "size_experience_other")
    for kind in kinds:
        for row in post_rows:
            if row["response_kind"] != kind:
                continue
            text = row["text"]
            codeable = bool(text) and not row.get("uncodeable", False)
            codes = row["codes"] if codeable else []
            rec = {
                "response_id": f"R{n_resp:04d}",
                "participant_id": row["participant_id"],
                "source_file": row["source_file"],
                "response_kind": kind,
                "text": text,
                "char_len": len(text),
                "word_len": len(text.split()),
                "order": row.get("order"),
                "puzzle_id": row.get("puzzle_id"),
                "final_difficulty": row.get("final_difficulty"),
                "immediate_difficulty": row.get("immediate_difficulty"),
                "skill_nonogram": row["skill_nonogram"],
                "codeable": codeable,
                "n_codes": len(codes),
            }
            for c in THEMES + STRATEGIES:
                rec[f"code_{c}"] = int(c in codes)
            rec["codes_str"] = "|".join(c for c in THEMES + STRATEGIES if c in codes)
            coded.append(rec)
            n_resp += 1

    faults = inject_faults(logs, params, np.random.default_rng(s_fault))
    order = np.argsort(-difficulty, kind="stable")
    rank = np.empty(len(puzzles), dtype=int)
    rank[order] = np.arange(1, len(puzzles) + 1)
    truth = {
        "seed": seed,
        "params": _params_dict(params),
        "pause_threshold_s": _r(params.gaps.threshold_s()),
        "pause_threshold_log": _r(params.gaps.threshold_log()),
        "metric": params.metric,
        "metric_strength": params.metric_strength,
        "slope_latent": _r(params.difficulty_sd * params.metric_strength),
        "slope_final_rating": _r(rating_scale_slope(params, final=True)),
        "slope_initial_rating": _r(rating_scale_slope(params, final=False)),
        "slope_units": "rating points per SD of z = standardised log1p(metric) over the study's puzzles",
        "puzzles": [
            {
                "puzzle_id": int(p.label or 0),
                "puzzle_hash": p.hash,
                **metrics[j],
                "metric_z": _r(z[j]),
                "difficulty": _r(difficulty[j]),
                "difficulty_rank": int(rank[j]),
            }
            for j, p in enumerate(puzzles)
        ],
        "participants": parts_truth,
        "theme_prevalence": dict(params.theme_prevalence),
        "theme_effects": {c: params.theme_effects.get(c, 0.0) for c in THEMES},
        "faults": faults,
    }
    return SimStudy(params, seed, puzzles, schedule, logs, coded, truth)


def _params_dict(params: SimParams) -> dict[str, Any]:
    d = asdict(params)
    d["theme_prevalence"] = dict(params.theme_prevalence)
    d["theme_effects"] = dict(params.theme_effects)
    d["strategy_prevalence"] = dict(params.strategy_prevalence)
    d["faults"] = list(params.faults)
    d["gaps"] = {k: list(v) for k, v in asdict(params.gaps).items()}
    return d


def inject_faults(
    logs: dict[str, list[str]], params: SimParams, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Corrupt ``logs`` in place with one instance of each fault class in ``params.faults``.

    Returns one record per fault: ``{fault, participant_id, line}`` (1-based line number of the
    bad line in the written file). Each fault goes to a different participant when possible.
    """
    out = []
    pids = sorted(logs)
    chosen = [pids[int(x)] for x in rng.permutation(len(pids))]
    for n, fault in enumerate(params.faults):
        pid = chosen[n % len(chosen)]
        lines = logs[pid]
        pos = int(rng.integers(3, max(len(lines) - 3, 4)))
        t = json.loads(lines[pos - 1])["t"] if pos - 1 < len(lines) else _iso(0)
        if fault == "non_json":
            lines.insert(pos, "{this is not json")
        elif fault == "truncated_last_line":
            last = lines[-1]
            lines[-1] = last[: len(last) // 2]
            pos = len(lines) - 1
        elif fault == "unknown_event":
            lines.insert(pos, json.dumps({"type": "teleport", "t": t}))
        elif fault == "move_outside_grid":
            ev = {"type": "move", "r": params.height + 2, "c": 0, "value": 1, "t": t}
            lines.insert(pos, json.dumps(ev))
        elif fault == "missing_field":
            lines.insert(pos, json.dumps({"type": "move", "r": 0, "value": 1, "t": t}))
        elif fault == "bad_timestamp":
            lines.insert(pos, json.dumps({"type": "undo", "label": "cell", "diffs_len": 1,
                                          "t": "yesterday"}))  # fmt: skip
        out.append({"fault": fault, "participant_id": pid, "line": pos + 1})
    return out


def _coded_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(CODED_COLUMNS)
    for row in rows:
        out = []
        for c in CODED_COLUMNS:
            v = row.get(c)
            if v is None:
                out.append("")
            elif isinstance(v, bool):
                out.append("True" if v else "False")
            elif isinstance(v, float):
                out.append(repr(v))
            else:
                out.append(str(v))
        wr.writerow(out)
    return buf.getvalue()


def write_study(study: SimStudy, out_dir: str | Path) -> list[Path]:
    """Write ``study`` in the public study's folder layout under ``out_dir``; return the files.

    Refuses to write into a non-empty folder that does not already hold a simulated study
    (``ground_truth.json``), so a typo cannot clobber real data.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not (out / GROUND_TRUTH).exists():
        raise ValueError(f"{out} is not empty and holds no {GROUND_TRUTH}: refusing to write")
    if (out / LOG_DIR).exists():
        for f in (out / LOG_DIR).glob("*.ndjson"):
            f.unlink()
    files = []

    def put(rel: str, text: str) -> None:
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        files.append(p)

    put(PUZZLE_FILE, json.dumps(puzzle_records(study.puzzles), indent=4) + "\n")
    sched = {"version": 1, "sequences": study.schedule}
    put(f"assignment_schedule_{study.params.n_puzzles}puzzles_3perms.json",
        json.dumps(sched, indent=2) + "\n")  # fmt: skip
    truncated = {f["participant_id"] for f in study.truth["faults"]
                 if f["fault"] == "truncated_last_line"}  # fmt: skip
    for pid, lines in study.logs.items():
        tail = "" if pid in truncated else "\n"
        put(f"{LOG_DIR}/{pid}.ndjson", "\n".join(lines) + tail)
    put(CODED_FILE, _coded_csv(study.coded))
    put(GROUND_TRUTH, json.dumps(study.truth, indent=2, sort_keys=True) + "\n")
    return files


def params_from_mapping(base: SimParams, overrides: Mapping[str, Any]) -> SimParams:
    """Return ``base`` with ``overrides`` (same names as :class:`SimParams`; ``gaps`` a mapping)."""
    kw = dict(overrides)
    if "gaps" in kw and isinstance(kw["gaps"], Mapping):
        kw["gaps"] = GapMixture(**{k: tuple(v) for k, v in kw["gaps"].items()})
    if "faults" in kw:
        kw["faults"] = tuple(kw["faults"])
    unknown = sorted(set(kw) - set(SimParams.__dataclass_fields__))
    if unknown:
        raise ValueError(f"unknown simulation parameters {unknown}")
    return replace(base, **kw)


# ----------------------------------------------------------------------------------------------
# parameter recovery: run the pipeline's library functions on a simulated study

SLOPE_COLUMNS = [
    "replication",
    "seed",
    "n_participants",
    "n_puzzles",
    "metric_strength",
    "n_ratings",
    "slope_true",
    "slope_est",
    "slope_se",
    "slope_df",
    "slope_ci_low",
    "slope_ci_high",
    "slope_covered",
    "slope_p",
    "bt_spearman",
    "mean_rating_spearman",
]


def ranking_recovery(
    ratings: pd.DataFrame, truth_puzzles: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """Return Spearman's rho of the Bradley-Terry strengths and of the mean final ratings with
    the true latent difficulty (NaN for BT when its ML estimate is unbounded).

    ``ratings``: ``participant_id``, ``puzzle_hash``, ``final_difficulty`` rows; BT by
    :func:`nonolab.stats.ranking.pairwise_comparisons` and :func:`nonolab.stats.ranking.fit_log_strengths`.
    """
    from nonolab.stats.ranking import fit_log_strengths, pairwise_comparisons

    truth = pd.DataFrame(list(truth_puzzles)).set_index("puzzle_hash")
    items = sorted(truth.index)
    diff = truth.loc[items, "difficulty"].to_numpy()
    means = ratings.groupby("puzzle_hash")["final_difficulty"].mean().reindex(items).to_numpy()
    try:
        comps = pairwise_comparisons(ratings, "final_difficulty", "puzzle_hash")
        bt = float(stats.spearmanr(fit_log_strengths(comps, items), diff).statistic)
    except ValueError:
        bt = float("nan")
    return {
        "bt_spearman": bt,
        "mean_rating_spearman": float(stats.spearmanr(means, diff).statistic),
    }


def _t_interval(est: float, se: float, df: float, truth: float) -> dict[str, Any]:
    """Return the 95% t interval (normal when ``df`` is undefined), coverage and two-sided p."""
    dist = stats.t(df) if np.isfinite(df) and df > 0 else stats.norm()
    crit = float(dist.ppf(0.975))
    lo, hi = est - crit * se, est + crit * se
    return {
        "slope_true": truth,
        "slope_est": est,
        "slope_se": se,
        "slope_df": df,
        "slope_ci_low": lo,
        "slope_ci_high": hi,
        "slope_covered": bool(lo <= truth <= hi),
        "slope_p": float(2 * dist.sf(abs(est / se))),
    }


def recover_study(study_dir: str | Path, truth: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return what the pipeline recovers from a simulated study, next to the truth.

    Runs the pipeline's library functions: :func:`nonolab.study.ingest.ingest_study` (``default``
    preset); :func:`nonolab.study.features.interaction_gaps` and :func:`nonolab.stats.pauses.fit_pause_model`
    (``threshold_est_s``, seconds, with the pipeline's default EM tolerance, run to
    convergence; ``threshold_published_em_s`` with the published fit's scikit-learn defaults,
    ``tol`` 1e-3 and 100 iterations); :func:`nonolab.stats.ranking.pairwise_comparisons` and
    :func:`nonolab.stats.ranking.fit_log_strengths` (``bt_spearman``: Spearman of the Bradley-Terry
    strengths with the true latent difficulty; ``mean_rating_spearman`` likewise for mean final
    ratings); :func:`nonolab.stats.mixed_models.fit_crossed` for
    ``final_difficulty ~ metric_z + (1 | participant) + (1 | puzzle)`` (REML) with a 95% t
    interval on Satterthwaite df (:func:`nonolab.stats.mixed_models.satterthwaite_df`). ``metric_z``
    is the true standardised ``log1p`` metric of each puzzle, joined by ``puzzle_hash``.
    """
    from nonolab.stats import mixed_models
    from nonolab.stats.pauses import PUBLISHED_EM_TOL, fit_pause_model
    from nonolab.study.features import interaction_gaps
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import resolve_preset

    study_dir = Path(study_dir)
    if truth is None:
        truth = json.loads((study_dir / GROUND_TRUTH).read_text(encoding="utf-8"))
    res = ingest_study(study_dir, resolve_preset(study_dir, "default"))
    gaps = interaction_gaps(res.tables["events"])["gap_s"].to_numpy()
    pm = fit_pause_model(gaps)
    true_puz = pd.DataFrame(truth["puzzles"])[["puzzle_hash", "difficulty", "metric_z"]]
    ratings = res.tables["ratings"][["participant_id", "puzzle_hash", "final_difficulty"]]
    ratings = ratings.dropna(subset=["final_difficulty"])
    data = ratings.merge(true_puz[["puzzle_hash", "metric_z"]], on="puzzle_hash", how="left")
    fit = mixed_models.fit_crossed(data, "final_difficulty ~ metric_z")
    df = float(mixed_models.satterthwaite_df(fit, "metric_z"))
    thr_true = float(truth["pause_threshold_s"])
    thr_pub = fit_pause_model(gaps, tol=PUBLISHED_EM_TOL, max_iter=100).threshold_s
    return {
        "n_gaps": int(len(gaps)),
        "threshold_true_s": thr_true,
        "threshold_est_s": float(pm.threshold_s),
        "threshold_rel_error": float(pm.threshold_s / thr_true - 1),
        "threshold_published_em_s": float(thr_pub),
        "threshold_published_em_rel_error": float(thr_pub / thr_true - 1),
        **ranking_recovery(ratings, truth["puzzles"]),
        "n_ratings": int(fit.n),
        **_t_interval(
            float(fit.params["metric_z"]),
            float(fit.bse["metric_z"]),
            df,
            float(truth["slope_final_rating"]),
        ),
    }


def truth_ratings(study: SimStudy) -> pd.DataFrame:
    """Return the final ratings of a simulated study from its truth (no logs, no ingest).

    Columns ``participant_id``, ``puzzle_hash``, ``final_difficulty``, ``metric_z``; the same
    rows as the ingest ``ratings`` table of the written study (``tests/test_recovery.py``).
    """
    puz = {p["puzzle_id"]: p for p in study.truth["puzzles"]}
    rows = [
        {
            "participant_id": part["participant_id"],
            "puzzle_hash": puz[a["puzzle_id"]]["puzzle_hash"],
            "final_difficulty": float(a["final_rating"]),
            "metric_z": puz[a["puzzle_id"]]["metric_z"],
        }
        for part in study.truth["participants"]
        for a in part["attempts"]
        if a["final_rating"] is not None
    ]
    return pd.DataFrame(rows)


def slope_fit(ratings: pd.DataFrame, n_puzzles: int) -> tuple[float, float, float, int]:
    """Return ``(estimate, se, df, n)`` of the metric slope by direct profiled REML.

    Model ``final_difficulty ~ metric_z + (1 | participant_id) + (1 | puzzle_hash)`` fitted with
    :func:`nonolab.stats.mixed_models.reml_fit_arrays` (the optimum :func:`~nonolab.stats.mixed_models.
    fit_crossed` reports; about 100x faster); ``df = n_puzzles - 2``, the between-puzzle df of a
    puzzle-level covariate (Satterthwaite's df is close to it here; see tests).
    """
    from nonolab.stats.mixed_models import reml_fit_arrays

    y = ratings["final_difficulty"].to_numpy(dtype=float)
    X = np.column_stack([np.ones(len(y)), ratings["metric_z"].to_numpy(dtype=float)])
    codes = [pd.factorize(ratings[c], sort=True)[0] for c in ("participant_id", "puzzle_hash")]
    Z = [np.eye(int(k.max()) + 1)[k] for k in codes]
    beta, cov, _, _ = reml_fit_arrays(y, X, Z)
    return float(beta[1]), float(math.sqrt(cov[1, 1])), float(n_puzzles - 2), int(len(y))


def replication_seed(seed: int, replication: int) -> int:
    """Return the simulator seed of one replication (from ``SeedSequence([seed, i])``)."""
    return int(np.random.SeedSequence([seed, replication]).generate_state(1)[0])


def slope_replications(
    replications: int, seed: int, params: SimParams | None = None, start: int = 0
) -> pd.DataFrame:
    """Return one :data:`SLOPE_COLUMNS` row per simulated study (replications ``start..``).

    Each replication draws a whole study (:func:`simulate_study`, seed
    :func:`replication_seed`: new puzzles, participants and ratings) and fits the slope with
    :func:`slope_fit` on :func:`truth_ratings`; the truth is ``slope_final_rating``.
    """
    params = params or SimParams()
    rows = []
    for i in range(start, start + replications):
        s = replication_seed(seed, i)
        study = simulate_study(params, s)
        ratings = truth_ratings(study)
        est, se, df, n = slope_fit(ratings, params.n_puzzles)
        rows.append(
            {
                "replication": i,
                "seed": s,
                "n_participants": params.n_participants,
                "n_puzzles": params.n_puzzles,
                "metric_strength": params.metric_strength,
                "n_ratings": n,
                **_t_interval(est, se, df, float(study.truth["slope_final_rating"])),
                **ranking_recovery(ratings, study.truth["puzzles"]),
            }
        )
    return pd.DataFrame(rows, columns=SLOPE_COLUMNS)


def slope_summary(table: pd.DataFrame, alpha: float = 0.05) -> dict[str, Any]:
    """Return coverage of the 95% intervals and the share with ``p < alpha`` (shares in [0, 1]).

    With ``metric_strength`` 0 the rejection share is the false-positive rate; ``*_mc_se`` are
    binomial Monte Carlo standard errors.
    """
    n = len(table)
    cov = float(table["slope_covered"].mean()) if n else float("nan")
    rej = float((table["slope_p"] < alpha).mean()) if n else float("nan")
    return {
        "replications": int(n),
        "slope_true": float(table["slope_true"].iloc[0]) if n else float("nan"),
        "slope_est_mean": float(table["slope_est"].mean()) if n else float("nan"),
        "coverage": cov,
        "coverage_mc_se": math.sqrt(cov * (1 - cov) / max(n, 1)),
        "rejection_rate": rej,
        "rejection_rate_mc_se": math.sqrt(rej * (1 - rej) / max(n, 1)),
        "alpha": alpha,
        "bt_spearman_median": float(table["bt_spearman"].median()) if n else float("nan"),
        "bt_spearman_ge_0_9": float((table["bt_spearman"] >= 0.9).mean()) if n else float("nan"),
        "mean_rating_spearman_ge_0_9": (
            float((table["mean_rating_spearman"] >= 0.9).mean()) if n else float("nan")
        ),
    }


def recovery_benchmark(
    seed: int,
    workdir: str | Path,
    replications: int = 50,
    n_participants: int = 200,
    n_puzzles: int = 12,
    pipeline_studies: int = 3,
    pipeline_puzzles: int = 6,
    log: Any = None,
) -> dict[str, Any]:
    """Return the parameter-recovery record (``results/bench/recovery.json``).

    * ``pipeline``: ``pipeline_studies`` simulated studies (``n_participants``,
      ``pipeline_puzzles``) written as logs and analysed by :func:`recover_study` (ingest, pause
      threshold, Bradley-Terry, crossed mixed model with Satterthwaite df);
    * ``slope``: :func:`slope_replications` at the default metric strength (coverage of the true
      slope by the 95% intervals; target >= 0.9);
    * ``null``: the same with metric strength 0 (false-positive rate; target near 0.05).

    ``criteria`` holds the targets and whether they were met. ``log``: optional callable for
    progress messages.
    """
    say = log or (lambda *_: None)
    pipe_rows = []
    for i in range(pipeline_studies):
        s = replication_seed(seed, 10_000 + i)
        params = SimParams(n_participants=n_participants, n_puzzles=pipeline_puzzles)
        study = simulate_study(params, s)
        out = Path(workdir) / f"pipeline_{i}"
        write_study(study, out)
        rec = {"study": i, "seed": s, **recover_study(out, study.truth)}
        say(f"pipeline study {i}: {rec}")
        pipe_rows.append(rec)
    pipe = pd.DataFrame(pipe_rows)
    base = SimParams(n_participants=n_participants, n_puzzles=n_puzzles)
    slope = slope_replications(replications, seed, base)
    say(f"slope replications: {slope_summary(slope)}")
    null = slope_replications(replications, seed + 1, replace(base, metric_strength=0.0))
    say(f"null replications: {slope_summary(null)}")
    s_sum, n_sum = slope_summary(slope), slope_summary(null)
    fpr_hi = 0.05 + 2 * math.sqrt(0.05 * 0.95 / max(replications, 1))
    thr_within = (pipe["threshold_rel_error"].abs() <= 0.10).mean() if len(pipe) else float("nan")
    pub_within = (
        (pipe["threshold_published_em_rel_error"].abs() <= 0.10).mean()
        if len(pipe)
        else float("nan")
    )
    criteria = {
        "threshold_within_10pct_share": float(thr_within),
        "threshold_within_10pct_share_published_em_settings": float(pub_within),
        "threshold_met": bool(thr_within == 1.0),
        "bt_spearman_ge_0_9_share_pipeline": float((pipe["bt_spearman"] >= 0.9).mean()),
        "bt_spearman_ge_0_9_share_replications": s_sum["bt_spearman_ge_0_9"],
        "bt_spearman_median_replications": s_sum["bt_spearman_median"],
        "bt_spearman_met": bool(
            (pipe["bt_spearman"] >= 0.9).all() and s_sum["bt_spearman_ge_0_9"] >= 0.9
        ),
        "slope_coverage": s_sum["coverage"],
        "slope_coverage_met": bool(s_sum["coverage"] >= 0.9),
        "false_positive_rate": n_sum["rejection_rate"],
        "false_positive_rate_upper_ok": fpr_hi,
        "false_positive_rate_met": bool(n_sum["rejection_rate"] <= fpr_hi),
    }
    return {
        "seed": seed,
        "design": {
            "n_participants": n_participants,
            "n_puzzles_slope": n_puzzles,
            "n_puzzles_pipeline": pipeline_puzzles,
            "replications": replications,
            "pipeline_studies": pipeline_studies,
            "metric_strength": base.metric_strength,
        },
        "pipeline": pipe.to_dict(orient="records"),
        "slope": {"summary": s_sum, "replications": slope.to_dict(orient="records")},
        "null": {"summary": n_sum, "replications": null.to_dict(orient="records")},
        "criteria": criteria,
    }


def recovery_criteria_table(record: dict[str, Any]) -> pd.DataFrame:
    """Return the recovery targets of :func:`recovery_benchmark`'s ``record`` as a table.

    One row per target: ``target`` (what is recovered), ``criterion`` (the pass rule),
    ``value`` (measured: a share, a rate or a median Spearman rho, unitless), ``met`` (bool),
    and the design and master ``seed`` that produced it (per-replication seeds are in the JSON
    record).
    """
    c = record["criteria"]
    d = record["design"]
    design = (
        f"{d['pipeline_studies']} pipeline studies x {d['n_participants']} participants x "
        f"{d['n_puzzles_pipeline']} puzzles; {d['replications']} replications x "
        f"{d['n_puzzles_slope']} puzzles"
    )
    rows = [
        (
            "pause threshold",
            "share of studies within 10% of the true crossing",
            c["threshold_within_10pct_share"],
            c["threshold_met"],
        ),
        (
            "pause threshold, published EM settings",
            "share within 10% (tol 1e-3, for contrast)",
            c["threshold_within_10pct_share_published_em_settings"],
            None,
        ),
        (
            "difficulty ranking (BT)",
            "share of replications with Spearman >= 0.9",
            c["bt_spearman_ge_0_9_share_replications"],
            c["bt_spearman_met"],
        ),
        (
            "difficulty ranking (BT)",
            "median Spearman over replications",
            c["bt_spearman_median_replications"],
            None,
        ),
        (
            "metric slope",
            "95% CI coverage of the true slope (target >= 0.9)",
            c["slope_coverage"],
            c["slope_coverage_met"],
        ),
        (
            "zero effect",
            "false-positive rate at alpha 0.05 (upper bound "
            f"{c['false_positive_rate_upper_ok']:.3f})",
            c["false_positive_rate"],
            c["false_positive_rate_met"],
        ),
    ]
    out = pd.DataFrame(rows, columns=["target", "criterion", "value", "met"])
    out["met"] = out["met"].map({True: "yes", False: "no", None: ""})
    out["design"] = design
    out["seed"] = int(record["seed"])
    return out
