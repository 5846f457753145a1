"""The contract fuzzer: random compositions of mutation operators (tests/contract/mutations.py)
on the example study and on the minimal study of docs/data-format.md; after any mutation every
derived table is unchanged, or `validate` names the mutated file, or the ingest stops with an
error naming it.

Log-file cases are batched: one mutated study holds up to :data:`BATCH` participants, each the
mutation of a different base participant (log files are read independently, so cases do not
interact; a case that copies or splits a file keeps its copies to itself). Each case counts as
one mutated study. A failure is shrunk by hypothesis to one minimal case and saved under
tests/contract/regressions/ (replayed by test_regressions.py).
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
    GLOBAL_OPS,
    LOG_OPS,
    PRESET_NO_THEMES,
    PRESET_THEMES,
    ContractViolation,
    check_cases,
    example_files,
    make_base,
)

REGRESSIONS = Path(__file__).parent / "regressions"
#: participants per mutated study (one case each)
BATCH = 10
#: hypothesis examples; cases = examples x BATCH (log cases) + examples (global cases)
LOG_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_EXAMPLES", "200"))
GLOBAL_EXAMPLES = int(os.environ.get("NONOLAB_FUZZ_GLOBAL_EXAMPLES", "100"))

ints = st.integers(0, 2**16)


def ops(names):
    return st.lists(
        st.fixed_dictionaries({"op": st.sampled_from(names), "a": ints, "b": ints, "f": ints}),
        min_size=1,
        max_size=3,
    )


log_cases = st.lists(
    st.fixed_dictionaries({"p": st.integers(0, 29), "ops": ops(LOG_OPS)}),
    min_size=1,
    max_size=BATCH,
    unique_by=lambda c: c["p"],
)
global_case = st.fixed_dictionaries({"global": st.just(True), "ops": ops(GLOBAL_OPS)})


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bases")
    return {
        "example": make_base(tmp / "example", example_files(), PRESET_NO_THEMES, False),
        "example-themes": make_base(
            tmp / "themes", example_files(3, themes=True), PRESET_THEMES, True
        ),
    }


def save_regression(base: str, cases: list[dict], exc: Exception) -> None:
    """Write the failing cases as a regression file (the last one hypothesis tries is the
    shrunk one: it overwrites the earlier ones of this run)."""
    REGRESSIONS.mkdir(exist_ok=True)
    record = {"base": base, "cases": cases, "found": str(exc)[:500]}
    key = hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()[:12]
    pending = REGRESSIONS / ".pending"
    if pending.is_file():
        old = REGRESSIONS / pending.read_text().strip()
        old.unlink(missing_ok=True)
    (REGRESSIONS / f"{base}-{key}.json").write_text(json.dumps(record, indent=1) + "\n")
    pending.write_text(f"{base}-{key}.json")


def run_checked(tmp, base_name, base, cases, themes):
    try:
        return check_cases(tmp, base, cases, themes)
    except ContractViolation as exc:
        save_regression(base_name, cases, exc)
        raise


@settings(
    max_examples=LOG_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases=log_cases)
def test_log_mutations_keep_the_contract(tmp_path, bases, cases):
    run_checked(tmp_path, "example", bases["example"], cases, False)


@settings(
    max_examples=GLOBAL_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=global_case)
def test_puzzle_and_coded_mutations_keep_the_contract(tmp_path, bases, case):
    run_checked(tmp_path, "example-themes", bases["example-themes"], [case], True)
