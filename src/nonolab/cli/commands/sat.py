"""``nonolab stats``, ``nonolab generate`` and ``nonolab encode``: the SAT toolkit commands.

* ``stats FILE``: solver statistics of every puzzle in FILE for every solver x encoding, as a
  text table or (``--json``) one JSON record per puzzle x encoding x solver with
  ``puzzle_hash``, ``puzzle_id``, ``encoding``, ``solver``, ``variables``, ``clauses``,
  ``decisions``, ``propagations``, ``conflicts``, ``restarts``, ``time_s``, ``status``.
* ``generate``: random puzzles with a fixed number of filled cells and a unique solution, as a
  study puzzle file (JSON), ``.non``/``.nonpack`` or TAAI text; seeded.
* ``encode FILE``: the CNF of a puzzle as DIMACS text.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from nonolab.core.tables import write_text
from nonolab.sat.formats import FORMATS, write_puzzles
from nonolab.sat.puzzles import Puzzle


def _encodings(names: list[str] | None) -> list[str]:
    from nonolab.sat.encodings import ENCODINGS, get_encoding

    get_encoding("block_start")  # loads every encoding module
    if not names:
        return sorted(ENCODINGS, key=lambda e: (e != "block_start", e))
    for n in names:
        get_encoding(n)  # KeyError naming the known ones
    return names


def _stats(args: argparse.Namespace) -> int:
    from nonolab.core.progress import Progress
    from nonolab.measure.puzzle_files import read_puzzles
    from nonolab.measure.tables import stats_table
    from nonolab.sat.solvers import STUDY_SOLVERS

    puzzles = read_puzzles(args.file, args.format)
    try:
        encodings = _encodings(args.encoding)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    solvers = args.solver or list(STUDY_SOLVERS)
    with Progress(len(puzzles), "stats") as bar:

        def counted() -> Iterator[Puzzle]:
            for p in puzzles:  # the bar moves once all of a puzzle's rows are done
                yield p
                bar.update()

        df = stats_table(
            counted(),
            encodings,
            solvers,
            conf_budget=args.conf_budget,
            time_limit_s=args.time_limit,
        )
    if args.json:
        for rec in df.to_dict("records"):
            print(json.dumps(rec, default=str))
        return 0
    show = df.assign(puzzle_hash=df["puzzle_hash"].str[:12], time_s=df["time_s"].round(4))
    print(show.to_string(index=False))
    return 0


def _generate(args: argparse.Namespace) -> int:
    from nonolab.core.progress import Progress
    from nonolab.sat.generate import GenerationError, random_unique_puzzles

    n_cells = args.height * args.width
    filled = n_cells // 2 if args.filled is None else args.filled
    if filled > n_cells:
        raise ValueError(
            f"--filled {filled} does not fit a {args.height}x{args.width} grid ({n_cells} cells)"
        )
    rng = np.random.default_rng(args.seed)
    puzzles: list[Puzzle] = []
    n_tried = 0
    with Progress(args.count, "generate") as bar:

        def tried() -> None:
            nonlocal n_tried
            n_tried += 1
            bar.set_note(f"{n_tried} grids tried")

        try:
            for p in random_unique_puzzles(
                args.count,
                args.height,
                args.width,
                filled,
                rng,
                distinct=True,
                timeout_s=args.timeout,
                encoding=args.encoding,
                solver=args.solver,
                max_attempts=args.max_attempts,
                on_attempt=tried,
            ):
                puzzles.append(p)
                bar.update()
        except GenerationError as exc:
            raise ValueError(str(exc)) from None
    if args.out is None or args.out.suffix.lower() == ".json":
        text = json.dumps(
            [
                {
                    "id": int(p.label) if p.label is not None else i,
                    "solution": [list(r) for r in p.solution or ()],
                    "clues": p.clues_dict(),
                }
                for i, p in enumerate(puzzles)
            ],
            indent=2,
        )
        if args.out is None:
            print(text)
        else:
            write_text(args.out, text + "\n")
    else:
        write_puzzles(puzzles, args.out)
    if args.out is not None:
        print(f"wrote {len(puzzles)} puzzles to {args.out}", file=sys.stderr)
    return 0


def _encode(args: argparse.Namespace) -> int:
    from nonolab.measure.puzzle_files import read_puzzles
    from nonolab.sat.encodings import get_encoding

    puzzles = read_puzzles(args.file, args.format)
    if args.index is None and len(puzzles) != 1:
        raise ValueError(f"{args.file} holds {len(puzzles)} puzzles: choose one with --index")
    idx = args.index or 0
    if not 0 <= idx < len(puzzles):
        raise ValueError(f"--index {idx} outside 0..{len(puzzles) - 1}")
    p: Puzzle = puzzles[idx]
    try:
        enc = get_encoding(args.encoding)(p)
    except KeyError as exc:
        raise ValueError(str(exc.args[0])) from None
    text = enc.to_dimacs()
    text = text.replace("\n", f" puzzle_hash={p.hash} label={p.label}\n", 1)
    if args.out:
        write_text(args.out, text, encoding="ascii")
    else:
        sys.stdout.write(text)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``stats``, ``generate`` and ``encode`` to the CLI."""
    from nonolab.cli.options import (
        encoding_name,
        non_negative_int,
        positive_int,
        positive_seconds,
        solver_name,
    )

    fmt_help = f"input format (default: from the extension/content); one of {', '.join(FORMATS)}"

    p = sub.add_parser(
        "stats",
        help="SAT solver statistics of every puzzle in a file (all solvers x encodings)",
        description="One record per puzzle x encoding x solver; fresh solver per run, clauses in "
        "the encoding's order, counters from python-sat accum_stats().",
    )
    p.add_argument("file", type=Path, help="puzzle file (any supported format)")
    p.add_argument("--format", choices=FORMATS, help=fmt_help)
    p.add_argument(
        "--solver",
        action="append",
        type=solver_name,
        help="python-sat solver name (repeatable; default: minisat22, glucose42, cadical195)",
    )
    p.add_argument(
        "--encoding",
        action="append",
        type=encoding_name,
        help="encoding (repeatable; default: every registered)",
    )
    p.add_argument(
        "--conf-budget", type=positive_int, help="max conflicts per run (then status unknown)"
    )
    p.add_argument(
        "--time-limit", type=positive_seconds, help="max wall seconds per run (status unknown)"
    )
    p.add_argument("--json", action="store_true", help="JSON Lines output, one record per run")
    p.set_defaults(func=_stats)

    g = sub.add_parser(
        "generate",
        help="random puzzles with a fixed number of filled cells and a unique solution",
        description="COUNT distinct random puzzles, each with exactly FILLED filled cells and "
        "a unique solution (proven by SAT), drawn from a seeded generator. Progress goes to "
        "stderr when it is a terminal.",
    )
    g.add_argument("--height", type=positive_int, default=10, help="rows of each grid")
    g.add_argument("--width", type=positive_int, default=10, help="columns of each grid")
    g.add_argument(
        "--filled",
        type=non_negative_int,
        default=None,
        help="filled cells per grid (default: half the cells, rounded down)",
    )
    g.add_argument("--count", type=positive_int, default=1, help="distinct puzzles (default 1)")
    g.add_argument("--seed", type=int, required=True, help="seed of numpy.random.default_rng")
    g.add_argument(
        "--encoding",
        type=encoding_name,
        default="block_start",
        help="CNF encoding used to prove uniqueness",
    )
    g.add_argument(
        "--solver", type=solver_name, default="minisat22", help="solver used to prove uniqueness"
    )
    g.add_argument(
        "--max-attempts",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="random grids tried per puzzle before giving up (exit 2)",
    )
    g.add_argument(
        "--timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="give up (exit 2) after S wall seconds in all (default: no limit)",
    )
    g.add_argument(
        "--out",
        type=Path,
        help="output file: .json (study puzzle file; default, to stdout), .non/.nonpack, "
        ".nin (one puzzle) or .txt (TAAI)",
    )
    g.set_defaults(func=_generate)

    e = sub.add_parser(
        "encode",
        help="write a puzzle's CNF as DIMACS",
        description="Write the CNF of one puzzle (a single-puzzle file, or --index of a "
        "multi-puzzle one) in the chosen encoding as DIMACS text; the header comment names the "
        "puzzle's clue hash and label.",
    )
    e.add_argument("file", type=Path, help="puzzle file (any supported format)")
    e.add_argument("--format", choices=FORMATS, help=fmt_help)
    e.add_argument("--encoding", type=encoding_name, default="block_start", help="CNF encoding")
    e.add_argument(
        "--index", type=non_negative_int, help="0-based puzzle index in a multi-puzzle file"
    )
    e.add_argument(
        "--dimacs", action="store_true", help="DIMACS output (the only output format; accepted)"
    )
    e.add_argument("--out", type=Path, help="output file (default: stdout)")
    e.set_defaults(func=_encode)
