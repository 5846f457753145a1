"""A log file name Snakemake reads as a path variable (``<name>``) or a wildcard (``{name}``) is
refused by ``nonolab run`` and a problem of ``nonolab validate``, both naming the file, by one
rule (``nonolab.study.snakemake_names``). Names are generated; Snakemake's own patterns and, in
the slow tier, Snakemake itself are the reference."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nonolab.cli.commands.run as run_cmd
from nonolab.cli import main
from nonolab.cli.commands.validate import validate_study
from nonolab.cli.snakemake_log import JobProgress
from nonolab.study.snakemake_names import snakemake_part

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"

#: file-name characters around Snakemake's syntax
NAME = st.text(alphabet="<>{}abcxyzAZ019_,. -é", min_size=1, max_size=12).map(
    lambda s: s.replace("/", "")
)


def _snakemake_reads(path: str) -> bool:
    from snakemake.io import WILDCARD_REGEX
    from snakemake.pathvars import PATHVAR_REGEX

    return bool(PATHVAR_REGEX.search(path) or WILDCARD_REGEX.search(path))


@settings(max_examples=1000, deadline=None)
@given(NAME)
@example("p<abc>")
@example("p{x}")
@example("p{ x }")
@example("p{x,[0-9]{2}}")
@example("p{}")
@example("p<ABC>")
@example("p{{x}}")
def test_the_rule_is_snakemakes_own(name) -> None:
    assert (snakemake_part(f"/s/{name}.ndjson") is not None) == _snakemake_reads(
        f"/s/{name}.ndjson"
    )


@pytest.fixture
def no_snakemake(monkeypatch):
    """Record the Snakemake commands `nonolab run` would run, running none."""
    seen: list[list[str]] = []
    monkeypatch.setattr(
        run_cmd,
        "run_logged",
        lambda cmd, *a, **k: seen.append(cmd) or run_cmd.Outcome(0, JobProgress()),
    )
    monkeypatch.setattr(run_cmd.subprocess, "call", lambda cmd, *a, **k: seen.append(cmd) or 0)
    return seen


def _names(n: int = 6, seed: int = 20261207) -> list[str]:
    """Generated log names, about half of which Snakemake reads as its own syntax."""
    import random

    rng = random.Random(seed)
    out = ["p<abc>", "p{x}", "p<ABC>", "p{}"]
    inner = "abcxyzZ01_ ,"
    while len(out) < n:
        a, b = rng.choice([("<", ">"), ("{", "}"), ("<", ">"), ("{", "}"), ("{", ">")])
        body = "".join(rng.choice(inner) for _ in range(rng.randint(0, 4)))
        out.append(f"q{rng.choice(['', '-'])}{a}{body}{b}")
    return out


@pytest.mark.parametrize("name", _names())
def test_validate_and_run_agree_on_a_log_name(name, tmp_path, capsys, no_snakemake) -> None:
    study = tmp_path / "study"
    shutil.copytree(EXAMPLE, study)
    log = sorted(study.rglob("*.ndjson"))[0]
    bad = log.with_name(f"{name}.ndjson")
    log.rename(bad)
    rel = bad.relative_to(study).as_posix()
    refused = _snakemake_reads(str(bad))

    report = validate_study(study)
    named = [p for p in report["problems"] if p["file"] == rel and "Snakemake" in p["reason"]]
    assert bool(named) == refused, report["problems"]
    if refused:
        assert not report["usable"] and str(bad) in named[0]["reason"]

    code = main(["run", "--study", str(study), "-d", str(tmp_path / "o")])
    err = capsys.readouterr().err
    if refused:
        assert code == 2 and str(bad) in err and "Traceback" not in err, err
        assert no_snakemake == []
    else:
        assert code == 0 and len(no_snakemake) == 1, err


@pytest.mark.slow
@pytest.mark.parametrize("name", _names(10, seed=7))
def test_snakemake_itself_fails_exactly_on_the_names_refused(name, tmp_path) -> None:
    """A rule whose input is a file of that name: Snakemake's dry run fails (path variable or
    wildcard error) exactly when the rule says it would."""
    path = tmp_path / f"{name}.ndjson"
    path.write_text("{}\n")
    (tmp_path / "Snakefile").write_text(
        f"rule all:\n    input: {str(path)!r}\n    output: 'out.txt'\n    shell: 'touch out.txt'\n"
    )
    snakemake = Path(sys.executable).with_name("snakemake")
    proc = subprocess.run(
        [str(snakemake), "-n", "-c1", "--quiet"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert (proc.returncode != 0) == (snakemake_part(str(path)) is not None), proc.stderr[-2000:]
