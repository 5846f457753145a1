"""CPU of the maximal-model rules: ``behaviour_maximal`` and ``moderation_maximal`` on one study.

    .venv/bin/python benchmarks/maximal_bench.py RESULTS [--baseline-src DIR] [--repeats N]
    .venv/bin/python benchmarks/maximal_bench.py /tmp/pub/results --baseline-src /tmp/base/src

``RESULTS`` is a results folder the workflow made (read only): the rules' inputs
(``features/attempts.csv``, ``sat/metrics.csv`` and the pool statistics their provenance names)
and parameters (``tables/*_maximal.provenance.json``: covariates, transforms, bootstrap draws,
seed; the behaviours from the table) are read from it, and each rule's call of
:func:`nonolab.stats.maximal_models.maximal_by_transform` is run as the rule's script runs it,
timed with ``time.process_time`` around that call only (no imports, no reading or writing).

Each measurement runs in a child process (``PYTHONPATH`` = the checkout's ``src``, or
``--baseline-src``: another checkout's ``src``, e.g. ``git archive HEAD~1 src | tar -x -C DIR``),
alternating the two ``--repeats`` times; the minimum CPU of each is reported with its ratio
(baseline / this checkout) measured in the same run. Both tables of every rule are compared with
the results folder's tables (and the baseline's): the largest relative difference of every
numeric column (``|a - b| / max(|b|, 1e-300)``, equal missing values counted equal) and the
number of cells of any other column that differ. Writes ``results/bench/maximal.json``
(``--output``) and prints a Markdown summary.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
RULES = ("behaviour_maximal", "moderation_maximal")


def run_rules(results: Path, out: Path) -> dict[str, float]:
    """Run both rules on ``results`` (this process's ``nonolab``); write their tables as CSV
    into ``out``; return the CPU seconds of each rule's ``maximal_by_transform`` call."""
    import time

    from nonolab.stats.maximal_models import (
        behaviour_maximal,
        maximal_by_transform,
        moderation_maximal,
    )
    from nonolab.stats.mixed_models import with_expertise
    from nonolab.study.schemas import read_table

    attempts = read_table(results / "features" / "attempts.csv", "features")
    metrics = read_table(results / "sat" / "metrics.csv", "sat_metrics")
    cpu = {}
    for rule in RULES:
        prov = json.loads((results / "tables" / f"{rule}.provenance.json").read_text())
        p = dict(prov["params"])
        transforms, n_boot = p.pop("transforms"), p.pop("n_boot")
        pool = next((k for k in prov["inputs"] if not k.startswith("results/")), None)
        seed = prov["seeds"]["lrt"]
        if rule == "behaviour_maximal":
            steps = pd.read_csv(results / "tables" / f"{rule}_steps.csv")
            kw: dict[str, Any] = {"behaviours": list(dict.fromkeys(steps["outcome_column"]))}
            fn, att = behaviour_maximal, attempts
        else:
            kw = {"outcome": p.pop("outcome")}
            fn, att = moderation_maximal, with_expertise(attempts)
        t0 = time.process_time()
        kept, steps = maximal_by_transform(
            fn, att, metrics, pool, p, transforms, n_boot=n_boot, seed=seed,
            metrics=p["metrics"], **kw,
        )  # fmt: skip
        cpu[rule] = time.process_time() - t0
        kept.to_csv(out / f"{rule}.csv", index=False)
        steps.to_csv(out / f"{rule}_steps.csv", index=False)
    return cpu


def compare(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, Any]:
    """Return the largest relative difference of every numeric column of ``a`` against ``b``
    (same layout required) and the count of differing cells of each other column."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return {"layout": "differs", "columns": [list(a.columns), list(b.columns)]}
    rel: dict[str, float] = {}
    other: dict[str, int] = {}
    for c in a.columns:
        x, y = a[c], b[c]
        if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
            x, y = x.to_numpy(dtype=float), y.to_numpy(dtype=float)
            both = np.isnan(x) & np.isnan(y)
            d = np.where(both, 0.0, np.abs(x - y) / np.maximum(np.abs(y), 1e-300))
            rel[c] = float(np.nan_to_num(d, nan=np.inf).max(initial=0.0))
        else:
            n = int((x.astype(str).fillna("") != y.astype(str).fillna("")).sum())
            if n:
                other[c] = n
    worst = max(rel, key=rel.get) if rel else None
    return {"max_rel": rel[worst] if worst else 0.0, "worst": worst, "rel": rel, "other": other}


def child(src: Path, results: Path, out: Path) -> dict[str, float]:
    """Run :func:`run_rules` in a child process with ``PYTHONPATH=src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]);"
        "from pathlib import Path; import maximal_bench as m;"
        "print(json.dumps(m.run_rules(Path(sys.argv[2]), Path(sys.argv[3]))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "benchmarks"), str(results), str(out)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--baseline-src", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="keep the tables in this folder")
    ap.add_argument("--output", type=Path, default=REPO / "results" / "bench" / "maximal.json")
    args = ap.parse_args(argv)
    results = args.results.resolve()
    srcs = {"this": REPO / "src"}
    if args.baseline_src is not None:
        srcs = {"baseline": args.baseline_src.resolve(), **srcs}
    record: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "results": str(results),
        "load_before": os.getloadavg(),
        "cpu": {k: [] for k in srcs},
    }
    with tempfile.TemporaryDirectory(prefix="nonolab-maximal-bench-") as tmp:
        root = Path(tmp) if args.keep is None else args.keep.resolve()
        outs = {k: root / k for k in srcs}
        for o in outs.values():
            o.mkdir(parents=True, exist_ok=True)
        for _ in range(args.repeats):
            for k, src in srcs.items():
                record["cpu"][k].append(child(src, results, outs[k]))
        record["load_after"] = os.getloadavg()
        diffs: dict[str, Any] = {}
        for rule in RULES:
            for name in (rule, f"{rule}_steps"):
                new = pd.read_csv(outs["this"] / f"{name}.csv")
                diffs[f"{name} vs results"] = compare(
                    new, pd.read_csv(results / "tables" / f"{name}.csv")
                )
                if "baseline" in outs:
                    diffs[f"{name} vs baseline"] = compare(
                        new, pd.read_csv(outs["baseline"] / f"{name}.csv")
                    )
        record["diffs"] = diffs
    best = {k: {r: min(c[r] for c in v) for r in RULES} for k, v in record["cpu"].items()}
    record["best_cpu"] = best
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=2) + "\n")
    print(f"load {record['load_before']} -> {record['load_after']}")
    for r in RULES:
        line = f"| {r} | " + " | ".join(f"{k} {best[k][r]:.2f} s" for k in best)
        if "baseline" in best:
            line += f" | ratio {best['baseline'][r] / best['this'][r]:.2f}"
        print(line + " |")
    for k, d in diffs.items():
        print(
            f"{k}: max rel {d.get('max_rel')} ({d.get('worst')}), other cells differing {d.get('other')}"
        )


if __name__ == "__main__":
    main()
