"""Start-up CPU of the workflow's jobs: for each Snakemake ``script:`` entry point in
``scripts/``, the CPU seconds a fresh Python process spends on Snakemake's script preamble and
on the script's own top-level imports (plus :data:`RUNTIME`), for this checkout and, in the same run, for a baseline
source tree (``--baseline REF``: ``git archive REF`` unpacked into a temporary folder).

Each measurement is one child process (``sys.executable``, the tree's ``src`` first on
``PYTHONPATH``, the tree as working directory) that runs the preamble's imports
(``pickle``, ``snakemake.script``, ``snakemake.logging``) and then the script's module-level
``import`` statements (read with ``ast``; imports inside functions are not counted). Reported
per script, as the median over ``--repeats`` runs (the two trees interleaved, after one
unmeasured warm-up run each that writes the byte-code caches):

* ``import_cpu_s``: ``time.process_time()`` spent on the script's imports (after the preamble);
* ``process_cpu_s``: user + system CPU of the whole child process (interpreter start, preamble
  and imports), from ``resource.getrusage(RUSAGE_CHILDREN)``;
* ``heavy``: which of the heavy libraries are in ``sys.modules`` afterwards.

With ``--results DIR`` (a finished run's results folder) it also times one ``read_table`` of
each table the jobs read (:data:`READS`), pandera imported beforehand in both trees, so that the
difference is the check itself (pandera against the plain check).

Jobs per script: the workflow's rules (``workflow/rules/*.smk``: ``benchmark:`` and ``script:``
of each rule) matched against the per-job benchmark files of a finished run (``--bench-dir``,
e.g. the public study's ``results/bench/rules``); one job per rule when it is not given. The
totals weight each script by its job count.

    .venv/bin/python benchmarks/import_bench.py --baseline main \
        --bench-dir /tmp/pub/results/bench/rules --results /tmp/pub/results \
        --out results/bench/import.json
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: libraries whose presence in ``sys.modules`` the result records
HEAVY = (
    "pandas",
    "pandera",
    "jsonschema",
    "yaml",
    "scipy.stats",
    "statsmodels",
    "sklearn",
    "matplotlib",
    "pysat",
)

#: heavy modules a job's code loads when it runs although the current tree's module-level imports
#: no longer do (moved into the functions that use them); imported after the script's imports in
#: both trees, so that a saving counts only what the job no longer loads at all. Declared from
#: the code each script calls: ``bh_fdr`` (statsmodels), the Spearman / Mann-Whitney / Wilcoxon
#: tests (scipy.stats), the expertise PCA (scikit-learn).
FDR = "import statsmodels.stats.multitest"
STATS = "import scipy.stats"
RUNTIME = {
    "models.py": [FDR],
    "moderation.py": [FDR],
    "moderation_maximal.py": [FDR],
    "behaviour_maximal.py": [FDR],
    "measure_evaluation.py": [FDR],
    "sensitivity.py": [FDR],
    "moderation_conclusion.py": [STATS, FDR],
    "table1.py": [STATS, FDR],
    "themes.py": [STATS, FDR],
    "expertise.py": [STATS, FDR, "import sklearn.decomposition"],
}

#: the imports of Snakemake's Python-script preamble (snakemake.script.PythonScript)
PREAMBLE = "import pickle\nfrom snakemake import script\nfrom snakemake.logging import logger\n"

CHILD = """
import json, sys, time
t0 = time.process_time()
{preamble}
t1 = time.process_time()
{imports}
t2 = time.process_time()
heavy = {heavy!r}
print(json.dumps({{"preamble_cpu_s": t1 - t0, "import_cpu_s": t2 - t1,
    "heavy": [m for m in heavy if m in sys.modules], "modules": len(sys.modules)}}))
"""


def top_level_imports(script: Path) -> list[str]:
    """Return the module-level ``import``/``from ... import`` statements of ``script`` as source
    lines (in file order)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return [
        ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
    ]


def rule_scripts(root: Path) -> dict[str, tuple[str, str]]:
    """Return ``{rule: (benchmark file pattern, script file name)}`` for the rules of
    ``root/workflow/rules/*.smk`` that run a ``script:``."""
    out = {}
    for smk in sorted((root / "workflow" / "rules").glob("*.smk")):
        text = smk.read_text(encoding="utf-8")
        for block in re.split(r"\n(?=\s*rule \w+:)", text):
            name = re.match(r"\s*rule (\w+):", block)
            script = re.search(r"\bscript:\s*\n\s*\"([^\"]+)\"", block)
            bench = re.search(r"\bbenchmark:\s*\n\s*\"([^\"]+)\"", block)
            if name and script and bench:
                out[name.group(1)] = (Path(bench.group(1)).stem, Path(script.group(1)).name)
    return out


