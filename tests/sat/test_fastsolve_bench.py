"""The solve benchmark script runs end to end on a tiny random suite and writes JSON + Markdown."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def bench(benchmark_script):
    return benchmark_script("solve_bench")


def test_bench_random_suite(bench, tmp_path):
    out = tmp_path / "solve.json"
    code = bench.main(
        [
            "--suites",
            "random",
            "--random-size",
            "12",
            "--densities",
            "0.5,0.7",
            "--random-count",
            "2",
            "--random-timeouts",
            "0.5:30,0.7:30",
            "--no-baselines",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    data = json.loads(out.read_text())
    s = data["suites"]["random"]["summary"]
    assert s["n"] == 4 and s["wrong_answers"] == 0
    assert s["unique"] + s["multiple"] == 4
    for inst in data["suites"]["random"]["instances"]:
        h = inst["hybrid"]
        assert h["time_to_first_s"] <= h["time_s"]
        if h["status"] == "unique":
            assert inst["answer_check"] == "equals generating grid"
    md = out.with_suffix(".md").read_text()
    assert "| random | 4 |" in md
    assert data["meta"]["bp_jobs"] == 1 and "single process." in md


def test_ratio_summary_hand_case(bench):
    inst = [
        {
            "hybrid": {"status": "unique", "time_s": 1.0},
            "plain": {"status": "unique", "time_s": 4.0},
        },
        {
            "hybrid": {"status": "multiple", "time_s": 1.0},
            "plain": {"status": "unknown", "time_s": 9},
        },
        {
            "hybrid": {"status": "unique", "time_s": 2.0},
            "plain": {"status": "unique", "time_s": 2.0},
        },
    ]
    r = bench.ratio_summary(inst, "plain")
    assert r["instances_run"] == 3 and r["baseline_decided"] == 2 and r["baseline_undecided"] == 1
    assert r["ratio_total"] == 6.0 / 3.0
    assert r["ratio_median"] == 2.5


def test_seconds_cells(bench):
    assert bench._s(None) == "-"
    assert bench._s(12.345) == "12.35" and bench._s(0.1) == "0.10"
    assert bench._s(0.0012345) == "0.00123" and bench._s(0.0) == "0"
