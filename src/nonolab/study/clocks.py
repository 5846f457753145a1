"""Client clocks against the server's: the check ``nonolab validate`` runs on logs that carry
the server's receive time.

A line written by ``nonolab serve`` holds the page's time of the event (``t``, from the
participant's page, whose clock is anchored to the server's when the page loads) and the time
the server received it (``server_t``, docs/data-format.md). An event is received after it
happens, so ``t`` can be behind ``server_t`` (a page that played on while offline sends its
events later) but not ahead of it, and not by days:

* ``t`` more than :data:`AHEAD_S` seconds after ``server_t`` (the platform refuses such events
  as they arrive; its tolerance);
* ``t`` more than :data:`BEHIND_S` seconds before ``server_t`` (longer than any study session
  stays unsent in a page: the page's clock was wrong).

Either is a problem naming the file and line: the times of that session cannot be trusted.
Lines without ``server_t`` (logs of other platforms, the public study) are not checked, and a
line that is not JSON or has no valid times is the ingest's to report, not this check's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nonolab.study.logs import parse_time

#: largest accepted lead of a line's ``t`` over its ``server_t`` (s): the platform's tolerance
AHEAD_S = 60.0
#: largest accepted lag of a line's ``t`` behind its ``server_t`` (s): one day
BEHIND_S = 86_400.0


def clock_skew(line: str) -> float | None:
    """Return ``t - server_t`` of log line ``line`` in seconds, or None when the line has no
    ``server_t`` or either time cannot be read."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if not isinstance(rec, dict) or "server_t" not in rec:
        return None
    try:
        return (parse_time(rec.get("t")) - parse_time(rec["server_t"])).total_seconds()
    except (ValueError, OverflowError):
        return None


def clock_problems(path: Path, rel: str, participant_id: str | None) -> list[dict[str, Any]]:
    """Return one problem per line of the log at ``path`` (``rel``: its path in the study)
    whose client time disagrees with its server receive time beyond the bounds (see the module
    docstring); each in the shape of ``nonolab validate``'s problems (``level`` "line",
    ``file``, ``line`` 1-based, ``id``, ``reason``, ``action`` "kept")."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # the ingest reports a file it cannot read
    out = []
    for k, line in enumerate(text.split("\n"), start=1):
        skew = clock_skew(line) if "server_t" in line else None
        if skew is None:
            continue
        if skew > AHEAD_S:
            why = f"{_span(skew)} ahead of the server's receive time server_t (at most {AHEAD_S:.0f} s)"
        elif skew < -BEHIND_S:
            why = f"{_span(-skew)} behind the server's receive time server_t (at most one day)"
        else:
            continue
        out.append(
            {
                "level": "line",
                "file": rel,
                "line": k,
                "id": participant_id,
                "reason": f"client time t is {why}: the page's clock was wrong, the session's "
                "times cannot be trusted",
                "action": "kept",
            }
        )
    return out


def _span(s: float) -> str:
    """Return ``s`` seconds in the largest fitting unit (``75 s``, ``3.2 h``, ``41.0 years``)."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600)):
        if s >= size:
            return f"{s / size:.1f} {unit}"
    return f"{s:.0f} s"
