"""The command line imports a command's module only when that command runs, names the extra to
install when an optional dependency is missing, and passes the words after ``--`` of ``nonolab
run`` on to Snakemake."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import nonolab.cli.commands.run as run_cmd
from nonolab.cli import COMMANDS, EXTRAS, build_parser, main
from nonolab.core.paths import checkout_root, workflow_root

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
HEAVY = ("pandas", "numpy", "scipy", "snakemake", "matplotlib", "statsmodels", "numba", "pysat")


def _python(code: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
    )


def _modules_after(argv: list[str]) -> list[str]:
    """Return the third-party modules of HEAVY that `nonolab ARGV` imported."""
    res = _python(
        f"""
        import json, sys
        from nonolab.cli import main
        try:
            main({argv!r})
        except SystemExit:
            pass
        print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))))
        """
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv", [["--help"], [], ["--version"], ["run", "--help"], ["validate", "--help"]]
)
def test_help_imports_no_heavy_library(argv):
    assert _modules_after(argv) == []


def test_top_level_help_imports_no_command_module():
    res = _python(
        """
        import sys
        from nonolab.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        print(sorted(m for m in sys.modules if m.startswith("nonolab.cli.commands.")))
        """
    )
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_command_table_matches_the_modules():
    """COMMANDS (the listing of `nonolab --help`) names every registered command, its module
    and the module's own one-line help."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    helps = {a.dest: a.help for a in sub._choices_actions}
    assert set(helps) == set(COMMANDS)
    for name, (module, help_text) in COMMANDS.items():
        assert helps[name] == help_text, name
        assert sub.choices[name].get_default("func").__module__ == (
            f"nonolab.cli.commands.{module}"
        )


def test_missing_pipeline_extra_is_named(tmp_path):
    """A pipeline command without the pipeline extra fails with the pip command to run."""
    blocked = [m for m, extra in EXTRAS.items() if extra == "pipeline"]
    res = _python(
        f"""
        import sys
        for name in {blocked!r}:
            sys.modules[name] = None  # import fails as if not installed
        from nonolab.cli import main
        sys.exit(main(["ingest", {str(EXAMPLE)!r}, {str(tmp_path / "out")!r}]))
        """
    )
    assert res.returncode == 2, res.stderr
    assert "nonolab: error: `nonolab ingest` needs" in res.stderr
    assert "pip install 'nonolab[pipeline]'" in res.stderr
    assert "Traceback" not in res.stderr


def test_run_without_snakemake_names_the_extra(tmp_path):
    res = _python(
        f"""
        import sys
        sys.modules["snakemake"] = None
        from nonolab.cli import main
        sys.exit(main(["run", "--study", {str(EXAMPLE)!r}, "--directory", {str(tmp_path)!r}]))
        """
    )
    assert res.returncode == 2
    assert "needs 'snakemake'" in res.stderr
    assert "pip install 'nonolab[pipeline]'" in res.stderr


def test_other_import_errors_are_not_hidden():
    assert main.__module__ == "nonolab.cli"
    from nonolab.cli import missing_extra_message

    assert missing_extra_message("solve", "no_such_module") is None
    assert "nonolab[fast]" in missing_extra_message("solve", "numba")
    assert "nonolab[plot]" in missing_extra_message("run", "matplotlib.pyplot")


@pytest.fixture
def calls(monkeypatch):
    """Record the command `nonolab run` would execute instead of running Snakemake."""
    seen: list[list[str]] = []

    def fake_call(cmd, *args, **kwargs):
        seen.append(list(cmd))
        return 0

    def fake_run_logged(cmd, log_path, mode, out):
        from nonolab.cli.snakemake_log import JobProgress

        seen.append(list(cmd))
        return run_cmd.Outcome(0, JobProgress())

    monkeypatch.setattr(run_cmd.subprocess, "call", fake_call)
    monkeypatch.setattr(run_cmd, "run_logged", fake_run_logged)
    return seen


def test_run_passes_words_after_dashdash_to_snakemake(tmp_path, calls):
    out = tmp_path / "out"
    argv = ["run", "--study", str(EXAMPLE), "--directory", str(out), "--cores", "1"]
    assert main([*argv, "results/ingest/summary.json", "--", "-n", "--quiet"]) == 0
    (cmd,) = calls
    assert cmd[:3] == [sys.executable, "-m", "snakemake"]
    assert cmd[cmd.index("--snakefile") + 1] == str(workflow_root() / "Snakefile")
    assert cmd[cmd.index("--directory") + 1] == str(out.resolve())
    assert cmd[cmd.index("--cores") + 1] == "1"
    # targets, then the words after --, then --config (which takes every word after it)
    tail = cmd[cmd.index(str(out.resolve())) + 1 :]
    assert tail == [
        "results/ingest/summary.json",
        "-n",
        "--quiet",
        "--config",
        f"study_dir={EXAMPLE.resolve()}",
    ]
    assert out.is_dir()


def test_run_merges_study_into_a_given_config(tmp_path, calls):
    argv = ["run", "--study", str(EXAMPLE), "-d", str(tmp_path), "--", "--config", "seed=1", "-n"]
    assert main(argv) == 0
    (cmd,) = calls
    at = cmd.index("--config")
    assert cmd[at : at + 4] == ["--config", f"study_dir={EXAMPLE.resolve()}", "seed=1", "-n"]
    assert cmd.count("--config") == 1


def test_run_without_dashdash_and_study(tmp_path, calls):
    assert main(["run", "--workdir", str(tmp_path), "--no-report"]) == 0
    (cmd,) = calls
    assert cmd[-2:] == ["--directory", str(tmp_path.resolve())]


def test_run_rejects_a_missing_study(tmp_path, calls, capsys):
    assert main(["run", "--study", str(tmp_path / "nope"), "-d", str(tmp_path)]) == 2
    assert "study folder" in capsys.readouterr().err
    assert calls == []


def test_workflow_root_is_the_checkout_in_a_source_tree():
    assert checkout_root() == REPO
    assert workflow_root() == REPO
    from nonolab.study.presets import PRESET_DIR, SCHEMA_DIR

    assert PRESET_DIR == REPO / "config" / "studies"
    assert SCHEMA_DIR == REPO / "workflow" / "schemas"
