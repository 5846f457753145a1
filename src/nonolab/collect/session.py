"""One participant's session as a state machine over the events their page sends.

The page numbers its events (``seq`` = 1, 2, ...) and sends each with its client time ``t``
(milliseconds since the Unix epoch, from a monotonic clock anchored to the server clock when the
page loaded). :func:`apply_event` checks one event against the session state, returns the new
state, the log lines it writes (docs/data-format.md) and the answer the page gets back; it raises
:class:`InvalidEvent` (with a message for the page) for anything it refuses, leaving the state
unchanged. It is pure: the store calls it inside the transaction that saves its result.

Steps: ``consent`` -> ``tutorial`` -> ``warmup`` -> ``pre`` -> (``puzzle`` -> ``rate``) x N ->
``post`` -> ``done``. The practice and warm-up puzzles are played in the page and not logged
(the analysis excludes them); ``session_start_three`` is written when the warm-up ends.

Events the page sends (``kind``) and what they log:

* ``step`` (``from`` = the step being left: consent, tutorial or warm-up): nothing, except
  ``session_start_three`` when the warm-up ends;
* ``move`` (``r``, ``c``, ``value``), ``drag`` (``mode``, ``start``, ``end``), ``undo``,
  ``reset``: the same event (the drag with its rectangle and cell count, the undo with its
  label and number of cells restored);
* ``hint``: ``hint`` naming a cell that differs from the solution (filled-but-empty cells
  first, then crossed-but-filled, then any; chosen reproducibly from the participant and
  ``seq``), or ``hint_none`` when the board matches or the hint limit is reached;
* ``check``: ``check_bank``; when solved, ``puzzle_advanced`` (or, after the last puzzle, the
  completion marker) and the rating step;
* ``skip``: ``skip_puzzle``, then as a solved check;
* ``survey`` (``survey_type``, ``answers``): ``survey_submit`` (answers checked against the
  items); after ``post`` also ``session_end``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from datetime import UTC, datetime
from typing import Any

from nonolab.collect.plan import StudyPlan
from nonolab.study.board import Board

STEPS = ("consent", "tutorial", "warmup", "pre", "puzzle", "rate", "post", "done")
KINDS = ("step", "move", "drag", "undo", "reset", "hint", "check", "skip", "survey")
DRAG_MODES = ("flip", "cross", "cross_toggle")


class InvalidEvent(ValueError):
    """An event the session refuses; the message says why (shown to the researcher, sent to the
    page)."""


def iso(ms: float) -> str:
    """Return epoch milliseconds ``ms`` as ISO-8601 UTC with microseconds."""
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC).isoformat(timespec="microseconds")


def _first_step(plan: StudyPlan) -> str:
    return "consent"


def _next_setup_step(step: str, plan: StudyPlan) -> str:
    """The step after ``step`` among consent, tutorial, warm-up (skipping disabled ones)."""
    order = ["consent"]
    if plan.platform["tutorial"]:
        order.append("tutorial")
    if plan.platform["warmup"]["enabled"]:
        order.append("warmup")
    order.append("pre")
    return order[order.index(step) + 1]


def new_state(plan: StudyPlan, queue: list[int], schedule_idx: int) -> dict[str, Any]:
    """Return the state of a new session serving ``queue`` (puzzle ids, in order), the
    ``schedule_idx``-th session of the schedule."""
    n = len(queue)
    return {
        "step": _first_step(plan),
        "idx": 0,
        "queue": list(queue),
        "schedule_idx": schedule_idx,
        "board": [],
        "stack": [],
        "hints": 0,
        "solved": [False] * n,
        "skipped": [False] * n,
        "ratings": {},
        "last_t": None,
    }


def _board_for(state: dict[str, Any], plan: StudyPlan) -> None:
    p = plan.puzzles[state["queue"][state["idx"]]]
    state["board"] = [0] * (p.height * p.width)
    state["stack"] = []
    state["hints"] = 0


def _int(ev: dict[str, Any], key: str) -> int:
    v = ev.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidEvent(f"{ev.get('kind')}: {key} must be an integer, got {v!r}")
    return v


def _cell(ev: dict[str, Any], key: str, h: int, w: int) -> tuple[int, int]:
    v = ev.get(key)
    if not isinstance(v, dict):
        raise InvalidEvent(f"{ev.get('kind')}: {key} must be a cell {{r, c}}")
    named = {"kind": ev.get("kind"), "r": v.get("r"), "c": v.get("c")}
    r, c = _int(named, "r"), _int(named, "c")
    if not (0 <= r < h and 0 <= c < w):
        raise InvalidEvent(f"{ev.get('kind')}: cell ({r}, {c}) is outside the {h}x{w} grid")
    return r, c


def _check_answers(items: list[dict[str, Any]], answers: Any, max_chars: int) -> dict[str, Any]:
    """Return ``answers`` checked against ``items``; raise InvalidEvent naming the item."""
    if not isinstance(answers, dict):
        raise InvalidEvent("survey: answers must be an object")
    by_id = {it["id"]: it for it in items}
    allowed = set(by_id) | {f"{k}_other" for k, it in by_id.items() if it.get("allow_other")}
    extra = set(answers) - allowed
    if extra:
        raise InvalidEvent(f"survey: unknown items {sorted(extra)}")
    for key, it in by_id.items():
        v = answers.get(key)
        typ = it["type"]
        required = it.get("required", typ != "text")
        if v is None:
            if required:
                raise InvalidEvent(f"survey: item {key!r} is required")
            continue
        if typ == "single":
            if v not in [o["value"] for o in it["options"]]:
                raise InvalidEvent(f"survey: {key!r} must be one of the options, got {v!r}")
        elif typ == "multi":
            opts = [o["value"] for o in it["options"]]
            if not isinstance(v, list) or any(x not in opts for x in v) or len(set(v)) != len(v):
                raise InvalidEvent(f"survey: {key!r} must be a list of distinct options")
        elif typ == "scale":
            ok = isinstance(v, int) and not isinstance(v, bool)
            ok = ok and (it["min"] <= v <= it["max"] or ("na" in it and v == it["na"]))
            if not ok:
                raise InvalidEvent(f"survey: {key!r} must be an integer {it['min']}-{it['max']}")
        elif typ == "text":
            if not isinstance(v, str) or len(v) > max_chars:
                raise InvalidEvent(f"survey: {key!r} must be text of at most {max_chars} chars")
    for key in allowed - set(by_id):
        v = answers.get(key)
        if v is not None and (not isinstance(v, str) or len(v) > max_chars):
            raise InvalidEvent(f"survey: {key!r} must be text of at most {max_chars} chars")
    return answers


def _hint_cell(board: list[int], solution: list[int], w: int, seed: str) -> tuple[int, int] | None:
    wrong_fill = [
        i for i, (b, s) in enumerate(zip(board, solution, strict=True)) if b == 1 and s == 0
    ]
    crossed = [
        i for i, (b, s) in enumerate(zip(board, solution, strict=True)) if b == -1 and s == 1
    ]
    other = [
        i for i, (b, s) in enumerate(zip(board, solution, strict=True)) if (1 if b == 1 else 0) != s
    ]
    pool = wrong_fill or crossed or other
    if not pool:
        return None
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    i = rng.choice(pool)
    return divmod(i, w)


def apply_event(
    plan: StudyPlan, state: dict[str, Any], ev: dict[str, Any], now_ms: float, who: str = ""
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Apply page event ``ev`` to session ``state`` at server time ``now_ms`` (epoch ms).

    Returns ``(new state, log lines, result)``: the log lines are dicts in the log format
    (``type``, fields, ``t`` = the client time as ISO-8601 UTC); ``result`` is what the page
    gets back for this event (e.g. the hinted cell). ``who`` seeds the hint choice. Raises
    :class:`InvalidEvent` (state unchanged) for an event the session cannot take.
    """
    if not isinstance(ev, dict):
        raise InvalidEvent("an event must be an object")
    kind = ev.get("kind")
    if kind not in KINDS:
        raise InvalidEvent(f"unknown event kind {kind!r}")
    t = ev.get("t")
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        raise InvalidEvent(f"{kind}: t must be a number (epoch milliseconds)")
    # the window around the session and the server clock is the request contract's
    # (nonolab.collect.contract.check_event, applied by the store before this function)
    # copy what an event may change (the undo snapshots themselves are never modified), so that
    # a refused event leaves ``state`` as it was
    s = {**state, "board": list(state["board"]), "stack": list(state["stack"]),
         "solved": list(state["solved"]), "skipped": list(state["skipped"]),
         "ratings": dict(state["ratings"])}  # fmt: skip
    # a page reloaded mid-session re-anchors its clock; never let time run backwards
    if s["last_t"] is not None and t < s["last_t"]:
        t = s["last_t"]
    s["last_t"] = t
    stamp = iso(t)
    lines: list[dict[str, Any]] = []
    result: dict[str, Any] = {}
    step = s["step"]
    n = len(s["queue"])
    limits = plan.platform["limits"]

    def log(typ: str, **fields: Any) -> None:
        lines.append({"type": typ, **fields, "t": stamp})

    if kind == "step":
        if step not in ("consent", "tutorial", "warmup") or ev.get("from") != step:
            raise InvalidEvent(f"step: cannot leave {ev.get('from')!r} while at {step!r}")
        s["step"] = _next_setup_step(step, plan)
        if s["step"] == "pre":
            log("session_start_three", queue=s["queue"], schedule_idx=s["schedule_idx"])
    elif kind == "survey":
        stype = ev.get("survey_type")
        expect = {"pre": "pre", "rate": f"puzzle_{s['idx'] + 1}", "post": "post"}.get(step)
        if stype != expect:
            raise InvalidEvent(f"survey: {stype!r} is not expected at step {step!r}")
        answers = _check_answers(plan.survey(stype), ev.get("answers"), limits["max_text_chars"])
        idx = None if stype in ("pre", "post") else s["idx"]
        log("survey_submit", survey_type=stype, puzzle_idx=idx, answers=answers)
        if step == "pre":
            s["step"] = "puzzle"
            _board_for(s, plan)
        elif step == "rate":
            s["ratings"][stype] = answers.get("difficulty")
            if s["idx"] + 1 < n:
                s["idx"] += 1
                s["step"] = "puzzle"
                _board_for(s, plan)
            else:
                s["step"] = "post"
                s["board"], s["stack"] = [], []
        else:
            log("session_end")
            s["step"] = "done"
    else:
        if step != "puzzle":
            raise InvalidEvent(f"{kind}: no puzzle is being played at step {step!r}")
        pid = s["queue"][s["idx"]]
        p = plan.puzzles[pid]
        h, w = p.height, p.width
        # the board is the analysis's own (nonolab.study.board): one statement of what an
        # event does to it and of when it is solved
        board = Board.restore(h, w, s["board"], s["stack"])
        if kind == "move":
            r, c = _cell({"kind": kind, "cell": ev}, "cell", h, w)
            v = _int(ev, "value")
            if v not in (-1, 0, 1):
                raise InvalidEvent(f"move: value must be 1, -1 or 0, got {v}")
            board.move(r, c, v)
            log("move", r=r, c=c, value=v)
        elif kind == "drag":
            mode = ev.get("mode")
            if mode not in DRAG_MODES:
                raise InvalidEvent(f"drag: mode must be one of {DRAG_MODES}, got {mode!r}")
            a, b = _cell(ev, "start", h, w), _cell(ev, "end", h, w)
            r0, r1 = sorted((a[0], b[0]))
            c0, c1 = sorted((a[1], b[1]))
            rect = [(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]
            board.drag(mode, rect)
            log(
                "drag",
                mode=mode,
                start={"r": a[0], "c": a[1]},
                end={"r": b[0], "c": b[1]},
                normalized_start={"r": r0, "c": c0},
                normalized_end={"r": r1, "c": c1},
                changed_cells=len(rect),
            )
        elif kind == "undo":
            undone = board.undo()
            label, n_cells = undone if undone is not None else ("none", 0)
            log("undo", label=label, diffs_len=n_cells)
        elif kind == "reset":
            board.reset()
            s["hints"] = 0
            log("reset")
        elif kind == "hint":
            sol = [v for row in p.solution for v in row]
            cell = None
            if s["hints"] < plan.platform["hint_limit"]:
                cell = _hint_cell(board.saved()[0], sol, w, f"{who}:{ev.get('seq')}")
            if cell is None:
                reason = "limit" if s["hints"] >= plan.platform["hint_limit"] else "solved"
                log("hint_none")
                result = {"hint": None, "reason": reason}
            else:
                s["hints"] += 1
                log("hint", r=cell[0], c=cell[1])
                result = {"hint": {"r": cell[0], "c": cell[1]}}
            result["hints_left"] = plan.platform["hint_limit"] - s["hints"]
        elif kind in ("check", "skip"):
            mism = [[r, c] for r, c in board.mismatches(p.solution)]
            if kind == "check":
                solved = not mism
                log("check_bank", puzzle_id=pid, solved=solved, mismatches=mism)
                result = {"solved": solved, "mismatches": len(mism)}
                if solved:
                    s["solved"][s["idx"]] = True
            else:
                s["skipped"][s["idx"]] = True
                log("skip_puzzle", idx=s["idx"], puzzle_id=pid)
                result = {"skipped": True}
            if kind == "skip" or result["solved"]:
                if s["idx"] + 1 < n:
                    log(
                        "puzzle_advanced",
                        from_idx=s["idx"],
                        to_idx=s["idx"] + 1,
                        puzzle_id=s["queue"][s["idx"] + 1],
                    )
                elif all(s["solved"]):
                    log("completed_all_three")
                else:
                    log(
                        "ended_without_full_completion",
                        solved_flags=s["solved"],
                        skipped_flags=s["skipped"],
                    )
                s["step"] = "rate"
        s["board"], s["stack"] = board.saved()
    return s, lines, result


def dumps_line(line: dict[str, Any], seq: int, server_ms: float) -> str:
    """Return log line ``line`` as its NDJSON text, with the page's ``seq`` and the server's
    receive time ``server_t`` (extra keys the ingest ignores)."""
    return json.dumps({**line, "seq": seq, "server_t": iso(server_ms)}, ensure_ascii=False)


def public_state(plan: StudyPlan, state: dict[str, Any]) -> dict[str, Any]:
    """Return what the participant's page needs to resume: step, attempt index, the current
    puzzle (clues only), board (flat list, row-major), undo depth, hints used, earlier ratings."""
    out: dict[str, Any] = {
        "step": state["step"],
        "idx": state["idx"],
        "n": len(state["queue"]),
        "board": state["board"],
        "undo_depth": len(state["stack"]),
        "undo_stack": state["stack"],
        "hints": state["hints"],
        "ratings": state["ratings"],
    }
    if state["step"] in ("puzzle",):
        out["puzzle"] = plan.public_puzzle(state["queue"][state["idx"]])
    return out
