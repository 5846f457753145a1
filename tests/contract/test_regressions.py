"""Replay every case the contract fuzzer saved (tests/contract/regressions/*.json).

A case with ``"status": "fixed"`` must keep the contract. A case still ``"open"`` (a contract
hole found and not fixed yet; docs/bad-input.md lists them) is expected to break it: the test
is a strict xfail, so it fails as soon as the hole is closed, to be marked fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mutations import ContractViolation, base_study, check_cases

REGRESSIONS = Path(__file__).parent / "regressions"
CASES = sorted(REGRESSIONS.glob("*.json"))


def _param(path: Path):
    record = json.loads(path.read_text(encoding="utf-8"))
    marks = []
    if record.get("status") != "fixed":
        marks.append(pytest.mark.xfail(raises=ContractViolation, strict=True, reason="open"))
    return pytest.param(record, id=path.stem, marks=marks)


@pytest.mark.parametrize("record", [_param(p) for p in CASES])
def test_saved_case_keeps_the_contract(tmp_path, record):
    base, themes = base_study(record["base"], tmp_path / "bases")
    check_cases(tmp_path / "run", base, [record["case"]], themes)


def test_regression_files_are_well_formed():
    for path in CASES:
        record = json.loads(path.read_text(encoding="utf-8"))
        assert {"base", "case", "status"} <= set(record), path
        assert record["status"] in ("open", "fixed"), path
