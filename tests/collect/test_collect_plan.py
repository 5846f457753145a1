"""The platform reads the plan files `nonolab design` writes (nonolab.design.plan), refuses plans
it cannot serve, and its export of a plan with another session length validates with the
preset it writes."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pytest
import yaml
from serve_helpers import Scripted, join, post_answers, rating, solve_moves

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.export import export_study, puzzle_file_records  # noqa: E402
from nonolab.collect.plan import PlanError, load_plan  # noqa: E402
from nonolab.collect.store import Store  # noqa: E402
from nonolab.design.plan import PlanPuzzle, make_plan, study_puzzle_records, write_plan  # noqa: E402
from nonolab.sat.puzzles import Puzzle  # noqa: E402


def design_plan(k: int, m: int, seed: int, tmp_path, platform=None):
    rng = np.random.default_rng(seed)
    puzzles, seen = [], set()
    while len(puzzles) < k:
        p = Puzzle.from_grid(rng.integers(0, 2, (4, 5)).tolist())
        if p.hash not in seen:
            seen.add(p.hash)
            puzzles.append(PlanPuzzle(len(puzzles), p))
    queues = [list(q) for q in itertools.permutations(range(k), m)][: 2 * k]
    kw = {"platform": platform} if platform else {}
    plan = make_plan("t", puzzles, queues, k, {"selection": seed}, **kw)
    return plan, write_plan(plan, tmp_path / f"plan-{k}-{m}-{seed}.yaml")


@pytest.mark.parametrize("k,m,seed", [(3, 3, 0), (4, 2, 1), (5, 4, 2), (6, 1, 3)])
def test_design_plans_are_served_as_written(k, m, seed, tmp_path):
    plan, path = design_plan(k, m, seed, tmp_path, platform={"hint_limit": 2})
    served = load_plan(path)
    assert served.per_session == m
    assert served.sessions == [list(s.puzzles) for s in plan.sessions]
    assert {i: p.hash for i, p in served.puzzles.items()} == {
        p.id: p.puzzle_hash for p in plan.puzzles
    }
    assert served.platform["hint_limit"] == 2
    assert len(served.platform["surveys"]["post"]) == 3 * m + 2
    # the puzzle file the export writes is the one the design module writes from the plan
    assert puzzle_file_records(served) == [
        {k2: r[k2] for k2 in ("id", "solution", "clues")} for r in study_puzzle_records(plan)
    ]


def test_a_two_puzzle_session_exports_with_its_preset(tmp_path):
    from nonolab.cli.commands.validate import validate_study

    _, path = design_plan(4, 2, 5, tmp_path)
    plan = load_plan(path)
    store = Store(str(tmp_path / "s.sqlite"))
    client = TestClient(create_app(plan, store, "x"))
    for _ in range(3):
        p = Scripted(client, join(client))
        p.setup()
        for k in (1, 2):
            pid = p.state()["session"]["puzzle"]["id"]
            p.send(*solve_moves(plan.puzzles[pid].solution), {"kind": "check"}, rating(k))
        p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(2)})
    export_study(store, plan, tmp_path / "study")
    preset = tmp_path / "study" / "preset.yaml"
    assert yaml.safe_load(preset.read_text())["puzzles_per_session"] == 2
    report = validate_study(tmp_path / "study", str(preset))
    assert report["problems"] == [] and report["summary"]["attempts"] == 6
    store.close()


def _write(tmp_path, raw) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(raw))
    return str(f)


@pytest.mark.parametrize(
    "change,msg",
    [
        (lambda r: r["puzzles"][0]["clues"]["rows"].__setitem__(0, [5]), "clues"),
        (lambda r: r["puzzles"][0].__setitem__("puzzle_hash", "0" * 64), "hash"),
        (lambda r: r["schedule"]["sessions"][0].__setitem__("puzzles", [0, 1, 9]), "unknown"),
        (lambda r: r["schedule"]["sessions"][0].__setitem__("puzzles", [0, 1]), "3 distinct"),
        (lambda r: r.__setitem__("platform", {"hint_limt": 3}), "platform"),
        (lambda r: r.__setitem__("platform", {"warmup": {"time_limit_s": -1}}), "platform"),
        (lambda r: r.__setitem__("platform", {"completion": {"redirect_url": "javascript:x"}}),
         "platform"),
    ],
)  # fmt: skip
def test_plans_the_platform_cannot_serve_are_refused(plan, tmp_path, change, msg):
    raw = json.loads(json.dumps(plan.raw))
    change(raw)
    with pytest.raises(PlanError, match=msg):
        load_plan(_write(tmp_path, raw))
