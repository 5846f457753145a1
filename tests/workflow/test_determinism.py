"""Same inputs + config => byte-identical outputs: the whole DAG (`all` and `extras`, on the
configured study, by default the embedded example study `data/example-study`) is run twice from
scratch in the same folder and every table is compared byte for byte.

Exempt (declared in docs/decisions.md, "Scale-out"): timing files (file name contains `timing`),
`results/bench/` and `results/logs/`. Figures are not compared (matplotlib embeds no time stamp
in PNG by default, but they are not tables).

Slow: one run of `all` takes a few minutes on a 2-core machine.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import pytest
from snake import CONFIG, snakemake

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TABLE_SUFFIXES = {".csv", ".json", ".md", ".tex"}


def is_exempt(rel: Path) -> bool:
    """True for outputs that hold wall-clock measurements (not expected to be byte-stable)."""
    parts = rel.parts
    return (
        "timing" in rel.name
        or parts[:2] == ("results", "bench")
        or parts[:2] == ("results", "logs")
    )


def table_hashes(workdir: Path) -> dict[str, str]:
    """Return {relative path: sha256} of every non-exempt table under ``workdir/results``."""
    out = {}
    for f in sorted((workdir / "results").rglob("*")):
        rel = f.relative_to(workdir)
        if f.is_file() and f.suffix in TABLE_SUFFIXES and not is_exempt(rel):
            out[rel.as_posix()] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


def run_all(workdir: Path) -> None:
    # `all` and the simulation extras (power grid, generated pool, recovery), which a plain run
    # makes only when asked for: their tables must be as stable as the study's own
    res = snakemake("all", "extras", configfiles=[CONFIG], cores=2, cwd=workdir, timeout=3600)
    assert res.returncode == 0, (res.stdout + res.stderr)[-5000:]


def test_exemptions_are_narrow():
    assert is_exempt(Path("results/pool/timing.csv"))
    assert is_exempt(Path("results/sat/timings.csv"))
    assert is_exempt(Path("results/bench/scale.json"))
    assert is_exempt(Path("results/logs/pool/merge.log"))
    assert not is_exempt(Path("results/pool/metrics.csv"))


def test_table_hashes_see_changes(tmp_path):
    (tmp_path / "results" / "x").mkdir(parents=True)
    f = tmp_path / "results" / "x" / "a.csv"
    f.write_text("a\n1\n")
    (tmp_path / "results" / "x" / "timing.csv").write_text("t\n0.1\n")
    before = table_hashes(tmp_path)
    assert list(before) == ["results/x/a.csv"]
    f.write_text("a\n2\n")
    assert table_hashes(tmp_path) != before


@pytest.mark.slow
def test_whole_dag_twice_from_scratch_is_byte_identical(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    run_all(work)
    first = table_hashes(work)
    assert any(p.startswith("results/pool/") for p in first)
    assert len(first) >= 10, sorted(first)
    shutil.rmtree(work / "results")
    shutil.rmtree(work / ".snakemake")
    run_all(work)
    second = table_hashes(work)
    assert sorted(first) == sorted(second), "different sets of tables"
    differ = sorted(p for p in first if first[p] != second[p])
    assert not differ, f"tables differ between two runs from scratch: {differ}"
