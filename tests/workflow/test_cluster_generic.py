"""The sharded pool sweep through the cluster-generic executor (workflow/profiles/local-cluster:
every job a separate background process started by a submit script, polled by a status script)
gives byte-identical tables to a plain local run: jobs share nothing but files."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from snake import CONFIG, snakemake

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROFILE = REPO / "workflow" / "profiles" / "local-cluster"
TINY = "pool:\n  size: 8\n  shards: 2\n  height: 5\n  width: 5\n  filled: 13\n"
TABLES = (
    "pool.csv",
    "metrics.csv",
    "excluded.csv",
    "selected.csv",
    "selected_puzzles.json",
    "shard_0/pool.csv",
    "shard_1/metrics.csv",
)


def _run(workdir: Path, *extra: str) -> subprocess.CompletedProcess:
    workdir.mkdir(parents=True)
    tiny = workdir / "tiny.yaml"
    tiny.write_text(TINY)
    return snakemake(
        "pool", opts=extra, configfiles=[CONFIG, tiny], cores=None, cwd=workdir, timeout=600
    )


def _job_outputs(workdir: Path) -> str:
    """The exit codes and output tails of the submitted jobs (for failure messages)."""
    out = []
    for rc in sorted((workdir / ".snakemake" / "local-cluster").glob("*.rc")):
        log = rc.with_suffix(".out")
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no output)"
        out.append(f"\n--- job {rc.stem}: exit {rc.read_text().strip()}\n{tail}")
    return "".join(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    pytest.importorskip("snakemake_executor_plugin_cluster_generic")
    base = tmp_path_factory.mktemp("cluster")
    local = _run(base / "local", "--cores", "2")
    assert local.returncode == 0, (local.stdout + local.stderr)[-4000:]
    cluster = _run(base / "cluster", "--profile", str(PROFILE))
    assert cluster.returncode == 0, (cluster.stdout + cluster.stderr)[-4000:] + _job_outputs(
        base / "cluster"
    )
    return base / "local", base / "cluster", cluster.stdout + cluster.stderr


@pytest.mark.slow
def test_cluster_jobs_ran_as_separate_submitted_processes(runs):
    _, cluster, log = runs
    state = cluster / ".snakemake" / "local-cluster"
    rc_files = sorted(state.glob("*.rc"))
    # 2 shards + merge + select, each submitted through submit.sh and finished with exit 0
    assert len(rc_files) == 4, log[-3000:]
    assert all(f.read_text().strip() == "0" for f in rc_files)
    assert log.count("with external jobid") == 4


@pytest.mark.slow
def test_cluster_run_equals_local_run(runs):
    local, cluster, _ = runs
    for name in TABLES:
        a = (local / "results" / "pool" / name).read_bytes()
        b = (cluster / "results" / "pool" / name).read_bytes()
        assert a == b, f"results/pool/{name} differs between local and cluster-generic runs"


def test_status_script_reports_failure_and_unknown_jobs(tmp_path):
    """status.sh: a job whose script exits non-zero is `failed`; success needs exit code 0."""
    env = {"NONOLAB_LOCAL_CLUSTER_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    job = tmp_path / "job.sh"
    job.write_text("exit 3\n")
    jobid = subprocess.run(
        [str(PROFILE / "submit.sh"), str(job)], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert jobid.isdigit()

    for _ in range(100):
        if (tmp_path / f"{jobid}.rc").exists():
            break
        time.sleep(0.05)
    status = subprocess.run(
        [str(PROFILE / "status.sh"), jobid], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert status == "failed"
    assert (tmp_path / f"{jobid}.rc").read_text().strip() == "3"
    # a process id that never ran through submit.sh and is not alive => failed, not running
    gone = subprocess.run(
        [str(PROFILE / "status.sh"), "999999999"], env=env, capture_output=True, text=True
    ).stdout.strip()
    assert gone == "failed"
