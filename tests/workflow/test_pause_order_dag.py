"""The data-order check of the pause fits is its own rule (`pause_order`), off the critical path:
in the workflow's rule graph nothing but the errata (and the `all` target) waits for it, so
`features` and every stage after it start as soon as `pauses` has written threshold.json; the
errata rule still gets the check's record. Checked on the rule graph Snakemake plans (a dry run,
nothing is computed), for the embedded example study and for the public study under the he2026
preset (the one whose errata read the check)."""

from __future__ import annotations

import re

import pytest
from snake import CONFIG, snakemake

EDGE = re.compile(r"^\s*(\d+)\s*->\s*(\d+)", re.M)
NODE = re.compile(r'^\s*(\d+)\[label = "([^"]+)"', re.M)


def _rule_graph(tmp_path, config: dict | None = None) -> dict[str, set[str]]:
    """Return rule -> the rules it needs directly, from ``snakemake --rulegraph`` of ``all``."""
    res = snakemake(
        "all",
        opts=["--rulegraph", "--forceall"],
        configfiles=[CONFIG],
        config=config,
        directory=tmp_path,
        timeout=300,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    names = dict(NODE.findall(res.stdout))
    needs: dict[str, set[str]] = {name: set() for name in names.values()}
    for src, dst in EDGE.findall(res.stdout):
        needs[names[dst]].add(names[src])
    return needs


def _after(needs: dict[str, set[str]], rule: str) -> set[str]:
    """The rules that need ``rule``, directly or through others."""
    out, todo = set(), [rule]
    while todo:
        r = todo.pop()
        for other, deps in needs.items():
            if r in deps and other not in out:
                out.add(other)
                todo.append(other)
    return out


def _ancestors(needs: dict[str, set[str]], rule: str) -> set[str]:
    out, todo = set(), [rule]
    while todo:
        for dep in needs[todo.pop()] - out:
            out.add(dep)
            todo.append(dep)
    return out


def _check(needs: dict[str, set[str]], with_errata: bool) -> None:
    assert "pause_order" in needs and "pauses" in needs
    assert needs["pause_order"] == {"ingest"}  # beside pauses, not after it
    assert "pauses" in _ancestors(needs, "features")
    assert "pause_order" not in _ancestors(needs, "features")
    # only the errata (and the target `all`) wait for the check; many rules wait for pauses
    assert _after(needs, "pause_order") == ({"errata", "all"} if with_errata else {"all"})
    assert {"features", "fig_pauses", "threshold_sensitivity"} <= _after(needs, "pauses")


def test_features_does_not_wait_for_the_order_check_example_study(tmp_path):
    _check(_rule_graph(tmp_path), with_errata=False)


@pytest.mark.study
def test_errata_get_the_order_check_and_features_does_not_wait_public_study(tmp_path, study_dir):
    config = {"study_dir": study_dir, "preset": "he2026"}
    _check(_rule_graph(tmp_path / "graph", config), with_errata=True)
    # the errata job reads the check's record beside threshold.json
    res = snakemake(
        "results/tables/errata.csv",
        opts=["-n", "--forceall"],
        configfiles=[CONFIG],
        config=config,
        directory=tmp_path / "jobs",
        timeout=300,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    job = re.search(r"^rule errata:\n\s+input: ([^\n]+)", res.stdout, re.M)
    assert job, res.stdout[-3000:]
    inputs = set(job.group(1).split(", "))
    assert {"results/pauses/threshold.json", "results/pauses/order_dependence.json"} <= inputs