def job_counts(root: Path, bench_dir: Path | None) -> dict[str, list[str]]:
    """Return ``{script file name: [job names]}``: the benchmark files in ``bench_dir`` matched
    to the rules' ``benchmark:`` patterns (wildcards match any text); one job per rule when
    ``bench_dir`` is None. Raises ValueError naming a benchmark file no rule matches."""
    rules = rule_scripts(root)
    jobs: dict[str, list[str]] = {}
    if bench_dir is None:
        for rule, (_, script) in rules.items():
            jobs.setdefault(script, []).append(rule)
        return jobs
    patterns = [
        (
            re.compile(
                "".join(
                    ".+" if p.startswith("{") else re.escape(p)
                    for p in re.split(r"(\{\w+\})", stem)
                )
                + r"\Z"
            ),
            script,
        )
        for stem, script in (rules[r] for r in rules)
    ]
    for f in sorted(bench_dir.glob("*.tsv")):
        exact = [s for r, (stem, s) in rules.items() if stem == f.stem]
        found = exact or [s for rx, s in patterns if rx.match(f.stem)]
        if len(set(found)) != 1:
            raise ValueError(f"{f.name}: matched by {sorted(set(found)) or 'no rule'}")
        jobs.setdefault(found[0], []).append(f.stem)
    return jobs


def measure(root: Path, script: str) -> dict:
    """Return one child process's measurement of ``root/scripts/<script>`` (see the module
    docstring), with ``process_cpu_s`` in CPU seconds."""
    code = CHILD.format(
        preamble=PREAMBLE,
        imports="\n".join(top_level_imports(root / "scripts" / script) + RUNTIME.get(script, [])),
        heavy=HEAVY,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root / "src")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode:
        raise RuntimeError(f"{root}/scripts/{script}: {res.stderr[-2000:]}")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


#: tables the jobs read (``read_table``; Parquet: ``read_ingest``) and where a run writes them
READS = {
    "features": "features/attempts.csv",
    "sat_metrics": "sat/metrics.csv",
    "bt_strengths": "tables/bt_strengths.csv",
    "participants": "ingest/participants.csv",
    "gaps": "pauses/gaps.csv",
    "events": "ingest/events.parquet",
    "attempts": "ingest/attempts.parquet",
    "ratings": "ingest/ratings.parquet",
}

READ_CHILD = """
import json, sys, time
import pandera.pandas  # imported in both trees: only the check itself is measured
from nonolab.study.schemas import read_table
out = {}
for name, path in json.loads(sys.argv[1]).items():
    t0 = time.process_time()
    read_table(path, name)
    out[name] = time.process_time() - t0
print(json.dumps(out))
"""


