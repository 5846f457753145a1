"""Contract fuzzer speed: one ingest per mutated study (baseline) against batches of 30 (the
fuzzer's way, tests/contract/test_fuzzer.py), on the same cases in the same run.

    python benchmarks/fuzz_bench.py [--batches 3]

Writes benchmarks/results/fuzz.json: wall and CPU seconds per case of both ways and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "contract"), str(ROOT / "tests")]

from mutations import LOG_OPS, OPEN_OPS, base_study, check_cases  # noqa: E402

from nonolab.core.tables import write_json  # noqa: E402

#: the operators the fuzzer draws (open holes apart)
OPS = [o for o in LOG_OPS if o not in OPEN_OPS]


def _cases(rng: random.Random) -> list[dict]:
    return [
        {
            "p": p,
            "ops": [
                {
                    "op": rng.choice(OPS),
                    "a": rng.randrange(1 << 16),
                    "b": rng.randrange(1 << 16),
                }
                for _ in range(rng.randint(1, 3))
            ],
        }
        for p in range(30)
    ]


def _clock() -> tuple[float, float]:
    t = os.times()
    return time.perf_counter(), t.user + t.system


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(25)
    tmp = Path(tempfile.mkdtemp())
    base, themes = base_study("example", tmp / "bases")
    out = {"batches": args.batches, "cases": 30 * args.batches, "load_before": os.getloadavg()[0]}
    single, batched = [0.0, 0.0], [0.0, 0.0]
    for _ in range(args.batches):
        cases = _cases(rng)
        w0, c0 = _clock()
        for case in cases:
            check_cases(tmp / "one", base, [case], themes)
        w1, c1 = _clock()
        check_cases(tmp / "batch", base, cases, themes)
        w2, c2 = _clock()
        single[0] += w1 - w0
        single[1] += c1 - c0
        batched[0] += w2 - w1
        batched[1] += c2 - c1
    n = out["cases"]
    out |= {
        "single_wall_s_per_case": single[0] / n,
        "single_cpu_s_per_case": single[1] / n,
        "batched_wall_s_per_case": batched[0] / n,
        "batched_cpu_s_per_case": batched[1] / n,
        "ratio_wall": single[0] / batched[0],
        "ratio_cpu": single[1] / batched[1],
        "load_after": os.getloadavg()[0],
    }
    write_json(out, ROOT / "benchmarks" / "results" / "fuzz.json")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
