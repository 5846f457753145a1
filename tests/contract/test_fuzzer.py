"""The contract fuzzer: random compositions of mutation operators (tests/contract/mutations.py)
on the example study and on the minimal study of docs/data-format.md; after any mutation every
derived table is unchanged, or `validate` names the mutated file, or the ingest stops with an
error naming it (docs/bad-input.md, "Contract fuzzer").

Log-file cases are batched: one mutated study holds the 30 participants of the example study,
each mutated by its own composition of 1-3 operators (log files are read independently, so the
cases do not interact; a case that copies or splits a file keeps its copies to itself), and each
case counts as one mutated study: ``LOG_EXAMPLES`` x 30 cases. Puzzle-file and coded-responses
mutations change the whole study: one per example, on a three-participant cut of the example
study with its coded responses, and on the minimal study of docs/data-format.md.

Under ``make test`` (and CI) the examples are drawn from a fixed seed (tests/conftest.py,
profile ``deterministic``) with the default budgets below: every run checks the same cases.
``make fuzz`` explores: new random examples, larger budgets (``NONOLAB_EXPLORE=1``).

A failure is reduced to the one failing case (then shrunk by hypothesis) and saved in the
found-cases folder (:data:`FOUND`: ``$NONOLAB_FUZZ_FOUND``, by default
``<temporary folder>/nonolab-fuzz-found``), never into the source tree. ``make fuzz-promote``
(tests/contract/promote.py) moves the saved cases into tests/contract/regressions/, which
test_regressions.py replays: promoting a case is a decision, made on purpose.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import (
    BASES,
    GLOBAL_OPS,
    LOG_OPS,
    OPEN_OPS,
    ContractViolation,
    base_study,
    check_cases,
)

#: where a failing case is saved (promoted into tests/contract/regressions/ by promote.py)
FOUND = Path(
    os.environ.get("NONOLAB_FUZZ_FOUND") or Path(tempfile.gettempdir()) / "nonolab-fuzz-found"
)
#: hypothesis examples of each test: the fast tier (`make test`) 25 log batches (750 cases) and
#: 25 global cases, the CI tier (NONOLAB_SLOW=1) 70 and 60; NONOLAB_FUZZ_* to run more or fewer
_CI_TIER = os.environ.get("NONOLAB_SLOW", "").lower() in ("1", "true", "yes")
LOG_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_LOG_EXAMPLES", "70" if _CI_TIER else "25"))
GLOBAL_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_GLOBAL_EXAMPLES", "60" if _CI_TIER else "25"))
PARTICIPANTS = 30
#: exploration only (``make fuzz``): seconds after which the remaining examples return at once
SECONDS = float(os.environ.get("NONOLAB_FUZZ_SECONDS", "0")) or None
_START = time.monotonic()


def _out_of_time(share: float) -> bool:
    """True once an exploration's time budget (``share`` of :data:`SECONDS`, counted from
    the session start, the log test first) is spent."""
    return SECONDS is not None and time.monotonic() - _START > share * SECONDS


ints = st.integers(0, 2**16)


def ops(names):
    return st.lists(
        st.fixed_dictionaries({"op": st.sampled_from(names), "a": ints, "b": ints, "f": ints}),
        min_size=1,
        max_size=3,
    )


log_batch = st.lists(
    ops([o for o in LOG_OPS if o not in OPEN_OPS]), min_size=PARTICIPANTS, max_size=PARTICIPANTS
).map(lambda batch: [{"p": p, "ops": o} for p, o in enumerate(batch)])
global_case = st.fixed_dictionaries(
    {"global": st.just(True), "ops": ops([o for o in GLOBAL_OPS if o not in OPEN_OPS])}
)
SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    "print_blob": True,
}


#: the case saved last per base study in this session: hypothesis replays a failure while it
#: shrinks it and last of all with the minimal example, so only that one is kept
_SAVED: dict[str, Path] = {}


def save_regression(base: str, case: dict, exc: Exception) -> Path:
    """Write one failing case as <FOUND>/<base>-<hash>.json (an open regression case), remove
    the case this session saved before for ``base`` (a step of the same shrinking), and return
    its path."""
    FOUND.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(json.dumps([base, case], sort_keys=True).encode()).hexdigest()[:12]
    path = FOUND / f"{base}-{key}.json"
    old = _SAVED.get(base)
    if old is not None and old != path:
        old.unlink(missing_ok=True)
    _SAVED[base] = path
    record = {"base": base, "case": case, "status": "open", "found": str(exc)[:600]}
    path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def run_checked(tmp: Path, base_name: str, cases: list[dict]) -> None:
    """Check ``cases`` on the base study; on a violation find the first case that fails alone,
    save it as a regression and fail naming it."""
    base, themes = base_study(base_name, tmp.parent / "bases")
    try:
        check_cases(tmp, base, cases, themes)
    except ContractViolation:
        for case in cases:
            try:
                check_cases(tmp, base, [case], themes)
            except ContractViolation as one:
                path = save_regression(base_name, case, one)
                raise ContractViolation(
                    f"{one}\ncase saved as {path}; `make fuzz-promote` makes it a regression case"
                ) from None
        raise


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=LOG_EXAMPLES, **SETTINGS)
@given(cases=log_batch)
def test_log_mutations_keep_the_contract(fuzz_dir, cases):
    if _out_of_time(0.7):
        return
    run_checked(fuzz_dir / "logs", "example", cases)


@settings(max_examples=GLOBAL_EXAMPLES, **SETTINGS)
@given(base=st.sampled_from(sorted(b for b in BASES if b != "example")), case=global_case)
def test_puzzle_and_coded_mutations_keep_the_contract(fuzz_dir, base, case):
    if _out_of_time(1.0):
        return
    run_checked(fuzz_dir / "global", base, [case])
