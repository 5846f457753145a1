"""Solve benchmark: nonolab's hybrid solver against OR-Tools CP-SAT and the plain SAT path.

Suites (see ``../shared/benchmarks/README.md`` for the sources):

* ``taai``: TAAI 2011, 1,000 25x25 puzzles; every answer is checked against ``solution/``
  (equal when unique; when several solutions exist, both grids found are checked against the
  clues and the published grid against the clues);
* ``survey``: the webpbn survey puzzles of FastNonogramSolver (``puzzles/survey/*.nin``; Knotty
  and Faase ship two solutions each, which must come out as ``multiple``);
* ``gramcracker``: the gramcracker ``.txt`` puzzles (survey and examples);
* ``random``: seeded random 112x112 grids at densities 0.5, 0.6, 0.7 (clues read off the grid).

Per instance: status, time to the first solution and to the uniqueness proof, phase times, the
answer check; and, on a subset, the same puzzle with (a) OR-Tools CP-SAT (one automaton
constraint per line, 1 worker and all workers, capped) and (b) the plain block-start + CaDiCaL
path (``nonolab.sat.solvers.uniqueness``, capped by a conflict budget since CaDiCaL cannot be
interrupted), and (c) where the hybrid's BP guidance ran, the hybrid without it
(``guide="none"``, baseline ``unguided``). Ratios are baseline time / hybrid time on the
instances both finished.

Writes ``results/bench/solve.json`` and ``results/bench/solve.md``. ``--quick`` is a ~1 minute
run. The machine load (``/proc/loadavg``) before and after is recorded: run the final benchmark
single-process on a quiet machine. ``--bp-jobs N`` gives the BP fallback of the hybrid N
processes (for the density-0.5 boards; every other phase stays on one core).

    .venv/bin/python benchmarks/solve_bench.py --quick
    .venv/bin/python benchmarks/solve_bench.py            # full (~40 min: density 0.5 ~10 min each)
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from nonolab.core.tables import write_json
from nonolab.sat.fastsolve import PHASES, solve
from nonolab.sat.formats import parse_grid, read_puzzles, read_taai_solutions
from nonolab.sat.puzzles import Grid, Puzzle, satisfies

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NONOLAB_SHARED", REPO.parent / "shared")).resolve()
BENCH = SHARED / "benchmarks"


# --------------------------------------------------------------------------------------------
# suites


def taai_suite(limit: int | None) -> list[tuple[Puzzle, dict]]:
    """TAAI 2011 puzzles with their published solution."""
    d = BENCH / "zxkyjimmy+NonogramRecord"
    puzzles = read_puzzles(d / "question/taai2011.txt")
    sols = read_taai_solutions(d / "solution/taai2011.txt")
    out = [(p, {"published": sols[p.label.split(":")[-1]]}) for p in puzzles]
    return out[:limit] if limit else out


def survey_suite() -> list[tuple[Puzzle, dict]]:
    """FastNonogramSolver survey puzzles; Knotty and Faase with their two published solutions."""
    d = BENCH / "hyouv+FastNonogramSolver"
    out = []
    for f in sorted((d / "puzzles/survey").glob("*.nin")):
        (p,) = read_puzzles(f)
        extra: dict[str, Any] = {}
        sol_files = sorted((d / "solutions").glob(f"{f.stem}-*.txt"))
        if sol_files:
            extra["published_all"] = [
                parse_grid(s.read_text(encoding="utf-8"), str(s)) for s in sol_files
            ]
        out.append((p, extra))
    return out


def gramcracker_suite() -> list[tuple[Puzzle, dict]]:
    """gramcracker survey and example puzzles (clues only)."""
    d = BENCH / "danioellay+gramcracker/nonograms"
    files = sorted(d.glob("survey_by_numbers_dataset/*.txt")) + sorted(d.glob("example_*.txt"))
    return [(p, {}) for f in files for p in read_puzzles(f)]


def random_suite(
    densities: list[float], per_density: int, size: int, seed: int
) -> list[tuple[Puzzle, dict]]:
    """Seeded random ``size`` x ``size`` grids; the generating grid is a known solution."""
    out = []
    for d in densities:
        for i in range(per_density):
            rng = random.Random(f"{seed}:{size}:{d}:{i}")
            g = [[int(rng.random() < d) for _ in range(size)] for _ in range(size)]
            p = Puzzle.from_grid(g, label=f"rand{size}-d{d}-{i}")
            out.append((p, {"density": d, "generator": g}))
    return out


# --------------------------------------------------------------------------------------------
# solvers


def run_hybrid(
    p: Puzzle, timeout_s: float | None, bp_jobs: int = 1, guide: str = "bp"
) -> dict[str, Any]:
    """Return the hybrid solver's record (status, grids, phase times in seconds); ``bp_jobs``:
    processes for the BP fallback's restart slices (1: the whole solve on one core);
    ``guide``: its first-solution guidance (``none`` is the ``unguided`` baseline)."""
    r = solve(p, timeout_s=timeout_s, bp_jobs=bp_jobs, guide=guide)
    rec = {
        "status": r.status,
        "time_to_first_s": r.times.get("time_to_first_s"),
        "time_s": r.times["total_s"],
        "phases": {k: v for k, v in r.times.items() if k not in ("total_s",)},
        "counts": r.counts,
        "_grid": r.grid,
        "_second": r.second_grid,
    }
    if r.reason:
        rec["reason"] = r.reason
    return rec


def run_cpsat(p: Puzzle, workers: int, cap_s: float) -> dict[str, Any]:
    """Solve + uniqueness with OR-Tools CP-SAT: one AddAutomaton per line over 0/1 cells."""
    from ortools.sat.python import cp_model

    from nonolab.sat.linesolver import _nfa

    t0 = time.perf_counter()
    m = cp_model.CpModel()
    x = [[m.NewBoolVar(f"x{r}_{c}") for c in range(p.width)] for r in range(p.height)]
    lines = [(p.rows[r], x[r]) for r in range(p.height)]
    lines += [(p.cols[c], [x[r][c] for r in range(p.height)]) for c in range(p.width)]
    for clue, vs in lines:
        mm, one_t, one_s, zero_t, zero_s, loop = _nfa(tuple(clue))
        trans = []
        for s in range(mm + 1):
            if (one_s >> s) & 1:
                trans.append((s, 1, s + 1))
            if (loop >> s) & 1:
                trans.append((s, 0, s))
            elif (zero_s >> s) & 1:
                trans.append((s, 0, s + 1))
        m.AddAutomaton(vs, 0, [mm], trans)

    def _solve(remaining: float):
        sv = cp_model.CpSolver()
        sv.parameters.num_workers = workers
        sv.parameters.max_time_in_seconds = max(remaining, 0.01)
        sv.parameters.random_seed = 0
        st = sv.Solve(m)
        return sv, st

    sv, st = _solve(cap_s)
    first = time.perf_counter() - t0
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        status = "unsat" if st == cp_model.INFEASIBLE else "unknown"
        return {"status": status, "time_to_first_s": None, "time_s": first}
    grid = tuple(tuple(int(sv.Value(v)) for v in row) for row in x)
    ok = satisfies(p, grid)
    m.AddBoolOr(
        [v.Not() if grid[r][c] else v for r, row in enumerate(x) for c, v in enumerate(row)]
    )
    sv2, st2 = _solve(cap_s - (time.perf_counter() - t0))
    total = time.perf_counter() - t0
    if st2 == cp_model.INFEASIBLE:
        status = "unique"
    elif st2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        status = "multiple"
    else:
        status = "unknown"
    return {"status": status, "time_to_first_s": first, "time_s": total, "grid_ok": ok}


def run_cubes(p: Puzzle, cube_vars: int, cap_s: float) -> dict[str, Any]:
    """Cube-and-conquer over all CPUs (``nonolab.sat.cubes.solve_cubes``)."""
    from nonolab.sat.cubes import solve_cubes

    r = solve_cubes(p, jobs=os.cpu_count() or 1, cube_vars=cube_vars, timeout_s=cap_s)
    return {
        "status": r.status,
        "time_s": r.times["total_s"],
        "time_to_first_s": r.times.get("time_to_first_s"),
        "cubes": r.counts.get("cubes"),
        "cubes_undecided": r.counts.get("cubes_undecided"),
    }


def run_plain(p: Puzzle, conf_budget: int) -> dict[str, Any]:
    """Solve + uniqueness with the plain path: full block-start CNF + CaDiCaL (engineer B)."""
    from nonolab.sat.solvers import uniqueness

    t0 = time.perf_counter()
    u = uniqueness(p, "block_start", "cadical195", conf_budget=conf_budget)
    return {"status": u.status, "time_s": time.perf_counter() - t0}


# --------------------------------------------------------------------------------------------
# checks and summaries


def answer_check(p: Puzzle, rec: dict, extra: dict) -> str:
    """Return how the hybrid answer compares with the published/known solution(s)."""
    g: Grid | None = rec.pop("_grid")
    g2: Grid | None = rec.pop("_second")
    if g is None:
        return "no answer"
    if not satisfies(p, g) or (g2 is not None and not satisfies(p, g2)):
        return "WRONG: grid violates the clues"
    if "published" in extra:
        pub = extra["published"]
        if not satisfies(p, pub):
            return "published solution violates the clues"
        if rec["status"] == "unique":
            return "equals published" if g == pub else "WRONG: unique but differs from published"
        if rec["status"] == "multiple":
            return "multiple; both grids satisfy the clues; published grid satisfies the clues"
    if "published_all" in extra:
        pubs = extra["published_all"]
        if len(pubs) > 1 and rec["status"] == "unique":
            return "WRONG: unique but two published solutions exist"
        if rec["status"] == "multiple":
            return f"multiple as published ({len(pubs)} published solutions)"
    if "generator" in extra and rec["status"] == "unique":
        gen = tuple(map(tuple, extra["generator"]))
        return "equals generating grid" if g == gen else "WRONG: unique but not the generator"
    return "satisfies the clues"


def ratio_summary(instances: list[dict], key: str) -> dict[str, Any] | None:
    """Return baseline-vs-hybrid time ratios over instances where the baseline ``key`` ran."""
    both = [i for i in instances if key in i and i[key]["status"] in ("unique", "multiple")]
    ran = [i for i in instances if key in i]
    if not ran:
        return None
    both = [i for i in both if i["hybrid"]["status"] in ("unique", "multiple")]
    out: dict[str, Any] = {
        "instances_run": len(ran),
        "baseline_decided": len(both),
        "baseline_undecided": sum(1 for i in ran if i[key]["status"] == "unknown"),
    }
    if both:
        tb = sum(i[key]["time_s"] for i in both)
        th = sum(i["hybrid"]["time_s"] for i in both)
        out["baseline_total_s"] = tb
        out["hybrid_total_s"] = th
        out["ratio_total"] = tb / th if th > 0 else None
        out["ratio_median"] = statistics.median(
            i[key]["time_s"] / max(i["hybrid"]["time_s"], 1e-6) for i in both
        )
        out["status_agreement"] = sum(i[key]["status"] == i["hybrid"]["status"] for i in both)
    return out


def suite_summary(instances: list[dict]) -> dict[str, Any]:
    """Return counts, total/worst hybrid times (seconds) and baseline ratios of one suite."""
    hy = [i["hybrid"] for i in instances]
    statuses = [h["status"] for h in hy]
    worst = max(instances, key=lambda i: i["hybrid"]["time_s"]) if instances else None
    out = {
        "n": len(instances),
        "unique": statuses.count("unique"),
        "multiple": statuses.count("multiple"),
        "unsat": statuses.count("unsat"),
        "unknown": statuses.count("unknown"),
        "wrong_answers": sum(i["answer_check"].startswith("WRONG") for i in instances),
        "total_s": sum(h["time_s"] for h in hy),
        "total_to_first_s": sum(h["time_to_first_s"] or 0.0 for h in hy),
        "worst_s": worst["hybrid"]["time_s"] if worst else None,
        "worst_label": worst["label"] if worst else None,
        "phase_totals_s": {k: sum(h["phases"].get(k, 0.0) for h in hy) for k in PHASES},
    }
    for key in ("unguided", "cpsat_1", "cpsat_all", "plain", "cubes"):
        r = ratio_summary(instances, key)
        if r is not None:
            out[f"vs_{key}"] = r
    return out


def loadavg() -> list[float] | None:
    """Return the 1/5/15-minute load averages (Linux), or None."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


