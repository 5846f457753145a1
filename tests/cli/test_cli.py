"""The command line lists its commands and answers --help for each."""

import subprocess
import sys

import pytest

from nonolab.cli import build_parser, main

EXPECTED = {
    "run",
    "ingest",
    "features",
    "validate",
    "solve",
    "stats",
    "generate",
    "encode",
    "simulate",
}


def test_help_lists_every_command():
    out = subprocess.run(
        [sys.executable, "-m", "nonolab", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for cmd in EXPECTED:
        assert cmd in out, f"`nonolab --help` does not list {cmd!r}"


@pytest.mark.parametrize("cmd", sorted(EXPECTED))
def test_each_command_has_help(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    assert "usage: nonolab " + cmd in capsys.readouterr().out


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "COMMAND" in capsys.readouterr().out


def test_parser_has_version():
    assert "--version" in build_parser().format_help()
