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


def test_any_rows_dropped_from_the_coded_file_are_named(tmp_path):
    """Generated: every single row and every pair of rows dropped from the coded responses of
    the three-participant example cut (the double drop the random fuzzer found: a skipped
    puzzle's empty rating reason, a strategy, comments or an ``*_other`` row the rating-reason
    cross-check did not cover) changes nothing or is a validate problem naming the file."""
    base, themes = base_study("example-themes", tmp_path / "bases")
    rows = [r for r in base.files[base.coded_rel].split(b"\n")[1:] if r.strip()]
    drops = [[a] for a in range(len(rows))]
    drops += [[a, b] for a in range(len(rows)) for b in range(a, len(rows) - 1, 5)]
    for idx in drops:
        ops = [{"op": "coded_drop_row", "a": a, "b": 0, "f": 0} for a in idx]
        got = check_cases(tmp_path / "run", base, [{"global": True, "ops": ops}], themes)
        assert got == {"0": "problem"}, (idx, got)
