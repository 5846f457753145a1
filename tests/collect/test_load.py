"""A small version of the load benchmark (benchmarks/serve_bench.py): simulated participants
send events concurrently, then a burst; every event is acknowledged and stored exactly once.
Latency is reported by the benchmark, not asserted here (docs/running-a-study.md)."""

from __future__ import annotations

import importlib.util

from serve_helpers import REPO


def test_concurrent_participants_lose_and_duplicate_nothing():
    spec = importlib.util.spec_from_file_location(
        "serve_bench", REPO / "benchmarks" / "serve_bench.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    res = bench.run(n=30, duration=8.0, gap=0.5, burst=[5.0], burst_step=4.0)
    integ = res["integrity"]
    assert integ["participants"] == 30
    assert integ["lost"] == 0 and integ["duplicated"] == 0
    assert integ["acked_equals_sent"]
    assert res["steady"]["events"] > 100 and res["burst"][0]["achieved_per_s"] > 0
    assert res["steady"]["connection_errors"] == 0
