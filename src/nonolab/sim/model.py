"""Parameters of a simulated study and the pieces of the generative model that need no events.

* :class:`GapMixture`: the 3-component log-normal mixture of inter-event gaps and its true
  pause threshold (the equal-posterior crossing of :func:`nonolab.stats.pauses.
  equal_posterior_crossing`, the same crossing the pipeline's pause fit reports);
* :class:`SimParams`: every parameter of a simulated study (validated), with
  :func:`params_from_mapping` (overrides from a mapping) and :func:`params_record` (the JSON
  form written to ``ground_truth.json``);
* puzzles: :func:`generate_unique_puzzles` (distinct unique puzzles from
  :func:`nonolab.sat.generate.random_unique_puzzle`) and their solver metrics
  (:func:`solver_metrics`);
* the design: :func:`ordered_triples` (which puzzles a session sees, in which order) and
  :func:`ordered_triples_batch` (many such schedules at once, for the power analysis);
* the rating model: :func:`cut_rating`, :func:`expected_rating`, :func:`rating_scale_slope`
  (the true slope on the 1-5 scale) and :func:`standardise`.

The generative model in full is described in :mod:`nonolab.sim.events` and docs/decisions.md
("Simulation").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from scipy import special

from nonolab.sat.encodings import get_encoding
from nonolab.sat.generate import GenerationError, random_unique_puzzle
from nonolab.sat.puzzles import Puzzle
from nonolab.sat.solvers import run_solver

THEMES = ("FOOT", "CLUE", "PROP", "AMBIG", "GUESS", "HINT", "ERR", "LEARN", "LOAD", "VIS", "TIME",
          "UI", "AFF")  # fmt: skip
STRATEGIES = ("S_FORCED", "S_CONSTR", "S_OVERLAP", "S_EDGE", "S_CROSS", "S_NEG", "S_TRIAL",
              "S_HINT")  # fmt: skip
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
START = datetime(2026, 2, 2, 9, 0, 0, tzinfo=UTC)


def iso_time(us: int) -> str:
    """Return the ISO-8601 time ``us`` microseconds after :data:`START` (the logs' ``t``)."""
    return (START + timedelta(microseconds=int(us))).isoformat(timespec="microseconds")


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
        """Return the natural-log gap (log seconds) where the middle and slowest components'
        posteriors are equal (:func:`nonolab.stats.pauses.equal_posterior_crossing`).

        Raises ``ValueError`` when the two densities do not cross between their means.
        """
        # imported here: the pause model needs scikit-learn, which the power analysis's
        # processes (this module without a gap mixture) need not load
        from nonolab.stats.pauses import equal_posterior_crossing

        return equal_posterior_crossing(np.log(self.medians_s), self.log_sds, self.weights, 1, 2)

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


def params_record(params: SimParams) -> dict[str, Any]:
    """Return ``params`` as plain JSON values (mappings as dicts, tuples as lists)."""
    d = asdict(params)
    d["theme_prevalence"] = dict(params.theme_prevalence)
    d["theme_effects"] = dict(params.theme_effects)
    d["strategy_prevalence"] = dict(params.strategy_prevalence)
    d["faults"] = list(params.faults)
    d["gaps"] = {k: list(v) for k, v in asdict(params.gaps).items()}
    return d


# ----------------------------------------------------------------------------------------------
# puzzles


def solver_metrics(puzzle: Puzzle, solver: str = "minisat22") -> dict[str, int]:
    """Return decisions, propagations, conflicts of one ``solver`` run (block-start encoding)."""
    res = run_solver(get_encoding("block_start")(puzzle).clauses, solver)
    return {k: int(res.stats.get(k, 0)) for k in ("decisions", "propagations", "conflicts")}


def generate_unique_puzzles(
    n: int, height: int, width: int, filled: int, rng: np.random.Generator, max_tries: int = 10000
) -> list[Puzzle]:
    """Return ``n`` distinct puzzles with a unique solution, labelled ``"0"`` .. ``str(n-1)``.

    Each puzzle is :func:`nonolab.sat.generate.random_unique_puzzle` drawn from ``rng`` (random
    grids until the SAT layer proves one unique, at most ``max_tries`` grids per puzzle); a
    puzzle equal to an earlier one (same clue hash) is drawn again, at most ``max_tries`` times.
    The result depends only on ``rng``. Raises ``ValueError`` when the budget runs out.
    """
    out: list[Puzzle] = []
    seen: set[str] = set()
    repeats = 0
    while len(out) < n:
        try:
            p = random_unique_puzzle(
                height, width, filled, rng, max_attempts=max_tries, label=str(len(out))
            )
        except GenerationError as exc:
            raise ValueError(f"found only {len(out)} unique puzzles: {exc}") from None
        if p.hash in seen:
            repeats += 1
            if repeats >= max_tries:
                raise ValueError(
                    f"found only {len(out)} distinct unique {height}x{width} puzzles "
                    f"in {max_tries} repeated draws"
                )
            continue
        seen.add(p.hash)
        out.append(p)
    return out


def ordered_triples(
    n_puzzles: int, n_sessions: int, rng: np.random.Generator, k: int = 3
) -> list[list[int]]:
    """Return ``n_sessions`` ordered ``k``-tuples (triples by default) of distinct puzzle ids,
    balanced over puzzles.

    Each session gets the ``k`` least-served puzzles so far (ties broken at random) in random
    order, so every puzzle is served equally often up to one. Raises ``ValueError`` when
    ``k`` is not between 1 and ``n_puzzles``.
    """
    if not 1 <= k <= n_puzzles:
        raise ValueError(f"a session of {k} puzzles needs 1 <= k <= {n_puzzles} puzzles")
    counts = np.zeros(n_puzzles)
    out: list[list[int]] = []
    for _ in range(n_sessions):
        pick = np.argsort(counts + rng.random(n_puzzles), kind="stable")[:k]
        counts[pick] += 1
        out.append([int(x) for x in rng.permutation(pick)])
    return out


def ordered_triples_batch(
    n_puzzles: int, n_sessions: int, n_sets: int, rng: np.random.Generator
) -> np.ndarray:
    """Return ``n_sets`` independent schedules of :func:`ordered_triples`, (n_sets, n_sessions, 3).

    The same rule, drawn for all sets at once (session by session): each session gets the
    three least-served puzzles of its set so far (ties broken at random) in random order. The
    random stream differs from :func:`ordered_triples`'s. :func:`ordered_sets_batch` with
    ``per_session=3``.
    """
    return ordered_sets_batch(n_puzzles, n_sessions, n_sets, rng, 3)


def ordered_sets_batch(
    n_puzzles: int, n_sessions: int, n_sets: int, rng: np.random.Generator, per_session: int = 3
) -> np.ndarray:
    """Return ``n_sets`` independent schedules of ``per_session`` distinct puzzles per session,
    shape (n_sets, n_sessions, per_session): each session gets the ``per_session``
    least-served puzzles of its set so far (ties broken at random) in random order. For
    ``per_session=3`` the draws are those of :func:`ordered_triples_batch`."""
    k = int(per_session)
    if k < 2:
        raise ValueError(f"a session needs at least 2 puzzles to compare, got {k}")
    if n_puzzles < k:
        raise ValueError(f"sessions of {k} puzzles need at least {k} puzzles, got {n_puzzles}")
    counts = np.zeros((n_sets, n_puzzles))
    rows = np.arange(n_sets)[:, None]
    out = np.empty((n_sets, n_sessions, k), dtype=np.intp)
    for s in range(n_sessions):
        pick = np.argpartition(counts + rng.random((n_sets, n_puzzles)), k - 1, axis=1)[:, :k]
        counts[rows, pick] += 1
        order = np.argsort(rng.random((n_sets, k)), axis=1)
        out[:, s] = np.take_along_axis(pick, order, axis=1)
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
    # normal survival function: scipy.stats.norm.sf(x) is special.ndtr(-x)
    return 1.0 + special.ndtr(-((cuts[None, :] - mean.reshape(-1, 1)) / sd)).sum(axis=1).reshape(
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