# --------------------------------------------------------------------------------------------
# main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suites", default="taai,survey,gramcracker,random")
    ap.add_argument("--quick", action="store_true", help="small subsets, ~1 minute")
    ap.add_argument("--taai-limit", type=int, default=None, help="first N TAAI puzzles")
    ap.add_argument("--densities", default="0.5,0.6,0.7")
    ap.add_argument("--random-count", type=int, default=2, help="puzzles per density")
    ap.add_argument("--random-size", type=int, default=112)
    ap.add_argument("--timeout", type=float, default=300.0, help="hybrid cap per puzzle, s")
    ap.add_argument(
        "--random-timeouts",
        default="0.5:1200,0.6:30,0.7:30",
        help="per-density hybrid cap for random puzzles (density:seconds,...)",
    )
    ap.add_argument("--baseline-every", type=int, default=20, help="baselines on every Nth")
    ap.add_argument("--cpsat-cap", type=float, default=20.0, help="CP-SAT cap per puzzle, s")
    ap.add_argument("--plain-budget", type=int, default=200_000, help="plain path conflicts")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument(
        "--cube-vars",
        type=int,
        default=0,
        help="also run cube-and-conquer (2**K cubes over all CPUs) on random puzzles (0 = off)",
    )
    ap.add_argument(
        "--bp-jobs",
        type=int,
        default=1,
        help="processes for the hybrid's BP fallback (default 1: every puzzle on one core)",
    )
    ap.add_argument("--seed", type=int, default=20260301)
    ap.add_argument("--out", default="results/bench/solve.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.taai_limit = args.taai_limit or 40
        args.random_count = 1
        args.random_timeouts = "0.5:10,0.6:10,0.7:10"
        args.densities = "0.6,0.7"
        args.baseline_every = 10
        args.cpsat_cap = 5.0
        args.plain_budget = 20_000
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    rt = {float(a): float(b) for a, b in (x.split(":") for x in args.random_timeouts.split(","))}
    densities = [float(x) for x in args.densities.split(",")]
    try:
        import ortools  # noqa: F401

        have_ortools = True
    except ImportError:
        have_ortools = False
        print("ortools not installed (pip install -e '.[bench]'): no CP-SAT baseline")

    meta = {
        "argv": sys.argv[1:] if argv is None else argv,
        "load_before": loadavg(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": {n: _version(n) for n in ("nonolab", "python-sat", "ortools", "numpy")},
        "seed": args.seed,
        "timeouts": {"hybrid_s": args.timeout, "random_s": rt, "cpsat_s": args.cpsat_cap},
        "plain_conflict_budget": args.plain_budget,
        "baseline_every": args.baseline_every,
        "bp_jobs": args.bp_jobs,
    }
    t_all = time.perf_counter()
    results: dict[str, Any] = {}
    for suite in suites:
        if suite == "taai":
            items = taai_suite(args.taai_limit)
        elif suite == "survey":
            items = survey_suite()
        elif suite == "gramcracker":
            items = gramcracker_suite()
        elif suite == "random":
            items = random_suite(densities, args.random_count, args.random_size, args.seed)
        else:
            raise SystemExit(f"unknown suite {suite!r}")
        instances = []
        t_suite = time.perf_counter()
        for idx, (p, extra) in enumerate(items):
            cap = rt.get(extra["density"], args.timeout) if "density" in extra else args.timeout
            rec = run_hybrid(p, cap, args.bp_jobs)
            inst: dict[str, Any] = {
                "label": p.label,
                "puzzle_hash": p.hash,
                "width": p.width,
                "height": p.height,
                "hybrid": rec,
            }
            if "density" in extra:
                inst["density"] = extra["density"]
            inst["answer_check"] = answer_check(p, rec, extra)
            if args.cube_vars and suite == "random":
                inst["cubes"] = run_cubes(p, args.cube_vars, cap)
            if not args.no_baselines and idx % args.baseline_every == 0:
                if rec["phases"].get("guide_s", 0.0) > 0.0:  # the guidance ran: without it
                    ung = run_hybrid(p, cap, args.bp_jobs, guide="none")
                    ung.pop("_grid")
                    ung.pop("_second")
                    inst["unguided"] = ung
                if have_ortools:
                    inst["cpsat_1"] = run_cpsat(p, 1, args.cpsat_cap)
                    inst["cpsat_all"] = run_cpsat(p, os.cpu_count() or 1, args.cpsat_cap)
                if p.height * p.width <= 2500 or suite != "random":
                    inst["plain"] = run_plain(p, args.plain_budget)
            instances.append(inst)
            print(
                f"{suite} {p.label}: {rec['status']} {rec['time_s']:.3f}s "
                f"({inst['answer_check']})"
                + "".join(
                    f" {k}={inst[k]['status']}/{inst[k]['time_s']:.2f}s"
                    for k in ("unguided", "cpsat_1", "cpsat_all", "plain", "cubes")
                    if k in inst
                ),
                flush=True,
            )
        results[suite] = {
            "summary": suite_summary(instances),
            "wall_s": time.perf_counter() - t_suite,
            "instances": instances,
        }
    meta["load_after"] = loadavg()
    meta["wall_s"] = time.perf_counter() - t_all
    out = {"meta": meta, "suites": results}
    out_path = Path(args.out)
    write_json(out, out_path)
    out_path.with_suffix(".md").write_text(markdown(out), encoding="utf-8")
    print(f"wrote {out_path} and {out_path.with_suffix('.md')}")
    wrong = sum(r["summary"]["wrong_answers"] for r in results.values())
    return 1 if wrong else 0


def markdown(out: dict[str, Any]) -> str:
    """Return the benchmark summary as Markdown."""
    meta = out["meta"]
    lines = [
        "# Solve benchmark (benchmarks/solve_bench.py)",
        "",
        f"Load average before/after: {meta['load_before']} / {meta['load_after']} "
        f"on {meta['cpu_count']} CPUs; wall {meta['wall_s']:.1f} s; "
        f"versions {meta['versions']}.",
        "",
        "Hybrid = nonolab.sat.fastsolve.solve (propagation, restricted order CNF, "
        "solver auto: MiniSat 2.2 up to 1,000 unknown cells, else CaDiCaL 1.9.5, and the "
        "fallback after 50,000 conflicts without a solution: BP decimation checked by CaDiCaL "
        "(nonolab.sat.bpsolve) for up to 1,800 s, then probing clauses + Kissat (nonolab.sat.hardsolve); "
        "first solution guided by belief propagation up to 1,000 unknown cells; uniqueness on "
        "the same instance). Times in seconds, single process"
        + (
            "."
            if meta.get("bp_jobs", 1) == 1
            else f", except the BP fallback: {meta['bp_jobs']} processes (--bp-jobs)."
        ),
        "",
        "| suite | n | unique | multiple | unknown | wrong | total s | to first s | worst s "
        "(puzzle) | " + " | ".join(k[:-2] for k in PHASES) + " |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|" + "---:|" * len(PHASES),
    ]
    for name, r in out["suites"].items():
        s = r["summary"]
        ph = s["phase_totals_s"]
        lines.append(
            f"| {name} | {s['n']} | {s['unique']} | {s['multiple']} | {s['unknown']} | "
            f"{s['wrong_answers']} | {s['total_s']:.2f} | {s['total_to_first_s']:.2f} | "
            f"{s['worst_s']:.2f} ({s['worst_label']}) | "
            + " | ".join(f"{ph[k]:.2f}" for k in PHASES)
            + " |"
        )
    lines += [
        "",
        "## Baselines (same run, subset)",
        "",
        "Ratio = baseline time / hybrid time on the instances both decided (>1: hybrid faster).",
        "",
        "| suite | baseline | run | decided | undecided (cap) | baseline s | hybrid s | "
        "ratio total | ratio median |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    names = {
        "unguided": "hybrid without BP guidance (guide=none)",
        "cpsat_1": "CP-SAT 1 worker",
        "cpsat_all": "CP-SAT all workers",
        "plain": "block_start + CaDiCaL",
        "cubes": "hybrid cube-and-conquer (all CPUs)",
    }
    for name, r in out["suites"].items():
        for key, label in names.items():
            v = r["summary"].get(f"vs_{key}")
            if not v:
                continue
            lines.append(
                f"| {name} | {label} | {v['instances_run']} | {v['baseline_decided']} | "
                f"{v['baseline_undecided']} | {_s(v.get('baseline_total_s'))} | "
                f"{_s(v.get('hybrid_total_s'))} | {_f(v.get('ratio_total'))} | "
                f"{_f(v.get('ratio_median'))} |"
            )
    if "random" in out["suites"]:
        lines += ["", "## Random puzzles", ""]
        lines += [
            "| puzzle | status | time s | to first s | reason | cubes: status | cubes: s |",
            "|---|---|---:|---:|---|---|---:|",
        ]
        for i in out["suites"]["random"]["instances"]:
            h = i["hybrid"]
            cb = i.get("cubes", {})
            lines.append(
                f"| {i['label']} | {h['status']} | {h['time_s']:.2f} | "
                f"{_f(h['time_to_first_s'])} | {h.get('reason', '')} | "
                f"{cb.get('status', '')} | {_f(cb.get('time_s'))} |"
            )
    return "\n".join(lines) + "\n"


def _f(v: float | None) -> str:
    return "" if v is None else f"{v:.2f}"


def _s(v: float | None) -> str:
    """Seconds for a table cell: ``-`` when nothing was timed (no instance decided by both),
    two decimals from 0.1 s on, three significant digits below (a 1 ms puzzle is not 0.00)."""
    if v is None:
        return "-"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3g}"


if __name__ == "__main__":
    sys.exit(main())
