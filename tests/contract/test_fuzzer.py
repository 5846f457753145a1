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

A failure is reduced to the one failing case (then shrunk by hypothesis) and saved under
tests/contract/regressions/, which test_regressions.py replays.
"""

from __future__ import annotations

import hashlib
import json
import os
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

REGRESSIONS = Path(__file__).parent / "regressions"
#: hypothesis examples of each test (CI: the defaults; NONOLAB_FUZZ_* to run more or fewer)
LOG_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_LOG_EXAMPLES", "70"))
GLOBAL_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_GLOBAL_EXAMPLES", "60"))
PARTICIPANTS = 30

ints = st.integers(0, 2**16)


def ops(names):
    return st.lists(
        st.fixed_dictionaries({"op": st.sampled_from(names), "a": ints, "b": ints, "f": ints}),
        min_size=1,
        max_size=3,
    )


log_batch = st.lists(ops(LOG_OPS), min_size=PARTICIPANTS, max_size=PARTICIPANTS).map(
    lambda batch: [{"p": p, "ops": o} for p, o in enumerate(batch)]
)
global_case = st.fixed_dictionaries(
    {"global": st.just(True), "ops": ops([o for o in GLOBAL_OPS if o not in OPEN_OPS])}
)
SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    "print_blob": True,
}


def save_regression(base: str, case: dict, exc: Exception) -> Path:
    """Write one failing case as tests/contract/regressions/<base>-<hash>.json."""
    REGRESSIONS.mkdir(exist_ok=True)
    key = hashlib.sha256(json.dumps([base, case], sort_keys=True).encode()).hexdigest()[:12]
    path = REGRESSIONS / f"{base}-{key}.json"
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
                raise ContractViolation(f"{one}\ncase saved as {path}") from None
        raise


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=LOG_EXAMPLES, **SETTINGS)
@given(cases=log_batch)
def test_log_mutations_keep_the_contract(fuzz_dir, cases):
    run_checked(fuzz_dir / "logs", "example", cases)


@settings(max_examples=GLOBAL_EXAMPLES, **SETTINGS)
@given(base=st.sampled_from(sorted(b for b in BASES if b != "example")), case=global_case)
def test_puzzle_and_coded_mutations_keep_the_contract(fuzz_dir, base, case):
    run_checked(fuzz_dir / "global", base, [case])
