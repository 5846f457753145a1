"""The cluster profiles under workflow/profiles/: valid YAML whose every key is a Snakemake
command-line option (plugin options checked when the plugin is installed), and a dry-run through
the SLURM profile when its executor plugin is installed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snake import CONFIG, snakemake

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROFILES = REPO / "workflow" / "profiles"
EXECUTORS = {
    "slurm": ("slurm", "snakemake_executor_plugin_slurm"),
    "kubernetes": ("kubernetes", "snakemake_executor_plugin_kubernetes"),
    "local-cluster": ("cluster-generic", "snakemake_executor_plugin_cluster_generic"),
}
PLUGIN_PREFIXES = {
    "slurm-": "snakemake_executor_plugin_slurm",
    "kubernetes-": "snakemake_executor_plugin_kubernetes",
    "cluster-generic-": "snakemake_executor_plugin_cluster_generic",
}


@pytest.fixture(scope="module")
def cli_options() -> set[str]:
    res = subprocess.run(
        [str(BIN / "snakemake"), "--help"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0
    return set(re.findall(r"--([a-z0-9][a-z0-9-]*)", res.stdout))


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("name", sorted(EXECUTORS))
def test_profile_keys_are_snakemake_options(name, cli_options):
    cfg = yaml.safe_load((PROFILES / name / "config.yaml").read_text())
    executor, module = EXECUTORS[name]
    assert cfg["executor"] == executor
    unknown = []
    for key in cfg:
        plugin = next((m for p, m in PLUGIN_PREFIXES.items() if key.startswith(p)), None)
        if plugin is not None and not _installed(plugin):
            continue  # option of a plugin that is not installed here
        if key not in cli_options:
            unknown.append(key)
    assert not unknown, f"profile {name}: not Snakemake options: {unknown}"


@pytest.mark.parametrize("name", ["slurm", "kubernetes"])
def test_cluster_profiles_set_default_resources(name):
    cfg = yaml.safe_load((PROFILES / name / "config.yaml").read_text())
    assert {"mem_mb", "runtime"} <= set(cfg["default-resources"])
    assert int(cfg["jobs"]) >= 10


def test_local_cluster_commands_exist_and_are_executable():
    cfg = yaml.safe_load((PROFILES / "local-cluster" / "config.yaml").read_text())
    for key in ("cluster-generic-submit-cmd", "cluster-generic-status-cmd"):
        script = PROFILES / "local-cluster" / cfg[key]
        assert script.is_file() and os.access(script, os.X_OK), script


def test_slurm_profile_dry_run(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    res = snakemake(
        "pool",
        opts=["-n", "--profile", str(PROFILES / "slurm")],
        directory=tmp_path,
        configfiles=[CONFIG],
        cores=None,
        timeout=300,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "pool_shard" in res.stdout
