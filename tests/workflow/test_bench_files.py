"""Every rule that does work declares a Snakemake benchmark file under results/bench/rules/ (named
after the rule and its wildcards), and `snakemake paper` plans only the paper's analyses."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from snake import snakemake

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SNAKEFILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
#: target rules: inputs only, no output, nothing to time
TARGET_RULES = {"all", "figures", "pool", "pool_paper", "paper", "design", "power", "extras"}
#: rules the paper target must not plan (prefixes)
NOT_PAPER = (
    "power_",
    "recovery",
    "pool_",
    "line_metrics",
    "fig_",
    "threshold_sensitivity",
    "design",
)


def _rule_blocks() -> dict[str, str]:
    """Return rule name -> the text of its block, over the Snakefile and every rules file."""
    blocks: dict[str, str] = {}
    for path in SNAKEFILES:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(\s*)rule (\w+):\s*$", line)
            if not m:
                continue
            indent, body = len(m.group(1)), []
            for nxt in lines[i + 1 :]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                    break
                body.append(nxt)
            blocks[m.group(2)] = "\n".join(body)
    return blocks


def _key(block: str, key: str) -> str | None:
    """The first value line of `key:` in a rule block, or None."""
    m = re.search(rf"^\s*{key}:\s*\n\s*(.+)$", block, flags=re.M)
    return m.group(1).strip() if m else None


def test_every_working_rule_declares_a_benchmark_file():
    blocks = _rule_blocks()
    assert len(blocks) > 20
    assert TARGET_RULES <= set(blocks)
    missing, misnamed = [], []
    for name, block in blocks.items():
        output = _key(block, "output")
        if name in TARGET_RULES:
            assert output is None, f"target rule {name} has an output"
            continue
        bench = _key(block, "benchmark")
        if bench is None:
            missing.append(name)
            continue
        path = bench.strip('",')
        # Snakemake requires a log to carry every wildcard of the output: so must the benchmark.
        wildcards = set(re.findall(r"\{(\w+)\}", _key(block, "log") or ""))
        if not (
            path.startswith(f"results/bench/rules/{name}")
            and path.endswith(".tsv")
            and wildcards <= set(re.findall(r"\{(\w+)\}", path))
        ):
            misnamed.append(f"{name}: {path}")
    assert not missing, f"rules without benchmark: {missing}"
    assert not misnamed, (
        f"benchmark files not results/bench/rules/<rule>[_<wildcards>].tsv: {misnamed}"
    )


def _dry_run(tmp_path: Path, *targets: str) -> str:
    res = snakemake(
        *targets,
        opts=["-n"],
        directory=tmp_path,
        config={"study_dir": "data/example-study"},
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout + res.stderr


def _planned_jobs(out: str) -> list[tuple[str, str | None]]:
    """(rule, benchmark path or None) for every job of a dry run's output."""
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n)", out):
        m = re.search(r"^(?:local)?rule (\w+):", block, flags=re.M)
        if m:
            b = re.search(r"^\s+benchmark: (\S+)", block, flags=re.M)
            jobs.append((m.group(1), b.group(1) if b else None))
    return jobs


def test_every_job_of_the_dag_writes_a_benchmark_file(tmp_path):
    jobs = _planned_jobs(_dry_run(tmp_path, "all", "extras", "pool_paper"))
    names = {name for name, _ in jobs}
    assert {"ingest", "behaviour_models", "pool_shard", "power_cell", "fig_pauses"} <= names
    without = sorted({name for name, bench in jobs if bench is None} - TARGET_RULES)
    assert not without, f"jobs without a benchmark file: {without}"
    benches = [bench for name, bench in jobs if bench is not None]
    assert len(benches) == len(set(benches)), "two jobs share a benchmark file"
    assert all(b.startswith("results/bench/rules/") and b.endswith(".tsv") for b in benches)


def test_paper_plans_only_the_papers_analyses(tmp_path):
    names = {name for name, _ in _planned_jobs(_dry_run(tmp_path, "paper"))}
    assert {
        "ingest",
        "features",
        "pauses",
        "sat_metrics",
        "expertise",
        "ranking",
        "table1",
        "behaviour_models",
        "moderation",
        "themes",
        "errata",
        "paper",
    } <= names
    # a study without a published candidate pool (the example study) measures its served
    # puzzles against the workflow's own pool of its grid size: shards and merge, no selection
    own_pool = {"pool_shard", "pool_merge"}
    extra = sorted(n for n in names if n.startswith(NOT_PAPER) and n not in own_pool)
    assert not extra, f"paper plans rules outside the paper: {extra}"


def test_pipeline_bench_reads_the_rule_benchmark_files(benchmark_script, tmp_path):
    bench = benchmark_script("pipeline_bench")
    rules = tmp_path / "results" / "bench" / "rules"
    rules.mkdir(parents=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (rules / "ingest.tsv").write_text(header + "1.5\t0:00:01\t200.1\t1\t1\t1\t0\t0\t50\t1.2\n")
    (rules / "pool_shard_pool_0.tsv").write_text(
        header + "3.0\t0:00:03\tNA\t1\t1\t1\t0\t0\t0\tNA\n"
    )
    jobs = bench.read_rule_benchmarks(tmp_path)
    assert jobs == [
        {"job": "pool_shard_pool_0", "s": 3.0, "max_rss": None, "cpu_time": None},
        {"job": "ingest", "s": 1.5, "max_rss": 200.1, "cpu_time": 1.2},
    ]
    record = {
        "date": "2026-12-02",
        "machine": {"cores": 2},
        "study": "data/example-study",
        "cores": 2,
        "runs": [
            {
                "target": "paper",
                "returncode": 0,
                "wall_s": 5.0,
                "load_before": [1.0, 1.0, 1.0],
                "load_after": [2.0, 1.0, 1.0],
                "jobs": jobs,
            }
        ],
    }
    md = bench.markdown(record)
    assert "| paper | 5.0 | 2 | 4.5 | 1.00 / 1.00 / 1.00 | 2.00 / 1.00 / 1.00 |" in md
    assert "| pool_shard_pool_0 | 3.00 | NA | NA |" in md
