"""Event synthesis: a whole simulated study (logs, surveys, coded answers, truth) in memory.

:func:`simulate_study` draws a study from a :class:`~nonolab.sim.model.SimParams` and a seed;
:func:`nonolab.sim.writer.write_study` writes it. The generative model, in short (see
docs/decisions.md, "Simulation"):

* puzzles: random ``height x width`` grids with ``filled`` cells, kept when the SAT layer
  proves them unique (:func:`nonolab.sim.model.generate_unique_puzzles`); MiniSat22 statistics
  on the block-start encoding are their solver metrics;
* latent puzzle difficulty ``D_j = scale * (s * z_j + sqrt(1 - s^2) * e_j)``, where ``z_j`` is
  the standardised ``log1p`` of the chosen metric (population SD over the study's puzzles),
  ``s`` the chosen strength (the puzzle-level correlation of ``D`` with ``z``);
* participants: latent expertise ``E_i ~ N(0, 1)`` driving the pre-survey answers, ratings,
  errors, hints and skips;
* ratings: ``y* = mean + D_j + b_E * E_i + v_i + noise``; the after-puzzle (initial) rating is
  ``y*`` rounded and clipped to 1-5, the retrospective (final) one adds a little more noise;
* inter-event gaps: i.i.d. draws from a 3-component log-normal mixture (drag speed, smooth
  chaining, reasoning pauses), so the pooled gap distribution is exactly that mixture and its
  posterior crossing is known (:meth:`nonolab.sim.model.GapMixture.threshold_s`);
* coded themes: each theme present with a chosen prevalence, whose log-odds shift by a chosen
  effect per rating point above 3 (so the truth of the theme-vs-difficulty tests is known).

Log event types and fields are the study's: ``session_start_three``, ``survey_submit`` pre /
per puzzle / post, ``move``, ``drag``, ``hint``, ``hint_none``, ``undo``, ``reset``,
``check_bank``, ``skip_puzzle``, ``puzzle_advanced``, ``completed_all_three``,
``ended_without_full_completion``, ``session_end``.

Every random draw comes from ``numpy.random.SeedSequence(seed)`` children (puzzles, schedule,
participants one stream each, faults), so the same parameters and seed give byte-identical
files, and adding participants does not change the earlier ones.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nonolab.sat.linesolver import line_metrics
from nonolab.sat.puzzles import Puzzle
from nonolab.sim.attempt import Attempt, simulate_attempt
from nonolab.sim.faults import inject_faults
from nonolab.sim.model import (
    LINE_METRICS,
    STRATEGIES,
    THEMES,
    SimParams,
    cut_rating,
    generate_unique_puzzles,
    iso_time,
    ordered_triples,
    params_record,
    rating_scale_slope,
    solver_metrics,
    standardise,
)

GUESS_LEVELS = ("never", "few", "many", "all")
FREQ_LEVELS = ("never", "few", "many", "regular")
SIZE_OPTIONS = ("<=10*10", "10*10", ">=10*10", "other")
LOGIC_OPTIONS = ("sudoku", "minesweeper", "battleships", "other")


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


def _codes(
    prev: Mapping[str, float],
    effects: Mapping[str, float],
    shift: float,
    rng: np.random.Generator,
) -> list[str]:
    """Return the codes present: each with log-odds ``logit(prev) + effect * shift``."""
    out = []
    for code, p in prev.items():
        lo = math.log(p / (1 - p)) + effects.get(code, 0.0) * shift
        if rng.random() < 1 / (1 + math.exp(-lo)):
            out.append(code)
    return out


def _text(
    codes: Sequence[str], bank: Mapping[str, Any], rng: np.random.Generator, empty: str
) -> str:
    """Return one sentence joining a phrase per code (``empty`` when there is no code)."""
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


@dataclass(frozen=True)
class PuzzleSet:
    """The study's puzzles with their metrics and latent difficulty.

    ``metrics``: solver (and line-solver) metrics per puzzle; ``z``: the standardised ``log1p``
    of the chosen metric; ``difficulty``: latent difficulty in rating points; ``d_std``: the
    same divided by ``difficulty_sd`` (SD units).
    """

    puzzles: list[Puzzle]
    metrics: list[dict[str, int]]
    z: np.ndarray
    difficulty: np.ndarray
    d_std: np.ndarray


@dataclass(frozen=True)
class Outcome:
    """One attempt of a session with its ratings (``initial`` is -1 when not rated)."""

    attempt: Attempt
    initial: int
    final: int
    severity: float


@dataclass
class Session:
    """One participant's session as it is drawn: log events so far and the clock (us)."""

    index: int
    queue: list[int]
    rng: np.random.Generator
    t: int
    lines: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    t_end: int = 0
    record: bool = True

    @property
    def pid(self) -> str:
        """The participant id of the log file (``Sim-p<i+1>``)."""
        return f"Sim-p{self.index + 1}"

    def emit(self, event: dict[str, Any], at: int) -> None:
        """Append ``event`` stamped at ``at`` microseconds after the study start (nothing when
        the session is drawn without logs, ``record`` False)."""
        if self.record:
            self.lines.append({**event, "t": iso_time(at)})


