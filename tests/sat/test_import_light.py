"""nonolab.sat stays light: importing any of its modules loads no table, plotting, workflow or
JIT library (pandas, pyarrow, matplotlib, snakemake, numba), and the solver runs without numba."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nonolab

SRC = str(Path(nonolab.__file__).resolve().parents[1])

MODULES = (
    "nonolab.sat",
    "nonolab.sat.puzzles",
    "nonolab.sat.solvers",
    "nonolab.sat.fastsolve",
    "nonolab.sat.result",
    "nonolab.sat.remaining",
    "nonolab.sat.guided",
    "nonolab.sat.fallback",
    "nonolab.sat.cubes",
    "nonolab.sat.bpsolve",
    "nonolab.sat.hardsolve",
    "nonolab.sat.generate",
    "nonolab.sat.formats",
    "nonolab.sat.linesolver",
    "nonolab.sat.encodings",
    "nonolab.sat.encodings.block_start",
    "nonolab.sat.encodings.order",
)
HEAVY = ("pandas", "pyarrow", "matplotlib", "snakemake", "numba")


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_sat_modules_import_no_heavy_library():
    """Every module of nonolab.sat (those of :data:`MODULES` and any other file of the package)
    imports none of :data:`HEAVY`, directly or through another module."""
    sat = Path(SRC) / "nonolab" / "sat"
    found = {
        ".".join(("nonolab", *f.relative_to(sat.parent).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for f in sat.rglob("*.py")
    }
    assert set(MODULES) <= found
    code = (
        "import sys\n"
        f"import {', '.join(sorted(found))}\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    res = _run(code)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_solver_runs_without_numba():
    """With numba not installed (an import of it fails), the hybrid solver's BP guidance uses
    the numpy line kernel and solves as usual."""
    code = (
        "import sys\n"
        "sys.modules['numba'] = None  # import numba now raises ImportError\n"
        "from nonolab.sat import bpsolve\n"
        "from nonolab.sat.fastsolve import solve\n"
        "from nonolab.sat.puzzles import Puzzle\n"
        "import random\n"
        "rng = random.Random(4)\n"
        "g = [[int(rng.random() < 0.5) for _ in range(20)] for _ in range(20)]\n"
        "r = solve(Puzzle.from_grid(g), guide='bp')\n"
        "assert bpsolve._compiled_kernel() is None\n"
        "print(r.status, r.times['guide_s'] > 0)\n"
    )
    res = _run(code)
    assert res.returncode == 0, res.stderr
    status, guided = res.stdout.split()
    assert status in ("unique", "multiple") and guided == "True"


def test_solve_cli_reads_puzzle_files_without_pandas(tmp_path):
    """``nonolab solve`` on a non-table puzzle file needs only the core dependencies: with
    pandas not importable it reads the file, solves it and proves the solution unique."""
    from nonolab.sat.formats import write_puzzles
    from nonolab.sat.puzzles import Puzzle

    path = tmp_path / "p.non"
    write_puzzles([Puzzle.from_grid([[1, 0, 1], [1, 1, 1], [0, 1, 0]])], path)
    code = (
        "import sys\n"
        "sys.modules['pandas'] = None  # import pandas now raises ImportError\n"
        "from nonolab.cli import main\n"
        f"sys.exit(main(['solve', {str(path)!r}]))\n"
    )
    res = _run(code)
    assert res.returncode == 0, res.stderr + res.stdout
    assert "unique" in res.stdout
