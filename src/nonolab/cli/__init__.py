"""The ``nonolab`` command line.

Sub-commands live in :mod:`nonolab.cli.commands`: every module there defines
``register(subparsers)``, which adds its sub-commands with ``set_defaults(func=...)``; ``func``
takes the parsed namespace and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from nonolab import __version__


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every sub-command of :mod:`nonolab.cli.commands`."""
    parser = argparse.ArgumentParser(
        prog="nonolab",
        description="Nonogram difficulty study pipeline and Nonogram SAT toolkit.",
    )
    parser.add_argument("--version", action="version", version=f"nonolab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import nonolab.cli.commands as commands

    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"nonolab.cli.commands.{mod.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError) as exc:  # documented user-facing errors
        print(f"nonolab: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
