"""Argument types shared by the sub-commands (``type=`` of ``add_argument``).

Each returns the converted value or raises ``argparse.ArgumentTypeError``, so a bad value ends
as a usage error (exit 2) naming the option and, for names, listing the valid ones. Solver and
encoding names are looked up only when the option is given (python-sat is imported then).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _whole_number_at_least(minimum: int) -> Callable[[str], int]:
    """Return the ``type=`` function that reads a whole number of at least ``minimum``."""

    def convert(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"needs a whole number, not {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(
                f"needs a whole number of at least {minimum}, not {text}"
            )
        return n

    return convert


#: ``text`` as a whole number of at least 1
positive_int = _whole_number_at_least(1)
#: ``text`` as a whole number of at least 0
non_negative_int = _whole_number_at_least(0)


def positive_seconds(text: str) -> float:
    """Return ``text`` as a number of seconds that is positive and finite (no nan, no inf)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"needs a number of seconds, not {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise argparse.ArgumentTypeError(
            f"needs a positive, finite number of seconds, not {text!r}"
        )
    return x


def solver_name(text: str) -> str:
    """Return the canonical python-sat solver name for ``text`` (or an alias: ``m22``,
    ``g42``, ``cd19``, ...)."""
    from nonolab.sat.solvers import available_solvers, canonical_solver

    try:
        return canonical_solver(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(available_solvers())})"
        ) from None


def hybrid_solver_name(text: str) -> str:
    """Return ``auto`` or the canonical python-sat solver name for ``text``."""
    if text == "auto":
        return text
    from nonolab.sat.solvers import available_solvers, canonical_solver

    try:
        return canonical_solver(text)
    except ValueError:
        names = ", ".join(["auto", *available_solvers()])
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {names})"
        ) from None


def encoding_name(text: str) -> str:
    """Return ``text`` when it names a registered CNF encoding."""
    from nonolab.sat.encodings import ENCODINGS, get_encoding

    try:
        get_encoding(text)
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {text!r} (choose from {', '.join(sorted(ENCODINGS))})"
        ) from None
    return text


def os_error_message(exc: OSError) -> str:
    """Return a one-line message for ``exc`` naming its file: ``PATH: Is a directory``."""
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


__all__ = [
    "encoding_name",
    "grid_size",
    "hybrid_solver_name",
    "non_negative_int",
    "os_error_message",
    "positive_int",
    "positive_seconds",
    "solver_name",
]


def grid_size(text: str) -> tuple[int, int]:
    """Return ``text`` of the form ``HxW`` (e.g. ``10x10``) as ``(height, width)``."""
    try:
        h, w = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 10x10, got {text!r}") from None
    return h, w