def measure_reads(root: Path, results: Path) -> dict[str, float]:
    """Return ``{table: CPU seconds of one read_table}`` (reading and checking) of the run's
    tables in ``results``, in a child process of tree ``root`` (pandera imported beforehand)."""
    tables = {n: str(results / p) for n, p in READS.items() if (results / p).exists()}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(root / "src")
    res = subprocess.run(
        [sys.executable, "-c", READ_CHILD, json.dumps(tables)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if res.returncode:
        raise RuntimeError(f"{root}: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def summarise(runs: list[dict]) -> dict:
    """Return the medians of a script's runs (CPU seconds) and the last run's module lists."""
    keys = ("preamble_cpu_s", "import_cpu_s", "process_cpu_s")
    return {k: round(statistics.median(r[k] for r in runs), 4) for k in keys} | {
        "heavy": runs[-1]["heavy"],
        "modules": runs[-1]["modules"],
    }


def unpack(ref: str, into: Path) -> Path:
    """Unpack the files of git ``ref`` the jobs need into ``into``; return it."""
    parts = ["src", "scripts", "workflow", "config", "Snakefile"]
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, *parts], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def markdown(result: dict) -> str:
    """Return the result as a Markdown table (one row per script, most job CPU first)."""
    trees = list(result["trees"])
    lines = [
        "| script | jobs | "
        + " | ".join(f"{t} imports / process CPU s" for t in trees)
        + " | saved per job (process) | saved x jobs | heavy modules ("
        + trees[-1]
        + ") |",
        "|---|---|" + "---|" * len(trees) + "---|---|---|",
    ]
    for s in result["scripts"]:
        cells = [f"{s[t]['import_cpu_s']:.3f} / {s[t]['process_cpu_s']:.3f}" for t in trees]
        lines.append(
            f"| {s['script']} | {s['jobs']} | "
            + " | ".join(cells)
            + f" | {s.get('saved_per_job_s', 0):.3f} | {s.get('saved_s', 0):.2f} | "
            + (", ".join(s[trees[-1]]["heavy"]) or "-")
            + " |"
        )
    tot = result["totals"]
    lines.append(
        f"| **all jobs** | {tot['jobs']} | "
        + " | ".join(f"{tot[t]['import_cpu_s']:.2f} / {tot[t]['process_cpu_s']:.2f}" for t in trees)
        + f" | - | {tot.get('saved_s', 0):.2f} | - |"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", help="git ref measured in the same run (e.g. main)")
    ap.add_argument("--bench-dir", type=Path, help="a finished run's results/bench/rules")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--results", type=Path, help="a finished run's results folder: also time read_table"
    )
    ap.add_argument("--scripts", help="comma-separated script names (default: every job's)")
    ap.add_argument("--out", type=Path, default=REPO / "results" / "bench" / "import.json")
    args = ap.parse_args(argv)

    jobs = job_counts(REPO, args.bench_dir)
    scripts = sorted(args.scripts.split(",") if args.scripts else jobs)
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        trees = {"current": REPO}
        if args.baseline:
            trees = {"baseline": unpack(args.baseline, Path(tmp)), "current": REPO}
        load_before = os.getloadavg()
        runs: dict[tuple[str, str], list[dict]] = {}
        for script in scripts:
            for root in trees.values():
                measure(root, script)  # warm-up: byte-code caches
        for _ in range(args.repeats):
            for script in scripts:
                for name, root in trees.items():
                    runs.setdefault((name, script), []).append(measure(root, script))
        reads: dict[str, list[dict]] = {}
        for _ in range(args.repeats if args.results else 0):
            for name, root in trees.items():
                reads.setdefault(name, []).append(measure_reads(root, args.results))
        load_after = os.getloadavg()

    rows = []
    for script in scripts:
        n = len(jobs.get(script, [])) or 1
        row = {"script": script, "jobs": n, "job_names": jobs.get(script, [])}
        row["runtime_imports"] = RUNTIME.get(script, [])
        row |= {name: summarise(runs[name, script]) for name in trees}
        if "baseline" in trees:
            per = row["baseline"]["process_cpu_s"] - row["current"]["process_cpu_s"]
            row["saved_per_job_s"] = round(per, 4)
            row["saved_s"] = round(per * n, 4)
        rows.append(row)
    rows.sort(key=lambda r: -r["jobs"] * r[list(trees)[0]]["process_cpu_s"])
    totals: dict = {"jobs": sum(r["jobs"] for r in rows)}
    for name in trees:
        totals[name] = {
            k: round(sum(r["jobs"] * r[name][k] for r in rows), 3)
            for k in ("preamble_cpu_s", "import_cpu_s", "process_cpu_s")
        }
    if "baseline" in trees:
        totals["saved_s"] = round(sum(r["saved_s"] for r in rows), 3)
        totals["ratio_process"] = round(
            totals["baseline"]["process_cpu_s"] / totals["current"]["process_cpu_s"], 3
        )
    result = {
        "date": datetime.date.today().isoformat(),
        "baseline_ref": args.baseline,
        "bench_dir": str(args.bench_dir) if args.bench_dir else None,
        "repeats": args.repeats,
        "load_before": load_before,
        "load_after": load_after,
        "python": sys.version.split()[0],
        "trees": {name: str(root) for name, root in trees.items()},
        "scripts": rows,
        "totals": totals,
        "read_table_cpu_s": {
            name: {t: round(statistics.median(r[t] for r in rs), 4) for t in rs[0]}
            for name, rs in reads.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    md = markdown(result)
    if result["read_table_cpu_s"]:
        per = result["read_table_cpu_s"]
        md += "\n| table (one `read_table`) | " + " | ".join(f"{t} CPU s" for t in per) + " |\n"
        md += "|---|" + "---|" * len(per) + "\n"
        for table in per[next(iter(per))]:
            md += f"| {table} | " + " | ".join(f"{per[t][table]:.3f}" for t in per) + " |\n"
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    print(f"load {load_before} -> {load_after}; JSON: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