@dataclass(frozen=True)
class ParticipantResult:
    """What one simulated participant contributes: log lines, raw coded rows, truth record."""

    pid: str
    log: list[str]
    responses: list[dict[str, Any]]
    truth: dict[str, Any]
    clock: int


def _r(x: float) -> float:
    return float(f"{float(x):.10g}")


def draw_puzzles(params: SimParams, rng: np.random.Generator) -> PuzzleSet:
    """Return the study's unique puzzles, their metrics and latent difficulty, drawn from ``rng``."""
    puzzles = generate_unique_puzzles(
        params.n_puzzles, params.height, params.width, params.filled, rng
    )
    metrics = [solver_metrics(p) for p in puzzles]
    if params.metric in LINE_METRICS:
        for m, p in zip(metrics, puzzles, strict=True):
            lm = line_metrics(p, max_depth=1, time_limit_s=None)
            m.update({k: int(lm[k]) for k in LINE_METRICS})
    if params.metric == "none":
        z = np.zeros(len(puzzles))
    else:
        z = standardise([math.log1p(m[params.metric]) for m in metrics])
    eps = rng.standard_normal(len(puzzles))
    s = params.metric_strength
    difficulty = params.difficulty_sd * (s * z + math.sqrt(1 - s**2) * eps)
    d_std = difficulty / params.difficulty_sd if params.difficulty_sd > 0 else difficulty
    return PuzzleSet(puzzles, metrics, z, difficulty, d_std)


def _end_marker(session: Session, k: int) -> dict[str, Any]:
    solved = [o.attempt.solved for o in session.outcomes] + [False] * (len(session.queue) - 1 - k)
    return {
        "type": "ended_without_full_completion",
        "solved_flags": solved,
        "skipped_flags": [o.attempt.skipped for o in session.outcomes],
    }


