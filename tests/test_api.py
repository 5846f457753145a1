"""The Python API: ``import nonolab`` gives the main entry points, loaded on first use, each
documented and typed; the example scripts under docs/examples run."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import nonolab
import nonolab.api

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "docs" / "examples").glob("*.py"))
HEAVY = ("pandas", "numpy", "scipy", "sklearn", "statsmodels", "snakemake", "matplotlib", "pysat")


def test_import_nonolab_loads_no_heavy_library():
    code = (
        "import json, sys, nonolab\n"
        "names = nonolab.__all__\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == []


def test_the_api_names_match():
    assert set(nonolab.API) == set(nonolab.api.__all__)
    assert set(nonolab.API) <= set(dir(nonolab))


@pytest.mark.parametrize("name", nonolab.API)
def test_every_entry_point_is_documented_and_typed(name):
    obj = getattr(nonolab, name)
    assert obj is getattr(nonolab.api, name)
    doc = inspect.getdoc(obj) or ""
    assert len(doc.split()) >= 15, f"nonolab.{name} has no real docstring"
    if inspect.isfunction(obj):
        hints = typing.get_type_hints(obj, globalns=_type_namespace())
        assert "return" in hints, f"nonolab.{name} has no return type"
        params = inspect.signature(obj).parameters
        assert set(params) <= set(hints), f"nonolab.{name}: untyped {set(params) - set(hints)}"
        assert "Return" in doc or "return" in doc, f"nonolab.{name}: says nothing of its result"


def _type_namespace() -> dict:
    """The names the API's annotations use (imported only for type checking there)."""
    import pandas as pd

    from nonolab.sat.puzzles import Puzzle
    from nonolab.stats.lmm import CrossedFit
    from nonolab.stats.pauses import PauseModel
    from nonolab.study.ingest import IngestResult

    return {
        **vars(nonolab.api),
        "pd": pd,
        "Puzzle": Puzzle,
        "CrossedFit": CrossedFit,
        "PauseModel": PauseModel,
        "IngestResult": IngestResult,
    }


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        nonolab.no_such_entry_point  # noqa: B018


def test_generated_puzzles_are_unique_and_seeded():
    a = nonolab.generate_puzzles(3, 6, 7, seed=11)
    b = nonolab.generate_puzzles(3, 6, 7, seed=11)
    assert [p.hash for p in a] == [p.hash for p in b]
    assert len({p.hash for p in a}) == 3
    for p in a:
        assert (p.height, p.width) == (6, 7)
        assert sum(map(sum, p.solution)) == 6 * 7 // 2
        assert nonolab.solve(p).status == "unique"


def test_bt_ranking_orders_a_consistent_study():
    """Every participant rates puzzle c above b above a: the strengths follow that order and
    the table carries no published-analysis columns."""
    import pandas as pd

    rows = [
        {
            "participant_id": f"p{i}",
            "puzzle_id": pid,
            "puzzle_hash": f"h{pid}",
            "final_difficulty": r,
        }
        for i in range(6)
        for pid, r in (("a", 1), ("b", 3), ("c", 5))
    ]
    rows.append(
        {"participant_id": "q", "puzzle_id": "a", "puzzle_hash": "ha", "final_difficulty": 4}
    )
    rows.append(
        {"participant_id": "q", "puzzle_id": "c", "puzzle_hash": "hc", "final_difficulty": 2}
    )
    t = nonolab.bt_ranking(pd.DataFrame(rows))
    s = t.set_index("puzzle_id")["strength"]
    assert s["c"] > s["b"] > s["a"]
    assert list(t.sort_values("rank")["puzzle_id"]) == ["c", "b", "a"]
    assert not [c for c in t.columns if "published" in c]


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_script_runs(script):
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "MPLBACKEND": "Agg"}
    res = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, env=env
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr


def test_there_is_an_example_script():
    assert EXAMPLES, "docs/examples/*.py: no example script"


@pytest.mark.slow
def test_the_reference_documents_every_entry_point(tmp_path):
    """`make docs` (pdoc, the dev extra) writes a page per module; nonolab's lists every name."""
    import re

    make = (REPO / "Makefile").read_text(encoding="utf-8")
    modules = re.search(r"^DOC_MODULES := ((?:.*\\\n)*.*)$", make, re.M).group(1)
    modules = modules.replace("\\\n", " ").split()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run(
        [sys.executable, "-m", "pdoc", "--docformat", "restructuredtext", "-o", str(tmp_path)]
        + modules,
        capture_output=True,
        text=True,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "nonolab.html").read_text(encoding="utf-8")
    for name in nonolab.API:
        assert f'id="{name}"' in page, f"the reference does not document nonolab.{name}"
    for module in modules[1:]:
        assert (tmp_path / (module.replace(".", "/") + ".html")).is_file(), module
