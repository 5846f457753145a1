"""Study designs the simulator does not draw directly: fewer puzzles per session, missing
ratings, missing or empty surveys, tied ratings, a puzzle nobody rated.

:func:`reshape_study` rewrites a simulated study's logs the way real studies differ (the
simulator itself serves three puzzles per session with every survey answered): each session is
cut to its first ``per_session`` puzzles and ends with the platform's completion marker, ratings
are left out at random, surveys are dropped or emptied. The truth (``ground_truth.json``) is
the simulator's and does not follow the reshaping. A study with ``per_session`` below 3 needs a
preset with that ``puzzles_per_session`` (:func:`design_preset`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nonolab.sim.events import SimStudy

#: Survey layouts: every survey answered; no post-survey (no final ratings or free text); the
#: pre-survey submitted without answers (no expertise items); no pre- or post-survey (the
#: ingest ledgers every session out).
SURVEYS = ("all", "no_post", "empty_pre", "none")
_MARKERS = {"skip_puzzle", "puzzle_advanced", "ended_without_full_completion"}


@dataclass(frozen=True)
class StudyDesign:
    """How to reshape a simulated study (see the module docstring).

    ``per_session``: puzzles each session serves (at most the simulated sessions' size, 3
    unless the study is simulated with more); ``per_session_min``: when set, each session
    serves a number drawn uniformly from ``per_session_min`` .. ``per_session`` (sessions that
    ran out of time); ``missing``: probability that each
    rating (initial and final, independently) is left out; ``surveys``: one of
    :data:`SURVEYS`; ``unrated``: a puzzle id whose ratings are all left out (None: none);
    ``tied``: every rating is 3.
    """

    per_session: int = 3
    missing: float = 0.0
    surveys: str = "all"
    unrated: str | None = None
    tied: bool = False
    per_session_min: int | None = None

    def __post_init__(self) -> None:
        if self.per_session < 1:
            raise ValueError(f"per_session must be at least 1, got {self.per_session}")
        if self.per_session_min is not None and not 1 <= self.per_session_min <= self.per_session:
            raise ValueError(
                f"per_session_min must be 1-{self.per_session}, got {self.per_session_min}"
            )
        if not 0.0 <= self.missing <= 1.0:
            raise ValueError(f"missing must be a probability, got {self.missing}")
        if self.surveys not in SURVEYS:
            raise ValueError(f"surveys must be one of {SURVEYS}, got {self.surveys!r}")

    @property
    def reshapes(self) -> bool:
        """Whether the design changes anything."""
        return self != StudyDesign()

    @property
    def sizes(self) -> tuple[int, ...]:
        """Every number of puzzles a session of this design may serve."""
        low = self.per_session if self.per_session_min is None else self.per_session_min
        return tuple(range(low, self.per_session + 1))


def _slots(events: list[dict]) -> tuple[list[dict], list[list[dict]], list[dict]]:
    """Split a session into (head up to the pre-survey, one event list per puzzle slot with its
    survey and skip / advance / end markers, tail: the post-survey and session end)."""
    head: list[dict] = []
    slots: list[list[dict]] = []
    i = 0
    while i < len(events):
        head.append(events[i])
        i += 1
        if events[i - 1].get("survey_type") == "pre":
            break
    current: list[dict] = []
    rated = False  # the current slot's survey has been seen
    while i < len(events):
        e = events[i]
        if e.get("survey_type") == "post" or e["type"] == "session_end":
            break
        if rated and e["type"] not in _MARKERS:
            slots.append(current)
            current, rated = [], False
        current.append(e)
        rated = rated or e["type"] == "survey_submit"
        i += 1
    if current:
        slots.append(current)
    return head, slots, events[i:]


def _cut_session(head: list[dict], slots: list[list[dict]], k: int) -> list[str]:
    """Cut the session to its first ``k`` slots (in place) and end it with the platform's
    completion marker; return the served queue."""
    start = next(e for e in head if e["type"] == "session_start_three")
    served = len(start["queue"])
    start["queue"] = start["queue"][:k]
    del slots[k:]
    if k < served:
        last = slots[-1]
        while last and last[-1]["type"] == "puzzle_advanced":
            last.pop()
        skipped = [any(e["type"] == "skip_puzzle" for e in slot) for slot in slots]
        end: dict[str, Any] = {"type": "completed_all_three"}
        if any(skipped):
            end = {
                "type": "ended_without_full_completion",
                "solved_flags": [not x for x in skipped],
                "skipped_flags": skipped,
            }
        last.append(end | {"t": last[-1]["t"]})
    return [str(q) for q in start["queue"]]


def reshape_session(lines: list[str], design: StudyDesign, rng: np.random.Generator) -> list[str]:
    """Return one simulated session's log lines reshaped as ``design`` says."""
    events = [json.loads(x) for x in lines]
    head, slots, tail = _slots(events)
    start = next(e for e in head if e["type"] == "session_start_three")
    n_slots = len(start["queue"])
    if len(slots) != n_slots or design.per_session > n_slots:
        raise ValueError(
            f"a simulated session of {n_slots} puzzles has {len(slots)} puzzle slots; the design "
            f"serves up to {design.per_session}"
        )
    k = design.per_session
    if design.per_session_min is not None:
        k = int(rng.integers(design.per_session_min, design.per_session + 1))
    queue = _cut_session(head, slots, k)
    for e in head:
        if e.get("survey_type") == "pre" and design.surveys == "empty_pre":
            e["answers"] = {}
    if design.surveys == "none":
        head = [e for e in head if e.get("survey_type") != "pre"]
    for j, slot in enumerate(slots):
        for e in slot:
            if e["type"] == "survey_submit":
                ans = e["answers"]
                if design.tied and "difficulty" in ans:
                    ans["difficulty"] = 3
                if rng.random() < design.missing or queue[j] == design.unrated:
                    ans.pop("difficulty", None)
    kept_tail = []
    for e in tail:
        if e.get("survey_type") == "post":
            if design.surveys in ("no_post", "none"):
                continue
            ans = e["answers"]
            for j in range(n_slots):
                key = f"puzzle_{j + 1}_rate_again"
                if j >= len(queue):
                    for suffix in ("rate_again", "guesses", "rating_reason"):
                        ans.pop(f"puzzle_{j + 1}_{suffix}", None)
                    continue
                if key in ans and design.tied:
                    ans[key] = 3
                if rng.random() < design.missing or queue[j] == design.unrated:
                    ans.pop(key, None)
        kept_tail.append(e)
    return [json.dumps(e) for e in head + [e for slot in slots for e in slot] + kept_tail]