def _puzzle_window(
    session: Session,
    k: int,
    world: PuzzleSet,
    person: Mapping[str, Any],
    params: SimParams,
) -> None:
    """Draw slot ``k`` of ``session``: the attempt's events, its ratings and survey, and the
    skip / advance / end markers after it (appended to the session, clock advanced)."""
    rng, j = session.rng, session.queue[k]
    expertise = person["expertise"]
    sev = float(world.d_std[j] - 0.5 * expertise)
    att = simulate_attempt(world.puzzles[j], j, sev, person["style"], params, rng)
    y = params.rating_mean + world.difficulty[j] + params.expertise_effect * expertise
    y += person["bias"]
    y += rng.normal(0, params.noise_sd)
    initial = cut_rating(y)
    final = cut_rating(y + rng.normal(0, params.final_noise_sd))
    t = session.t + int(rng.uniform(3, 12) * 1e6)
    gaps = params.gaps.sample(rng, max(len(att.events) - 1, 0))
    if att.events:
        times = t + np.concatenate([[0], np.cumsum(np.maximum(np.round(gaps * 1e6), 1))])
        if session.record:
            for ev, at in zip(att.events, times.astype(np.int64).tolist(), strict=True):
                session.emit(ev, at)
        t = int(times[-1])
    is_last = k == len(session.queue) - 1
    ratable = not att.skipped or rng.random() < 0.5
    answers = {
        "difficulty": initial if ratable else -1,
        f"puzzle_{k + 1}_guesses": _guess_answer(sev, rng) if ratable else "n/a",
    }
    session.outcomes.append(Outcome(att, initial if ratable else -1, final, sev))
    survey = {"type": "survey_submit", "survey_type": f"puzzle_{k + 1}", "puzzle_idx": k,
              "answers": answers}  # fmt: skip
    if att.solved:
        if is_last:
            session.t_end = t + 1100
            if all(o.attempt.solved for o in session.outcomes):
                session.emit({"type": "completed_all_three"}, session.t_end)
            else:
                session.emit(_end_marker(session, k), session.t_end)
        t += int(rng.uniform(4, 30) * 1e6)
        session.emit(survey, t)
    else:
        t += int(rng.uniform(4, 30) * 1e6)
        session.emit(survey, t)
        t += 3900
        session.emit({"type": "skip_puzzle", "idx": k, "puzzle_id": j}, t)
        if is_last:
            t = session.t_end = t + 300
            session.emit(_end_marker(session, k), t)
        else:
            t += 250
            advanced = {"type": "puzzle_advanced", "from_idx": k, "to_idx": k + 1,
                        "puzzle_id": session.queue[k + 1]}  # fmt: skip
            session.emit(advanced, t)
    session.t = t


def _post_survey(
    session: Session, params: SimParams
) -> tuple[dict[str, Any], dict[int, tuple[str, list[str]]], list[str], list[str]]:
    """Return the post-survey answers, the rating reasons by slot ``(text, codes)``, the
    strategy codes and the comment codes of ``session`` (draws from its rng)."""
    rng = session.rng
    post: dict[str, Any] = {}
    reasons: dict[int, tuple[str, list[str]]] = {}
    for k, o in enumerate(session.outcomes):
        if not o.attempt.skipped:
            post[f"puzzle_{k + 1}_rate_again"] = o.final
            post[f"puzzle_{k + 1}_guesses"] = _guess_answer(o.severity, rng)
    for k, o in enumerate(session.outcomes):
        if o.attempt.skipped:
            continue
        codes = _codes(params.theme_prevalence, params.theme_effects, o.final - 3, rng)
        text = _text(codes, _THEME_TEXT, rng, "It felt about average to me.")
        post[f"puzzle_{k + 1}_rating_reason"] = text
        reasons[k] = (text, codes)
    strat = _codes(params.strategy_prevalence, {}, 0.0, rng)
    steps = "; then ".join(_STRATEGY_TEXT[c] for c in strat) if strat else "just tried things"
    post["strategy"] = "I " + steps + "."
    comment_codes = _codes(_COMMENT_THEMES, {}, 0.0, rng)
    post["comments"] = _text(comment_codes, _THEME_TEXT, rng, "n/a")
    return post, reasons, strat, comment_codes


