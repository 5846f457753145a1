"""The ``nonolab`` command line.

Sub-commands live in :mod:`nonolab.cli.commands`: every module there defines
``register(subparsers)``, which adds its sub-commands with ``set_defaults(func=...)``; ``func``
takes the parsed namespace and returns an exit code.

:data:`COMMANDS` names each command's module and one-line help, so that ``nonolab --help``
lists the commands without importing any of them: a command's module (and the libraries it
needs: pandas, Snakemake, ...) is imported only when that command runs or shows its help. A
command whose optional dependencies are missing ends with an error naming the extra to install
(:data:`EXTRAS`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Iterable, Sequence

#: command -> (module under nonolab.cli.commands that registers it, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run the whole analysis workflow (Snakemake) on a study folder"),
    "report": (
        "report",
        "build the study report (one self-contained HTML page) of a results folder",
    ),
    "ingest": ("ingest", "read a study's logs into tidy tables and a ledger"),
    "features": ("ingest", "per-attempt behavioural features from ingest tables"),
    "validate": (
        "validate",
        "check a study folder: every problem the ingest finds, without writing tables",
    ),
    "simulate": (
        "simulate",
        "write a simulated study (public-study layout plus ground_truth.json)",
    ),
    "solve": ("solve", "solve puzzle files (any supported format) and decide uniqueness"),
    "stats": (
        "sat",
        "SAT solver statistics of every puzzle in a file (all solvers x encodings)",
    ),
    "generate": (
        "sat",
        "random puzzles with a fixed number of filled cells and a unique solution",
    ),
    "encode": ("sat", "write a puzzle's CNF as DIMACS"),
    "serve": (
        "serve",
        "run the web study platform for a plan (participants' pages, dashboard, export)",
    ),
    "design": (
        "design",
        "plan a study: puzzles chosen for power, a balanced schedule, power, a plan",
    ),
    "measures": (
        "measures",
        "which measures track difficulty, pooled over results folders (study as a random effect)",
    ),
}

#: commands whose arguments after ``--`` are passed on unparsed, and the namespace attribute
#: that receives them (a list of strings)
PASSTHROUGH: dict[str, str] = {"run": "snakemake_args"}

#: top-level name of an optional dependency -> the extra of ``pip install 'nonolab[EXTRA]'``
#: that installs it
EXTRAS: dict[str, str] = {
    **dict.fromkeys(
        (
            "pandas",
            "pyarrow",
            "scipy",
            "sklearn",
            "statsmodels",
            "choix",
            "jsonschema",
            "yaml",
            "threadpoolctl",
            "pandera",
            "tabulate",
            "jinja2",
            "pygments",
            "snakemake",
            "docutils",
            "itables",
        ),
        "pipeline",
    ),
    "matplotlib": "plot",
    **dict.fromkeys(("starlette", "uvicorn", "sqlalchemy", "psycopg"), "serve"),
    "numba": "fast",
}


def missing_extra_message(command: str, module: str) -> str | None:
    """Return the error text for ``command`` failing to import ``module`` (naming the extra
    that installs it), or None when ``module`` is not an optional dependency of nonolab."""
    top = module.split(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"`nonolab {command}` needs {top!r}, which is not installed: it comes with the "
        f"'{extra}' extra, pip install 'nonolab[{extra}]'"
    )


class _VersionAction(argparse.Action):
    """``--version``: print ``nonolab <version>`` and exit (the version is looked up only
    then)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        import nonolab

        print(f"nonolab {nonolab.__version__}")
        parser.exit()


class HelpFormatter(argparse.HelpFormatter):
    """Help text that names every option's default: ``(default: X)`` is appended to an
    option's help unless the help already says ``default`` or there is nothing to name (no
    default, a flag, a suppressed default)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or not action.option_strings
            or action.nargs == 0
        ):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, list | tuple) else default
        return f"{text} (default: {str(shown).replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """The parser of ``nonolab`` and of every sub-command: help names the defaults
    (:class:`HelpFormatter`)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def _command_of(argv: Sequence[str]) -> str | None:
    """Return the sub-command named in ``argv`` (its first word that is not an option)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """Return the top-level parser.

    The commands in ``commands`` (default: every command) get their full parsers, which
    imports their modules; the others are listed with their one-line help only.
    """
    load = set(COMMANDS) if commands is None else set(commands)
    modules = {COMMANDS[c][0] for c in load if c in COMMANDS}
    parser = Parser(
        prog="nonolab",
        description="Nonogram difficulty study pipeline and Nonogram SAT toolkit.",
        epilog="`nonolab COMMAND --help` describes a command and its options. Exit status: 0 "
        "success, 1 the command found problems (see its help), 2 a usage error or an input "
        "that cannot be read.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    registered: set[str] = set()
    for name, (module_name, help_text) in COMMANDS.items():
        if name in registered:
            continue
        if module_name in modules:
            module = importlib.import_module(f"nonolab.cli.commands.{module_name}")
            before = set(sub.choices)
            module.register(sub)
            registered |= set(sub.choices) - before
            modules.discard(module_name)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
            registered.add(name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_of(argv)
    passthrough: list[str] = []
    if command in PASSTHROUGH and "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    try:
        parser = build_parser([command] if command else [])
        if not argv:
            parser.print_help(sys.stderr)
            return 2
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # the command's own usage, not the top level's
            sub = _subparser(parser, command)
            (sub or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
        if command in PASSTHROUGH:
            setattr(args, PASSTHROUGH[command], passthrough)
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return 2
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except ModuleNotFoundError as exc:
        message = missing_extra_message(command or "", exc.name or "")
        if message is None:
            raise
        print(f"nonolab: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _stdout_closed()
    except KeyboardInterrupt:
        print("nonolab: interrupted", file=sys.stderr)
        return 130
    except ValueError as exc:  # documented user-facing errors
        print(f"nonolab: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing file, a folder given for a file, no permission, ...
        from nonolab.cli.options import os_error_message

        print(f"nonolab: error: {os_error_message(exc)}", file=sys.stderr)
        return 2


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> Parser | None:
    """Return the parser of sub-command ``command`` in ``parser`` (None if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command) if command else None
    return None


#: exit status after the reader of stdout went away (``nonolab solve ... | head``): 128 +
#: SIGPIPE, what a shell reports for a program that the signal ended
EXIT_BROKEN_PIPE = 141


def _stdout_closed() -> int:
    """Point stdout at the null device (so the interpreter's final flush does not fail
    again) and return :data:`EXIT_BROKEN_PIPE`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured in a test)
        pass
    return EXIT_BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
