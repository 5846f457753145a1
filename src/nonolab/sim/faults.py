"""Fault injection: one bad log line per requested fault class (:data:`nonolab.sim.model.FAULTS`).

The faults are the bad-input classes the ingest must ledger: a non-JSON line, a truncated last
line, an unknown event type, a move outside the grid, a move without its column and an
unparseable timestamp. :func:`inject_faults` records where each one went, for
``ground_truth.json``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from nonolab.sim.model import SimParams, iso_time


def inject_faults(
    logs: dict[str, list[str]], params: SimParams, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Corrupt ``logs`` in place with one instance of each fault class in ``params.faults``.

    Returns one record per fault: ``{fault, participant_id, line}`` (1-based line number of the
    bad line in the written file). Each fault goes to a different participant when possible.
    """
    out = []
    pids = sorted(logs)
    chosen = [pids[int(x)] for x in rng.permutation(len(pids))]
    for n, fault in enumerate(params.faults):
        pid = chosen[n % len(chosen)]
        lines = logs[pid]
        pos = int(rng.integers(3, max(len(lines) - 3, 4)))
        t = json.loads(lines[pos - 1])["t"] if pos - 1 < len(lines) else iso_time(0)
        if fault == "non_json":
            lines.insert(pos, "{this is not json")
        elif fault == "truncated_last_line":
            last = lines[-1]
            lines[-1] = last[: len(last) // 2]
            pos = len(lines) - 1
        elif fault == "unknown_event":
            lines.insert(pos, json.dumps({"type": "teleport", "t": t}))
        elif fault == "move_outside_grid":
            ev = {"type": "move", "r": params.height + 2, "c": 0, "value": 1, "t": t}
            lines.insert(pos, json.dumps(ev))
        elif fault == "missing_field":
            lines.insert(pos, json.dumps({"type": "move", "r": 0, "value": 1, "t": t}))
        elif fault == "bad_timestamp":
            lines.insert(pos, json.dumps({"type": "undo", "label": "cell", "diffs_len": 1,
                                          "t": "yesterday"}))  # fmt: skip
        out.append({"fault": fault, "participant_id": pid, "line": pos + 1})
    return out
