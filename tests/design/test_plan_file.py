"""The plan file: round trip, validation of what the schema cannot say, the pipeline's inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.design.plan import (
    PlanError,
    PlanPuzzle,
    load_plan,
    make_plan,
    plan_from_dict,
    write_plan,
    write_study_files,
)
from nonolab.sat.puzzles import Puzzle, load_study_puzzles
from nonolab.study.presets import load_preset


def _puzzles(k: int, seed: int, h: int = 5, w: int = 5) -> list[PlanPuzzle]:
    rng = np.random.default_rng(seed)
    out: list[PlanPuzzle] = []
    seen: set[str] = set()
    while len(out) < k:
        p = Puzzle.from_grid(rng.integers(0, 2, (h, w)).tolist())
        if p.hash in seen:
            continue
        seen.add(p.hash)
        out.append(PlanPuzzle(len(out), p, metrics={"conflicts": float(len(out))}))
    return out


def _plan(k: int = 6, m: int = 3, seed: int = 0, **kw):
    queues = [list(q) for q in itertools.permutations(range(k), m)][: 2 * k]
    return make_plan("t", _puzzles(k, seed), queues, k, {"selection": seed, "schedule": 1}, **kw)


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 7), st.integers(1, 3), st.integers(0, 10_000))
def test_round_trip(k: int, m: int, seed: int) -> None:
    plan = _plan(k, m, seed, analyses=({"name": "a", "kind": "spearman_bt", "role": "primary"},))
    again = plan_from_dict(yaml.safe_load(yaml.safe_dump(plan.to_dict())))
    assert again.to_dict() == plan.to_dict()
    assert again.queues == plan.queues
    assert [p.puzzle_hash for p in again.puzzles] == [p.puzzle_hash for p in plan.puzzles]


def test_write_is_atomic_and_byte_stable(tmp_path) -> None:
    plan = _plan(platform={"consent": "text", "warmup": {"time_limit_s": 60}})
    a = write_plan(plan, tmp_path / "a" / "plan.yaml")
    b = write_plan(load_plan(a), tmp_path / "b" / "plan.yaml")
    assert a.read_bytes() == b.read_bytes()
    assert sorted(x.name for x in a.parent.iterdir()) == ["plan.yaml"]  # no temporary left
    assert load_plan(a).platform == {"consent": "text", "warmup": {"time_limit_s": 60}}


def _mutated(fn) -> dict:
    d = _plan().to_dict()
    fn(d)
    return d


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["puzzles"][0].update(puzzle_hash="0" * 64), "not the hash of its clues"),
        (lambda d: d["puzzles"][1].update(id=0), "appears twice"),
        (
            lambda d: d["puzzles"][0]["solution"][0].__setitem__(
                0, 1 - d["puzzles"][0]["solution"][0][0]
            ),
            "puzzles/0",
        ),
        (lambda d: d["schedule"]["sessions"][0].update(puzzles=[0, 1]), "serves 2 puzzles"),
        (lambda d: d["schedule"]["sessions"][0].update(puzzles=[0, 1, 9]), "unknown puzzle ids"),
        (lambda d: d["schedule"]["sessions"][0].update(puzzles=[0, 1, 1]), "serves a puzzle twice"),
        (lambda d: d["schedule"]["sessions"][1].update(session=5), "numbered 5"),
        (lambda d: d.update(puzzles_per_session=9), "only 6 puzzles"),
        (lambda d: d.update(extra=1), "Additional properties"),
        (lambda d: d["puzzles"][0].update(size={"height": 4, "width": 5}), "size"),
    ],
)
def test_invalid_plans_are_refused(mutate, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        plan_from_dict(_mutated(mutate))


def test_study_files_are_read_by_the_pipeline(tmp_path) -> None:
    plan = _plan(k=5, m=2)
    paths = write_study_files(plan, tmp_path)
    loaded = load_study_puzzles(paths["puzzles"])
    assert [p.hash for p in loaded] == [p.puzzle_hash for p in plan.puzzles]
    assert [p.label for p in loaded] == [str(p.id) for p in plan.puzzles]
    preset = load_preset(paths["preset"])
    assert preset.puzzles_per_session == 2
    assert preset.puzzle_file == paths["puzzles"].name
    assert preset.get("fingerprint")["puzzle_hashes"] == {
        str(p.id): p.puzzle_hash for p in plan.puzzles
    }
