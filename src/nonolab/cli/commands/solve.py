"""``nonolab solve``: solve puzzle files and say whether each solution is unique.

Text output per puzzle: a header (label, short hash, size), the status and phase times, then the
grid (``#`` filled, ``.`` empty) and, when the puzzle has several solutions, a second one.
``--json`` prints one JSON object per puzzle per line (JSON Lines), in input order, each with the
``file`` it came from. A file that cannot be read gives, in its place, an error record
(``{"file": ..., "status": "error", "error": ...}``; in text output a ``status: error`` block)
and its message on stderr; the other files are still solved.

Exit status: 0 when every puzzle was solved (unique or multiple), 1 when some puzzle is unsat
or undecided (timeout), 2 when some input could not be read (this wins over 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from nonolab.sat.formats import FORMATS
from nonolab.sat.puzzles import Puzzle, grid_to_strings


def solve_record(
    puzzle: Puzzle,
    *,
    method: str = "hybrid",
    encoding: str = "order",
    solver: str | None = None,
    timeout_s: float | None = None,
    probing: bool | None = None,
    hard: str = "bp",
    bp_jobs: int = 1,
    guide: str = "bp",
) -> dict[str, Any]:
    """Return one puzzle's result as a JSON-ready dict.

    Keys: ``label``, ``puzzle_hash``, ``height``, ``width``, ``method``, ``encoding``,
    ``solver`` (the one used: ``solver``, or by default ``auto`` resolved by
    :func:`nonolab.sat.remaining.resolve_solver` for hybrid, with ``+bp`` when BP decimation
    (:mod:`nonolab.sat.bpsolve`) and ``+kissat404`` when Kissat (:mod:`nonolab.sat.hardsolve`) ran in
    the fallback, and ``cadical195`` for plain), ``hard``: the hybrid fallback's first method
    (:data:`nonolab.sat.fastsolve.HARD_METHODS`; ``bp_jobs`` processes run its restart slices),
    ``guide``: the hybrid's first-solution guidance (:data:`nonolab.sat.fastsolve.GUIDES`),
    ``status`` (unique |
    multiple | unsat | unknown), ``grid`` (row strings or None), ``second_grid`` (when
    multiple), ``time_s`` (wall seconds for this puzzle), the phase times in seconds (hybrid:
    ``propagate_s``, ``probe_s``, ``encode_s``, ``guide_s``, ``solve_s``, ``uniqueness_s``,
    ``time_to_first_s``) and counts. ``solver`` may be a python-sat alias (``g42``): the
    record names it canonically (``glucose42``); an unknown name raises ``ValueError`` before
    anything runs, also when line propagation alone would decide the puzzle.
    """
    if solver is None:
        solver = "auto" if method == "hybrid" else "cadical195"
    elif not (solver == "auto" and method == "hybrid"):
        from nonolab.sat.solvers import canonical_solver

        solver = canonical_solver(solver)  # ValueError listing the known names
    rec: dict[str, Any] = {
        "label": puzzle.label,
        "puzzle_hash": puzzle.hash,
        "height": puzzle.height,
        "width": puzzle.width,
        "method": method,
        "encoding": encoding,
        "solver": solver,
    }
    if method == "hybrid":
        from nonolab.sat.fastsolve import solve

        kw: dict[str, Any] = {} if probing is None else {"probing": probing}
        res = solve(
            puzzle,
            encoding=encoding,
            solver=solver,
            timeout_s=timeout_s,
            hard=hard,
            bp_jobs=bp_jobs,
            guide=guide,
            **kw,
        )
        rec.update(res.as_dict())
        rec["guide"] = guide
        if res.solver is not None:
            rec["solver"] = res.solver
        return rec
    if method == "plain":
        from nonolab.sat.solvers import uniqueness

        t0 = time.perf_counter()
        u = uniqueness(puzzle, encoding, solver, time_limit_s=timeout_s)
        rec["status"] = u.status
        rec["grid"] = grid_to_strings(u.grid) if u.grid is not None else None
        if u.second_grid is not None:
            rec["second_grid"] = grid_to_strings(u.second_grid)
        rec["time_s"] = time.perf_counter() - t0
        rec.update({k: int(v) for k, v in u.stats.items()})
        return rec
    raise ValueError(f"unknown method {method!r}; use hybrid or plain")


def _worker(item: tuple[Puzzle, dict[str, Any]]) -> dict[str, Any]:
    puzzle, kw = item
    return solve_record(puzzle, **kw)


def _format_text(rec: dict[str, Any]) -> str:
    if rec["status"] == "error":
        return f"== {rec['file']}\nstatus: error\nerror: {rec['error']}"
    head = (
        f"== {rec['label']} [{rec['puzzle_hash'][:12]}] {rec['width']}x{rec['height']} "
        f"(width x height)"
    )
    from nonolab.sat.fastsolve import PHASES

    phases = [f"{k[:-2]} {rec[k]:.3f}" for k in PHASES if k in rec]
    line = f"status: {rec['status']}  time {rec['time_s']:.3f} s"
    if phases:
        line += " (" + ", ".join(phases) + ")"
    out = [head, line]
    if rec.get("reason"):
        out.append(f"note: {rec['reason']}")
    if rec.get("grid"):
        out += rec["grid"]
    if rec.get("second_grid"):
        out.append("-- a second solution:")
        out += rec["second_grid"]
    return "\n".join(out)


def _read_inputs(files: list[str], fmt: str | None) -> list[tuple[str, list[Puzzle] | str]]:
    """Return ``(file, puzzles)`` for every readable file and ``(file, message)`` for the
    others, in the order given."""
    from nonolab.cli.options import os_error_message
    from nonolab.measure.puzzle_files import read_puzzles

    out: list[tuple[str, list[Puzzle] | str]] = []
    for f in files:
        try:
            out.append((f, read_puzzles(f, fmt)))
        except OSError as exc:
            out.append((f, os_error_message(exc)))
        except ValueError as exc:  # FormatError, PuzzleError: they name file:line
            msg = str(exc)
            out.append((f, msg if f in msg else f"{f}: {msg}"))
    return out


def _solve(args: argparse.Namespace) -> int:
    from nonolab.core.progress import Progress

    if args.method == "plain" and args.solver == "auto":
        raise ValueError("--solver auto chooses a solver for --method hybrid only")
    inputs = _read_inputs(args.files, args.format)
    kw = {
        "method": args.method,
        "encoding": args.encoding or ("order" if args.method == "hybrid" else "block_start"),
        "solver": args.solver,
        "timeout_s": args.timeout,
        "probing": args.probing,
        "hard": args.hard,
        "bp_jobs": args.bp_jobs,
        "guide": args.guide,
    }
    items = [(p, kw) for _, got in inputs if not isinstance(got, str) for p in got]
    with Progress(len(items), "solve", enabled=None if len(items) > 1 else False) as bar:
        if args.jobs > 1 and len(items) > 1:
            ex = ProcessPoolExecutor(max_workers=args.jobs)
            try:
                chunk = max(1, len(items) // (8 * args.jobs))
                return _emit(inputs, ex.map(_worker, items, chunksize=chunk), args.json, bar)
            finally:  # on an early end (closed pipe, Ctrl-C) the queued puzzles are dropped
                ex.shutdown(cancel_futures=True)
        return _emit(inputs, map(_worker, items), args.json, bar)


def _error_record(file: str, message: str) -> dict[str, Any]:
    return {"file": file, "status": "error", "error": message}


def _emit(
    inputs: list[tuple[str, list[Puzzle] | str]],
    results: Iterator[dict[str, Any]],
    as_json: bool,
    bar: Any,
) -> int:
    """Print one record per puzzle (and one per unreadable file) in input order; return the
    exit status (see the module docstring)."""
    bad = errors = 0
    for file, got in inputs:
        if isinstance(got, str):
            errors += 1
            recs: Iterable[dict[str, Any]] = [_error_record(file, got)]
            bar.clear()
            print(f"nonolab: error: {got}", file=sys.stderr, flush=True)
        else:
            recs = (next(results) for _ in got)
        for rec in recs:
            solved = rec["status"] != "error"
            if solved:
                rec["file"] = file
                if rec["status"] not in ("unique", "multiple"):
                    bad += 1
            bar.clear()
            print(json.dumps(rec, sort_keys=True) if as_json else _format_text(rec), flush=True)
            if solved:
                bar.update()
    return 2 if errors else 1 if bad else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``solve`` to the CLI."""
    from nonolab.cli.options import (
        encoding_name,
        hybrid_solver_name,
        positive_int,
        positive_seconds,
    )

    p = sub.add_parser(
        "solve",
        help="solve puzzle files (any supported format) and decide uniqueness",
        description=(
            "Solve every puzzle in FILE... and say whether its solution is unique. Records "
            "come in input order; a file that cannot be read gets an error record in its place "
            "and the others are still solved."
        ),
        epilog=(
            "exit status: 0 every puzzle solved (unique or multiple); 1 some puzzle unsat or "
            "undecided (timeout); 2 some input could not be read, or a usage error"
        ),
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="puzzle files (.non, .nin, TAAI...)")
    p.add_argument("--json", action="store_true", help="one JSON object per puzzle per line")
    p.add_argument(
        "--method",
        choices=("hybrid", "plain"),
        default="hybrid",
        help="hybrid: line propagation then SAT on the rest (default); plain: whole CNF + solver",
    )
    p.add_argument(
        "--encoding",
        type=encoding_name,
        default=None,
        help="CNF encoding (default: order for hybrid, block_start for plain)",
    )
    p.add_argument(
        "--solver",
        type=hybrid_solver_name,
        default=None,
        help=(
            "python-sat solver (default: auto for hybrid, i.e. minisat22 when at most 1,000 "
            "cells are unknown after propagation, else cadical195; cadical195 for plain)"
        ),
    )
    p.add_argument("--jobs", type=positive_int, default=1, help="solve puzzles in N processes")
    p.add_argument(
        "--timeout", type=positive_seconds, default=None, help="seconds per puzzle (positive)"
    )
    p.add_argument(
        "--probing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="single-cell probing between propagation and SAT (hybrid; default: the library's)",
    )
    p.add_argument(
        "--hard",
        choices=("bp", "kissat"),
        default="bp",
        help=(
            "hybrid fallback for large puzzles CaDiCaL leaves open after 50k conflicts: bp = "
            "belief-propagation decimation checked by CaDiCaL, then Kissat (default); kissat = "
            "probing clauses + Kissat only"
        ),
    )
    p.add_argument(
        "--bp-jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help=(
            "processes running the BP fallback's restart slices at once (default 1: one after "
            "the other, a deterministic path; N > 1 uses N cores on one hard puzzle)"
        ),
    )
    p.add_argument(
        "--guide",
        choices=("bp", "none"),
        default="bp",
        help=(
            "hybrid, up to 1,000 unknown cells: bp = look for a first solution under the "
            "likelier values of the cells belief propagation is surest of, as SAT assumptions, "
            "then without them (default); none = one plain SAT call"
        ),
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help=f"puzzle format (default: from the extension); one of {', '.join(FORMATS)}",
    )
    p.set_defaults(func=_solve)


if __name__ == "__main__":  # pragma: no cover
    from nonolab.cli import main

    sys.exit(main(["solve", *sys.argv[1:]]))
