"""Undefined statistics: one way of carrying "not defined, and why" from a table to the page.

A statistic that cannot be computed is missing (NaN; an empty cell in a CSV table, ``null`` in
a JSON record) and its row or record carries the reason in words (a column or key named
``*undefined*``, the reasons below). The report's sentences and figure titles write it with
:func:`stat_text` / :func:`p_text`, so an undefined value reads "not defined (the comparison
graph is not connected)" wherever it appears, never "None", "nan" or 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: the words for a statistic that cannot be computed
NOT_DEFINED = "not defined"

#: reasons, in the words the report shows
NOT_CONNECTED = "the puzzles' comparison graph is not connected"
CONSTANT_METRIC = "the metric is the same for every puzzle"
CONSTANT_DIFFICULTY = "every puzzle has the same difficulty score"
NO_DIFFICULTY = "no difficulty score (the Bradley-Terry strengths are not defined)"
BOUNDARY_FIT = "the fit is at a boundary of its parameter space"
#: fewest puzzles a rank correlation is defined on (two points give rho = +1 or -1, always)
MIN_PUZZLES = 3


def too_few(n: int, minimum: int, what: str = "puzzles") -> str:
    """Return the reason "only N <what> (at least M needed)"."""
    return f"only {n} {what} (at least {minimum} needed)"


def as_float(value: Any) -> float:
    """Return ``value`` as a float; NaN for None, an empty or non-numeric cell."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def is_undefined(value: Any) -> bool:
    """Whether ``value`` is a missing statistic: None, NaN, infinite, empty or not a number."""
    return not math.isfinite(as_float(value))


def undefined_text(reason: str | None = None) -> str:
    """Return "not defined" with the reason in brackets when there is one."""
    reason = (reason or "").strip()
    return f"{NOT_DEFINED} ({reason})" if reason else NOT_DEFINED


def stat_text(
    value: Any, fmt: Callable[[float], str] = lambda x: f"{x:.3g}", reason: str | None = None
) -> str:
    """Return ``value`` written with ``fmt``, or :func:`undefined_text` of ``reason`` when the
    value is missing or a reason is given (a reason always wins: the value beside it is not a
    result)."""
    if (reason or "").strip() or is_undefined(value):
        return undefined_text(reason)
    return fmt(as_float(value))


def p_text(value: Any, reason: str | None = None) -> str:
    """Return a p-value as ``p = 0.0123`` (3 significant digits; ``p < 1e-300`` for one that
    rounds to 0), or ``p not defined (reason)``."""
    if (reason or "").strip() or is_undefined(value):
        return "p " + undefined_text(reason)
    x = as_float(value)
    if x <= 0:
        return "p < 1e-300"
    return f"p = {x:.3g}" if x >= 1e-3 else f"p = {x:.2e}"


__all__ = [
    "BOUNDARY_FIT",
    "CONSTANT_DIFFICULTY",
    "CONSTANT_METRIC",
    "MIN_PUZZLES",
    "NOT_CONNECTED",
    "NOT_DEFINED",
    "NO_DIFFICULTY",
    "as_float",
    "is_undefined",
    "p_text",
    "stat_text",
    "too_few",
    "undefined_text",
]
