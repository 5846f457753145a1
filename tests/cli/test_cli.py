"""The command line lists its commands and answers --help for each."""

import argparse
import subprocess
import sys

import pytest

from nonolab.cli import build_parser, main

EXPECTED = {
    "run",
    "report",
    "design",
    "serve",
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


def test_no_command_is_a_usage_error(capsys):
    """`nonolab` alone prints its usage (and the commands) on stderr and exits 2."""
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: nonolab")
    for cmd in EXPECTED:
        assert cmd in err


def test_no_command_from_the_shell_exits_2():
    res = subprocess.run([sys.executable, "-m", "nonolab"], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stdout == "" and "usage: nonolab" in res.stderr


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_walked():
    from nonolab.cli import COMMANDS

    assert set(_subparsers()) == set(COMMANDS) >= EXPECTED


@pytest.mark.parametrize("cmd", sorted(_subparsers()))
def test_every_command_has_a_description(cmd):
    sub = _subparsers()[cmd]
    assert sub.description and len(sub.description.split()) >= 8, cmd


@pytest.mark.parametrize("cmd", sorted(_subparsers()))
def test_every_argument_has_help_naming_its_default(cmd):
    """Every option and positional argument of every command has help text, and the help shown
    names the default of every option that has one (a value other than None or a flag's
    False)."""
    sub = _subparsers()[cmd]
    formatter = sub._get_formatter()
    for action in sub._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"{cmd} {name} has no help"
        if not action.option_strings or action.nargs == 0:
            continue
        if action.default is None or isinstance(action.default, bool):
            continue
        shown = formatter._expand_help(action)
        assert "default" in shown, f"{cmd} {name}: help does not name its default: {shown!r}"


@pytest.mark.parametrize("cmd", sorted(_subparsers()))
def test_an_unknown_option_shows_the_commands_usage(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--no-such-option"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: nonolab {cmd}"), err


@pytest.mark.parametrize(
    "argv", [["solve", "p.non"], ["stats", "p.non"], ["generate", "--seed", "1"], ["run"]]
)
def test_an_unknown_option_is_named_under_the_commands_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--no-such-option"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: nonolab {argv[0]}"), err
    assert "unrecognized arguments: --no-such-option" in err


def test_parser_has_version():
    assert "--version" in build_parser().format_help()
