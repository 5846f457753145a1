"""Density-0.5 frontier: BP decimation checked by CDCL on seeded random boards.

Runs :func:`nonolab.sat.bpsolve.decimate` (belief propagation between rows and columns, decimation
of the most polarised ``--frac`` of the unknown cells per round, every round checked by one
incremental CaDiCaL 1.9.5 with a ``--budget`` conflict limit and bisected when refuted; see the
module docstring) on the solve benchmark's random boards (``solve_bench.random_suite``: the same
seed, size, density and index give the same board), one board at a time on one core, and
records per board: status (``solved``: a grid verified against every clue; ``unsat``;
``unknown`` at ``--timeout``), time, checks, flips, backtracks, guesses and known cells.

This is the first-solution search alone, as a sweep over boards and parameters; ``nonolab
solve`` runs it inside its fallback (after 50,000 CaDiCaL conflicts, then a uniqueness check),
and ``solve_bench.py`` measures that end to end. Writes ``results/bench/bp_frontier.json``.

    python benchmarks/bp_frontier.py                      # board 0 of the benchmark, ~10 min
    python benchmarks/bp_frontier.py --boards 0,1,2 --timeout 1200
    python benchmarks/bp_frontier.py --boards 5 --frac 0.04 --timeout 300 --trace

``--trace`` adds each board's checks (guesses assumed, how many disagree with the generating
grid, result, seconds): where a path first takes a guess that no solution shares.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from solve_bench import random_suite  # noqa: E402

from nonolab import __version__  # noqa: E402
from nonolab.sat.bpsolve import DecimationStats, decimate  # noqa: E402
from nonolab.sat.linesolver import propagate  # noqa: E402
from nonolab.sat.remaining import new_solver, remaining_encoding  # noqa: E402
from nonolab.sat.result import verified  # noqa: E402


class TracingSolver:
    """The part of a python-sat solver that :func:`decimate` uses, passed through to ``solver``,
    recording each check as ``[assumed guesses, guesses that disagree with the generating
    grid, result (True model / False refuted / None budget out), seconds]`` in ``trace``.

    A guess that disagrees with the generating grid is not necessarily wrong (a board may have
    other solutions), but a refuted check with no disagreement cannot happen on a board whose
    generating grid is its only solution."""

    def __init__(self, solver, generator: list[list[int]]) -> None:
        self.solver, self.generator = solver, generator
        self.width = len(generator[0])
        self.trace: list[list] = []

    def conf_budget(self, budget: int) -> None:
        self.solver.conf_budget(budget)

    def get_model(self) -> list[int]:
        return self.solver.get_model()

    def solve_limited(self, assumptions: list[int]) -> bool | None:
        t = time.perf_counter()
        res = self.solver.solve_limited(assumptions=assumptions)
        bad = 0
        for lit in assumptions:
            r, c = divmod(abs(lit) - 1, self.width)
            bad += self.generator[r][c] != int(lit > 0)
        self.trace.append([len(assumptions), bad, res, round(time.perf_counter() - t, 3)])
        return res


def run_board(
    puzzle,
    frac: float,
    budget: int,
    timeout: float,
    guess_seed: int | None = None,
    generator: list[list[int]] | None = None,
) -> dict:
    """Return one board's record (times in seconds); with ``generator`` (the grid the board was
    made from) it has a ``trace`` of every check (:class:`TracingSolver`)."""
    t0 = time.perf_counter()
    state = propagate(puzzle)
    enc = remaining_encoding(puzzle, state)
    stats = DecimationStats()
    with new_solver("cadical195", enc.clauses) as s0:
        s = s0 if generator is None else TracingSolver(s0, generator)
        ok, model = decimate(
            puzzle,
            state,
            s,
            frac=frac,
            check_conflicts=budget,
            deadline=t0 + timeout,
            stats=stats,
            seed=guess_seed,
        )
        if ok:
            verified(puzzle, enc.decode(model))  # raises if a clue is broken
    status = {True: "solved", False: "unsat", None: "unknown"}[ok]
    rec = {"label": puzzle.label, "puzzle_hash": puzzle.hash, "status": status}
    rec["time_s"] = round(time.perf_counter() - t0, 1)
    rec["cells_by_propagation"] = state.n_known()
    rec.update({k: round(v, 1) if isinstance(v, float) else v for k, v in vars(stats).items()})
    if generator is not None:
        rec["trace"] = s.trace
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=20260301)
    ap.add_argument("--density", type=float, default=0.5)
    ap.add_argument("--size", type=int, default=112)
    ap.add_argument("--boards", default="0", help="board indices, e.g. 0,1,2")
    ap.add_argument("--frac", type=float, default=0.02, help="share of unknown cells per round")
    ap.add_argument("--budget", type=int, default=5000, help="conflicts per CaDiCaL check")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per board")
    ap.add_argument("--guess-seed", type=int, default=None, help="random guesses (decimate's seed)")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="record every check: guesses assumed, how many disagree with the generating grid, "
        "result, seconds",
    )
    ap.add_argument("--out", default="results/bench/bp_frontier.json")
    args = ap.parse_args(argv)
    idx = [int(x) for x in args.boards.split(",")]
    suite = random_suite([args.density], max(idx) + 1, args.size, args.seed)
    boards = []
    for i in idx:
        rec = {
            "board": i,
            **run_board(
                suite[i][0],
                args.frac,
                args.budget,
                args.timeout,
                args.guess_seed,
                suite[i][1]["generator"] if args.trace else None,
            ),
        }
        print(json.dumps({k: v for k, v in rec.items() if k != "trace"}), flush=True)
        boards.append(rec)
    out = {
        "suite": {"size": args.size, "density": args.density, "seed": args.seed},
        "params": {
            "frac": args.frac,
            "budget": args.budget,
            "timeout_s": args.timeout,
            "guess_seed": args.guess_seed,
            "trace": args.trace,
        },
        "boards": boards,
        "nonolab": __version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
