"""``nonolab run``: the study and preset are checked before Snakemake starts, the preset is given
by name or file and remembered by the results folder, Snakemake's log goes to a file while the
terminal shows one line per job, and a failure shows the error without a stack trace."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nonolab.cli.commands.run as run_cmd
from nonolab.cli import main
from nonolab.cli.snakemake_log import JobProgress
from nonolab.study.identity import read_results_study
from nonolab.study.presets import PRESET_DIR

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"


def _lab_study(root: Path) -> tuple[Path, Path]:
    """Return (study, preset): the example study with its puzzle file renamed, and the preset
    file (``extends: default``) that names it."""
    study = root / "study"
    shutil.copytree(EXAMPLE, study)
    (study / "nonograms_6.json").rename(study / "lab_puzzles.json")
    preset = root / "lab.yaml"
    preset.write_text("extends: default\nname: lab\npuzzle_file: lab_puzzles.json\n")
    return study, preset


@pytest.fixture
def no_snakemake(monkeypatch):
    """Record the Snakemake commands `nonolab run` would run, running none."""
    seen: list[list[str]] = []

    def fake_run_logged(cmd, log_path, mode, out):
        seen.append(list(cmd))
        return run_cmd.Outcome(0, JobProgress())

    def fake_call(cmd, *args, **kwargs):
        seen.append(list(cmd))
        return 0

    monkeypatch.setattr(run_cmd, "run_logged", fake_run_logged)
    monkeypatch.setattr(run_cmd.subprocess, "call", fake_call)
    return seen


def _config(cmd: list[str]) -> dict[str, str]:
    at = cmd.index("--config")
    return dict(w.split("=", 1) for w in cmd[at + 1 :])


# --- the preset: a name or a file relative to the working directory -------------------------


def test_a_relative_preset_file_is_resolved_against_the_working_directory(
    tmp_path, monkeypatch, no_snakemake
):
    study, preset = _lab_study(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--study", "study", "--preset", "lab.yaml", "--results", "out", "--no-report"]
    assert main(argv) == 0
    (cmd,) = no_snakemake
    assert _config(cmd) == {
        "study_dir": str(study.resolve()),
        "preset": preset.resolve().as_posix(),
    }


@pytest.mark.parametrize("name", sorted(p.stem for p in PRESET_DIR.glob("*.yaml")))
def test_a_preset_name_is_passed_as_it_is(name):
    assert run_cmd.preset_argument(name) == name


def test_a_missing_preset_names_the_folder_it_was_looked_for_in(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--study", str(EXAMPLE), "--preset", "mine.yaml", "-d", "out"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "mine.yaml") in err
    assert "relative to the working directory" in err and "docs/presets.md" in err
    assert not (tmp_path / "out").exists()


def test_no_color_turns_snakemake_colour_off(tmp_path, monkeypatch, no_snakemake):
    argv = ["run", "--study", str(EXAMPLE), "-d", str(tmp_path), "--no-report"]
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert main(argv) == 0
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(argv) == 0
    assert "--nocolor" not in no_snakemake[0]
    assert "--nocolor" in no_snakemake[1]


# --- the study is checked before Snakemake starts --------------------------------------------

#: preset entries that name a file of the study: key -> (preset lines, the missing name)
MISSING = {
    "puzzle_file": ("puzzle_file: my_puzzles.json\n", "my_puzzles.json"),
    "log_globs": ("log_globs: [sessions/*.ndjson]\n", "sessions/*.ndjson"),
    "assignment_schedule": ("assignment_schedule: schedule.json\n", "schedule.json"),
    "published.bt_strengths": ("published:\n  bt_strengths: out/bt.csv\n", "out/bt.csv"),
    "published.pause_report": ("published:\n  pause_report: PAUSES.md\n", "PAUSES.md"),
}


@pytest.mark.parametrize("key", sorted(MISSING))
def test_a_missing_study_file_is_named_with_its_preset_key(key, tmp_path, capsys, no_snakemake):
    lines, name = MISSING[key]
    preset = tmp_path / "p.yaml"
    preset.write_text("extends: default\nname: p\n" + lines)
    argv = ["run", "--study", str(EXAMPLE), "--preset", str(preset), "-d", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nonolab: error:")
    assert f"`{key}`" in err, err
    assert name in err and str(preset) in err and "docs/presets.md" in err
    assert "Traceback" not in err
    assert no_snakemake == []  # Snakemake never started


def test_a_study_with_its_own_puzzle_file_name_is_told_to_write_a_preset(
    tmp_path, capsys, no_snakemake
):
    study, _ = _lab_study(tmp_path)
    assert main(["run", "--study", str(study), "-d", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "nonograms_6.json" in err and "`puzzle_file`" in err
    assert "lab_puzzles.json" in err  # the candidates in the study folder
    assert "extends: default" in err and "--preset FILE" in err and "docs/presets.md" in err
    assert no_snakemake == []


# --- the whole path through Snakemake --------------------------------------------------------


def _nonolab(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYTHONPATH": str(REPO / "src"), **env}
    return subprocess.run(
        [sys.executable, "-m", "nonolab", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
    )


PROGRESS = re.compile(r"^\[\s*(\d+)/(\d+)\] (\S+)")


def test_run_shows_a_line_per_job_and_remembers_the_preset(tmp_path):
    study, preset = _lab_study(tmp_path)
    target = "results/features/attempts.csv"
    first = _nonolab(
        [
            "run",
            "--study",
            "study",
            "--preset",
            "lab.yaml",
            "--results",
            "out",
            "--cores",
            "1",
            target,
        ],
        tmp_path,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    log = (tmp_path / "out" / "results" / "logs" / "run.log").read_text()
    finished = re.findall(r"^Finished job(?:id)?:? \d+ \(Rule: (\w+)\)", log, re.M)
    shown = [PROGRESS.match(t) for t in first.stdout.splitlines() if PROGRESS.match(t)]
    assert [m.group(3) for m in shown] == finished and len(finished) >= 3
    assert [int(m.group(1)) for m in shown] == list(range(1, len(finished) + 1))
    assert "jobid" not in first.stdout and "localrule" not in first.stdout
    assert f"results: {tmp_path / 'out' / 'results'}" in first.stdout
    assert f"ledger:  {tmp_path / 'out' / 'results' / 'ingest' / 'ledger.csv'}" in first.stdout
    assert f"log:     {tmp_path / 'out' / 'results' / 'logs' / 'run.log'}" in first.stdout
    record = read_results_study(tmp_path / "out" / "results")
    assert record["preset_file"] == preset.resolve().as_posix()
    assert record["study_dir"] == study.resolve().as_posix()

    # later runs on that folder, from elsewhere, need neither --study nor --preset
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = str(tmp_path / "out")
    quiet = _nonolab(["run", "-d", out, "-q", target, "--", "--forcerun", "features"], elsewhere)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "study.json" in quiet.stderr and "lab.yaml" in quiet.stderr
    assert not [t for t in quiet.stdout.splitlines() if PROGRESS.match(t)]
    assert quiet.stdout.startswith("done: 1 of 1 jobs")

    loud = _nonolab(["run", "-d", out, "-v", target, "--", "--forcerun", "features"], elsewhere)
    assert loud.returncode == 0, loud.stdout + loud.stderr
    assert re.search(r"^(local)?rule features:", loud.stdout, re.M)
    assert "Finished job" in loud.stdout
    assert list(elsewhere.iterdir()) == []


def test_a_failing_job_shows_its_error_without_a_stack_trace(tmp_path):
    res = _nonolab(
        [
            "run",
            "--study",
            str(EXAMPLE),
            "-d",
            str(tmp_path / "out"),
            "--cores",
            "1",
            "results/pool/shard_0/pool.csv",
            "--",
            "--config",
            "seed=-1",
        ],
        tmp_path,
    )
    text = res.stdout + res.stderr
    assert res.returncode != 0
    assert "Traceback" not in text and '  File "' not in text, text
    assert "seed" in text or "negative" in text, text
    assert str(tmp_path / "out" / "results" / "logs" / "run.log") in res.stderr


def test_stack_frames_are_dropped_and_the_message_kept():
    try:
        int("x")
    except ValueError:
        import traceback

        lines = traceback.format_exc().splitlines()
    kept = run_cmd.without_stack_frames(["before", *lines, "after"])
    assert kept == ["before", "ValueError: invalid literal for int() with base 10: 'x'", "after"]


# --- paths Snakemake cannot take, and Snakemake's own report ----------------------------------


def _pathvar_cases(n: int = 60, seed: int = 20261205) -> list[str]:
    """Random folder-name fragments around ``<...>``: lower/upper case, digits, underscores,
    spaces and empty names, some of which Snakemake reads as a path variable."""
    import random

    rng = random.Random(seed)
    alphabet = "abcxyz_019 AZ-."
    out = ["<abc>", "<ABC>", "<1a>", "< a>", "<a b>", "<>", "x<y_2>z", "<script>", "<SCRIPT>"]
    while len(out) < n:
        inner = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
        out.append(f"s{rng.choice(['', '-'])}<{inner}>{rng.choice(['', 'x', ' 1'])}")
    return out


@pytest.mark.parametrize("fragment", _pathvar_cases())
def test_a_study_path_snakemake_reads_as_a_path_variable_is_refused_before_it_starts(
    fragment, tmp_path, capsys, no_snakemake
):
    from snakemake.pathvars import PATHVAR_REGEX  # Snakemake's own rule: the reference

    study = tmp_path / f"study{fragment}"
    shutil.copytree(EXAMPLE, study)
    code = main(["run", "--study", str(study), "-d", str(tmp_path / "o"), "--", "-n"])
    err = capsys.readouterr().err
    if PATHVAR_REGEX.search(str(study)):
        assert code == 2, err
        assert err.startswith("nonolab: error: the study folder") and str(study) in err
        assert "path variable" in err and "Traceback" not in err
        assert no_snakemake == []
    else:
        assert code == 0, err
        assert len(no_snakemake) == 1


@pytest.mark.parametrize("where", ["log", "puzzle_file"])
def test_a_file_name_snakemake_reads_as_a_path_variable_is_named(
    where, tmp_path, capsys, no_snakemake
):
    study = tmp_path / "study"
    shutil.copytree(EXAMPLE, study)
    args = ["run", "--study", str(study), "-d", str(tmp_path / "o")]
    if where == "log":
        log = sorted(study.rglob("*.ndjson"))[0]
        bad = log.with_name("p<abc>.ndjson")
    else:
        bad = study / "puzzles<v2>.json"
        log = study / "nonograms_6.json"
        preset = tmp_path / "p.yaml"
        preset.write_text(f"extends: default\nname: p\npuzzle_file: {bad.name}\n")
        args += ["--preset", str(preset)]
    log.rename(bad)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "path variable" in err and "Traceback" not in err
    assert no_snakemake == []


@pytest.mark.parametrize("word", ["--report", "--report=r.html"])
def test_snakemake_report_is_refused_for_the_study_report(word, tmp_path, capsys, no_snakemake):
    argv = ["run", "--study", str(EXAMPLE), "-d", str(tmp_path / "o"), "--", word]
    if word == "--report":
        argv.append("r.html")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "nonolab report" in err and "escape" in err
    assert no_snakemake == []


# --- which study, which work ------------------------------------------------------------------


def test_a_run_without_study_says_which_study_it_analyses(tmp_path, capsys, no_snakemake):
    assert main(["run", "-d", str(tmp_path), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert f"study: {EXAMPLE.resolve()} (preset default)" in out
    assert "no --study given: the config's study_dir" in out
    assert "simulation extras in a whole run: none" in out
    assert main(["run", "--study", str(EXAMPLE), "-d", str(tmp_path / "b"), "--no-report"]) == 0
    out = capsys.readouterr().out
    assert f"study: {EXAMPLE.resolve()}" in out and "no --study given" not in out


@pytest.mark.parametrize(
    "extras, targets, expected, absent",
    [
        # the study's own work only: no power grid, pool or recovery
        (None, [], {"ingest", "moderation_maximal"}, {"power_cell", "pool_shard", "recovery"}),
        ("[power]", [], {"power_cell", "power_figure"}, {"pool_shard", "recovery"}),
        (None, ["recovery"], {"recovery"}, {"power_cell", "pool_shard"}),
        (None, ["extras"], {"power_cell", "pool_shard", "recovery"}, set()),
    ],
)
def test_simulation_extras_are_targets_asked_for(tmp_path, extras, targets, expected, absent):
    """A dry run of the example study's DAG: the rules a plain run plans, and those of each
    extra asked for (a target, or the config's ``extras``)."""
    cmd = [sys.executable, "-m", "nonolab", "run", "--study", str(EXAMPLE), "-d", str(tmp_path)]
    cmd += [*targets, "--", "-n", "--quiet", "rules"]
    if extras:
        cmd += ["--config", f"extras={extras}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    planned = set(re.findall(r"^([a-z_0-9]+)\s+\d+\s*$", out.stdout, re.M))
    assert expected <= planned, (planned, out.stdout[-1500:])
    assert not planned & absent, planned & absent