def _response_rows(
    session: Session,
    pre: Mapping[str, Any],
    post: Mapping[str, Any],
    reasons: Mapping[int, tuple[str, list[str]]],
    strat: list[str],
    comment_codes: list[str],
) -> list[dict[str, Any]]:
    """Return the session's free-text answers with their codes: 3 rating reasons, strategy,
    comments, size_experience_other (not yet numbered; :func:`coded_responses` numbers them)."""
    base = {"participant_id": f"P{session.index + 1:03d}",
            "source_file": f"{session.pid}.ndjson",
            "skill_nonogram": float(pre["skill_nonogram"])}  # fmt: skip
    rows = []
    for k, o in enumerate(session.outcomes):
        text, codes = reasons.get(k, ("", []))
        rows.append(
            {
                **base,
                "response_kind": "rating_reason",
                "text": text,
                "order": float(k + 1),
                "puzzle_id": float(session.queue[k]),
                "final_difficulty": float(o.final) if not o.attempt.skipped else -1.0,
                "immediate_difficulty": float(o.initial),
                "codes": codes,
            }
        )
    comment = post["comments"]
    rows.append({**base, "response_kind": "strategy", "text": post["strategy"], "codes": strat})
    rows.append({**base, "response_kind": "comments", "text": comment,
                 "codes": comment_codes, "uncodeable": comment == "n/a"})  # fmt: skip
    other = pre.get("logic_experience_other", "")
    rows.append({**base, "response_kind": "size_experience_other", "text": other, "codes": []})
    return rows


def _participant_truth(session: Session, person: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "participant_id": session.pid,
        "expertise": _r(person["expertise"]),
        "rating_bias": _r(person["bias"]),
        "attempts": [
            {
                "puzzle_id": o.attempt.puzzle_id,
                "solved": o.attempt.solved,
                "skipped": o.attempt.skipped,
                "errors": o.attempt.n_errors,
                "hints": o.attempt.n_hints,
                "initial_rating": o.initial,
                "final_rating": o.final if not o.attempt.skipped else None,
            }
            for o in session.outcomes
        ],
    }


def simulate_participant(
    index: int,
    queue: list[int],
    world: PuzzleSet,
    params: SimParams,
    seed: np.random.SeedSequence,
    clock: int,
    logs: bool = True,
) -> ParticipantResult:
    """Return participant ``index``'s session drawn from ``seed``, starting after ``clock``.

    ``clock`` and the returned ``clock`` are microseconds after
    :data:`nonolab.sim.model.START` (the session starts a random while after ``clock``; the
    returned value is the time of its post-survey). With ``logs`` False only the truth record
    is drawn (the same values: every draw before the last puzzle's survey is made, the log
    lines, the post-survey and the free-text answers are not; ``log`` and ``responses`` are
    empty and ``clock`` is the end of the last puzzle window).
    """
    rng = np.random.default_rng(seed)
    person = {
        "expertise": float(rng.standard_normal()),
        "bias": float(rng.normal(0, params.participant_sd)),
        "style": {
            "cross_frac": float(rng.uniform(0.3, 1.0)),
            "hint_bias": float(rng.normal(0, 0.8)),
            "drag_ui": float(rng.random() < 0.5),
        },
    }
    clock += int(rng.exponential(20 * 3600) * 1e6) + 600_000_000
    session = Session(index, queue, rng, clock, record=logs)
    session.emit({"type": "session_start_three", "queue": queue, "schedule_idx": index}, clock)
    pre = pre_survey(person["expertise"], rng)
    session.t += int(rng.uniform(30, 240) * 1e6)
    session.emit({"type": "survey_submit", "survey_type": "pre", "puzzle_idx": None,
                  "answers": pre}, session.t)  # fmt: skip
    for k in range(len(queue)):
        _puzzle_window(session, k, world, person, params)
    if not logs:
        return ParticipantResult(
            session.pid, [], [], _participant_truth(session, person), session.t
        )
    post, reasons, strat, comment_codes = _post_survey(session, params)
    session.t += int(rng.uniform(60, 400) * 1e6)
    session.emit({"type": "survey_submit", "survey_type": "post", "puzzle_idx": None,
                  "answers": post}, session.t)  # fmt: skip
    session.emit({"type": "session_end"}, session.t_end)
    return ParticipantResult(
        session.pid,
        [json.dumps(ev) for ev in session.lines],
        _response_rows(session, pre, post, reasons, strat, comment_codes),
        _participant_truth(session, person),
        session.t,
    )