def reshape_study(study: SimStudy, design: StudyDesign, seed: int) -> SimStudy:
    """Return ``study`` with every participant's log reshaped as ``design`` says (missing
    ratings drawn from ``seed``, participants in the study's order); unchanged when the design
    changes nothing."""
    if not design.reshapes:
        return study
    rng = np.random.default_rng(seed)
    logs = {pid: reshape_session(lines, design, rng) for pid, lines in study.logs.items()}
    served = {pid: len(json.loads(lines[0])["queue"]) for pid, lines in logs.items() if lines}
    coded = [r for r in study.coded if not _cut_reason(r, served)]
    return replace(study, logs=logs, coded=coded)


def _cut_reason(row: dict[str, Any], served: dict[str, int]) -> bool:
    """Return True for the coded rating reason of a puzzle slot a reshaped session no longer
    serves (its session was cut before it)."""
    if row.get("response_kind") != "rating_reason" or row.get("order") is None:
        return False
    pid = str(row["source_file"]).rsplit(".", 1)[0]
    return pid in served and int(row["order"]) > served[pid]


def design_preset(design: StudyDesign) -> str:
    """Return the text of a study preset for a reshaped study (``extends: default`` with the
    design's ``puzzles_per_session``: one number, or ``{min, max}`` for a design with
    ``per_session_min``): write it beside the study and pass it as ``preset``."""
    sizes = design.sizes
    value = str(sizes[0]) if len(sizes) == 1 else f"{{min: {sizes[0]}, max: {sizes[-1]}}}"
    return (
        "# Preset of a simulated study with other than 3 puzzles per session (nonolab simulate).\n"
        "name: simulated\nextends: default\n"
        f"puzzles_per_session: {value}\n"
    )
