"""The platform fuzzer in CI (tests/collect/platform_fuzz.py): honest and hostile clients
interleaved against a real server on 127.0.0.1, on SQLite and PostgreSQL, seeded and bounded.

The fast tier plays one seeded case per database (with the researcher's cheap actions:
abandon-and-replace and an export beside a foreign file); ``NONOLAB_SLOW=1`` plays more seeds,
more participants and more rounds, with every researcher action (``--exclude`` and a restart
with another plan too). Each run prints its case count, requests and time. A failing case
is shrunk and written, with its problems, to ``$NONOLAB_FUZZ_RESULTS`` (default: the test's
temporary folder), never into the source tree; a case copied on purpose into
``tests/collect/fuzz_regressions/`` is replayed by ``test_promoted_regressions``.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path

import pytest
from platform_fuzz import generate, run_case, save_case, shrink
from serve_helpers import PLAN

REGRESSIONS = Path(__file__).with_name("fuzz_regressions")


def _results_dir(tmp_path: Path) -> Path:
    return Path(os.environ.get("NONOLAB_FUZZ_RESULTS") or tmp_path / "fuzz-results")


def _play(cases, plan, db_factory, tmp_path, capsys, name):
    t0 = time.monotonic()
    total = 0
    for k, case in enumerate(cases):
        work = tmp_path / f"case{k}"
        problems, n = run_case(case, PLAN, plan, db_factory(work), work)
        total += n
        if problems:
            tries = itertools.count()

            def fails(c, tries=tries):
                w = tmp_path / f"shrink-{next(tries)}"
                return bool(run_case(c, PLAN, plan, db_factory(w), w)[0])

            small = shrink(case, fails, budget=6)
            out = save_case(small, _results_dir(tmp_path), f"{name}-seed{case['seed']}", problems)
            pytest.fail(f"platform fuzzer ({name}, seed {case['seed']}): {problems[:5]}; "
                        f"shrunk case written to {out}")  # fmt: skip
    with capsys.disabled():
        print(f"\nplatform fuzzer [{name}]: {len(cases)} cases, "
              f"{sum(len(r) for c in cases for r in c['rounds'])} hostile actions, "
              f"{total} requests, {time.monotonic() - t0:.1f} s")  # fmt: skip


def _sqlite(work: Path) -> str:
    work.mkdir(parents=True, exist_ok=True)
    return str(work / "study.sqlite")


@pytest.fixture
def pg_factory(request):
    pg = request.getfixturevalue("pg_cluster_module")
    server = request.getfixturevalue("pg_server")
    return lambda work: pg.create_database(server)


#: the researcher's actions of the fast tier: those without a child process (``exclude`` and
#: ``wrong_plan`` start ``nonolab serve`` once more, seconds each on a loaded machine: slow tier)
CHEAP_RESEARCHER = {"abandon": 1, "export_foreign": 1}


def test_platform_fuzz_sqlite(plan, tmp_path, capsys):
    _play([generate(1, honest=3, hostile=2, rounds=14, per_round=3,
                    researcher=CHEAP_RESEARCHER)], plan, _sqlite, tmp_path, capsys, "sqlite")  # fmt: skip


def test_platform_fuzz_postgresql(plan, tmp_path, capsys, pg_factory):
    _play([generate(2, honest=3, hostile=2, rounds=14, per_round=3,
                    researcher=CHEAP_RESEARCHER)], plan, pg_factory, tmp_path, capsys,
          "postgresql")  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_platform_fuzz_heavy(plan, tmp_path, capsys, backend, request):
    factory = _sqlite if backend == "sqlite" else request.getfixturevalue("pg_factory")
    cases = [generate(s, honest=6, hostile=3, rounds=30, per_round=5, restarts=2)
             for s in (11, 12, 13)]  # fmt: skip
    _play(cases, plan, factory, tmp_path, capsys, f"{backend}-heavy")


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.json")), ids=lambda p: p.stem)
def test_promoted_regressions(plan, tmp_path, capsys, path):
    case = json.loads(path.read_text())
    _play([case], plan, _sqlite, tmp_path, capsys, f"regression {path.stem}")
