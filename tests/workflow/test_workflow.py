"""DAG-level checks of the Snakemake workflow: lint, formatting, dry-run, and that every rule
that does work declares threads, memory, runtime, a log and a conda env, and runs as a separate
script/shell process (no `run:` block, which would execute inside the Snakemake process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from snake import snakemake

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CONFIG = REPO / "config" / "config.yaml"

# Loads the workflow through the Snakemake API in a child process (the API changes the working
# directory) and prints one JSON record per rule.
RULES_DUMP = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

repo, workdir = Path(sys.argv[1]), Path(sys.argv[2])
with SnakemakeApi(OutputSettings(quiet={"all"})) as api:
    wf = api.workflow(
        resource_settings=ResourceSettings(),
        config_settings=ConfigSettings(configfiles=[repo / "config" / "config.yaml"]),
        snakefile=repo / "Snakefile",
        workdir=workdir,
    )._workflow
    out = []
    for r in wf.rules:
        out.append({
            "name": r.name,
            "file": str(r.snakefile),
            "has_output": bool(list(r.output)),
            "threads": r.ruleinfo.threads is not None,
            "resources": sorted(k for k in r.resources if not k.startswith("_")),
            "log": [str(x) for x in r.log],
            "conda": r.conda_env is not None,
            "is_run": bool(r.is_run),
            "kind": [k for k in ("script", "shell", "wrapper", "notebook", "cwl")
                     if getattr(r, "is_" + k, False) or getattr(r, k, None)],
        })
print("RULES-JSON" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> list[dict]:
    workdir = tmp_path_factory.mktemp("wf")
    res = subprocess.run(
        [sys.executable, "-c", RULES_DUMP, str(REPO), str(workdir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(x for x in res.stdout.splitlines() if x.startswith("RULES-JSON"))
    return json.loads(line[len("RULES-JSON") :])


def _working_rules(rules: list[dict]) -> list[dict]:
    return [r for r in rules if r["has_output"]]


def test_workflow_has_the_pool_rules(rules):
    names = {r["name"] for r in rules}
    assert {"pool_shard", "pool_merge", "pool_select", "pool", "pool_paper", "all"} <= names


def test_every_rule_declares_threads_resources_log_and_conda(rules):
    problems = []
    for r in _working_rules(rules):
        where = f"{r['name']} ({Path(r['file']).name})"
        if not r["threads"]:
            problems.append(f"{where}: no threads")
        for res in ("mem_mb", "runtime"):
            if res not in r["resources"]:
                problems.append(f"{where}: no resources {res}")
        if not r["log"]:
            problems.append(f"{where}: no log")
        elif not all(x.startswith("results/logs/") for x in r["log"]):
            problems.append(f"{where}: log outside results/logs/: {r['log']}")
        if not r["conda"]:
            problems.append(f"{where}: no conda env")
    assert not problems, "\n".join(problems)


def test_no_rule_runs_inside_the_snakemake_process(rules):
    """A `run:` block executes Python in the scheduler's process and can share its state; every
    working rule must be a separate script/shell job so that cluster jobs behave like local ones."""
    bad = [r["name"] for r in _working_rules(rules) if r["is_run"] or not r["kind"]]
    assert not bad, f"rules without a script/shell body (or with run:): {bad}"


def test_lint_is_clean(tmp_path):
    res = snakemake(opts=["--lint"], configfiles=[CONFIG], cores=None, directory=tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    assert "Congratulations, your workflow is in a good condition" in out, out[-4000:]


def test_snakefmt_check():
    files = [str(REPO / "Snakefile"), str(REPO / "workflow" / "rules")]
    res = subprocess.run(
        [str(BIN / "snakefmt"), "--check", *files], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


def test_dry_run_of_all_and_named_targets(tmp_path):
    for target in ("all", "pool_paper"):
        res = snakemake(target, opts=["-n"], configfiles=[CONFIG], directory=tmp_path)
        assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    res = snakemake("pool_paper", opts=["-n"], configfiles=[CONFIG], directory=tmp_path)
    shards = [ln for ln in res.stdout.splitlines() if ln.strip().startswith("pool_shard ")]
    assert shards and shards[0].split()[-1] == "8", res.stdout[-2000:]


def test_pool_size_and_shards_are_only_a_config_change(tmp_path):
    """A 100,000-puzzle pool in 500 shards plans as 500 shard jobs from a two-key config file
    given after the main one (Snakemake merges config files key by key)."""
    big = tmp_path / "pool-100k.yaml"
    big.write_text("pool:\n  size: 100000\n  shards: 500\n")
    res = snakemake("pool", opts=["-n"], directory=tmp_path, configfiles=[CONFIG, big])
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-4000:]
    counts = {
        ln.split()[0]: ln.split()[-1]
        for ln in res.stdout.splitlines()
        if ln.strip().startswith(("pool_shard ", "pool_merge ", "pool_select "))
    }
    assert counts == {"pool_shard": "500", "pool_merge": "1", "pool_select": "1"}, out[-3000:]


def test_misspelt_pool_key_is_a_config_error(tmp_path):
    res = snakemake(
        "pool",
        opts=["-n"],
        configfiles=[CONFIG],
        directory=tmp_path,
        config={"pool": "{sizes: 10}"},
    )
    assert res.returncode != 0
    assert "sizes" in res.stdout + res.stderr


def test_more_shards_than_puzzles_is_refused_at_planning(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("pool:\n  size: 3\n  shards: 5\n")
    res = snakemake("pool", opts=["-n"], directory=tmp_path, configfiles=[CONFIG, bad])
    assert res.returncode != 0
    assert "shards=5 must be between 1 and size=3" in res.stdout + res.stderr