RESPONSE_KINDS = ("rating_reason", "strategy", "comments", "size_experience_other")


def coded_responses(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return the coded-responses table rows (``response_id`` ``R0000``...): rating reasons first
    (participant order), then the other :data:`RESPONSE_KINDS`; one 0/1 ``code_*`` column per
    theme and strategy, ``codes_str`` joined by ``|``."""
    coded: list[dict[str, Any]] = []
    for kind in RESPONSE_KINDS:
        for row in rows:
            if row["response_kind"] != kind:
                continue
            text = row["text"]
            codeable = bool(text) and not row.get("uncodeable", False)
            codes = row["codes"] if codeable else []
            rec = {
                "response_id": f"R{len(coded):04d}",
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
    return coded


def study_truth(
    params: SimParams,
    seed: int,
    world: PuzzleSet,
    participants: list[dict[str, Any]],
    faults: list[dict[str, Any]],
) -> dict[str, Any]:
    """Return the ``ground_truth.json`` record: true pause threshold (s and log s), true slopes
    (rating points per SD of ``z``), puzzles with metrics, ``metric_z``, latent difficulty and
    its rank (1 = hardest), participants' latent values and attempts, theme truth, faults."""
    order = np.argsort(-world.difficulty, kind="stable")
    rank = np.empty(len(world.puzzles), dtype=int)
    rank[order] = np.arange(1, len(world.puzzles) + 1)
    return {
        "seed": seed,
        "params": params_record(params),
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
                **world.metrics[j],
                "metric_z": _r(world.z[j]),
                "difficulty": _r(world.difficulty[j]),
                "difficulty_rank": int(rank[j]),
            }
            for j, p in enumerate(world.puzzles)
        ],
        "participants": participants,
        "theme_prevalence": dict(params.theme_prevalence),
        "theme_effects": {c: params.theme_effects.get(c, 0.0) for c in THEMES},
        "faults": faults,
    }


def simulate_study(
    params: SimParams,
    seed: int,
    progress: Callable[[], None] | None = None,
    logs: bool = True,
    session_size: int = 3,
) -> SimStudy:
    """Return a simulated study drawn from ``params`` with master ``seed`` (deterministic).

    Each session serves ``session_size`` puzzles (3, as the public study; at most
    ``params.n_puzzles``; :func:`nonolab.sim.design.reshape_study` cuts sessions shorter).
    ``progress`` (optional) is called after each participant's session is drawn. With ``logs``
    False the study has no logs, coded answers or faults, and its truth the same puzzles and
    participants (ratings, skips, errors, hints) as with logs: for analyses of the truth only
    (:func:`nonolab.sim.recovery.truth_ratings`), in about half the time.
    """
    s_puz, s_sched, s_part, s_fault = np.random.SeedSequence(seed).spawn(4)
    world = draw_puzzles(params, np.random.default_rng(s_puz))
    schedule = ordered_triples(
        params.n_puzzles,
        max(params.n_participants, 1),
        np.random.default_rng(s_sched),
        k=session_size,
    )
    lines: dict[str, list[str]] = {}
    rows: list[dict[str, Any]] = []
    truths: list[dict[str, Any]] = []
    clock = 0  # microseconds since START
    for i, part_seed in enumerate(s_part.spawn(params.n_participants)):
        res = simulate_participant(i, schedule[i], world, params, part_seed, clock, logs)
        if logs:
            lines[res.pid] = res.log
        rows.extend(res.responses)
        truths.append(res.truth)
        clock = res.clock
        if progress is not None:
            progress()
    faults = inject_faults(lines, params, np.random.default_rng(s_fault)) if logs else []
    truth = study_truth(params, seed, world, truths, faults)
    return SimStudy(params, seed, world.puzzles, schedule, lines, coded_responses(rows), truth)
