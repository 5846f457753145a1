"""Writing a simulated study in the public study's folder layout.

:func:`write_study` writes a :class:`nonolab.sim.events.SimStudy` under a folder:

* ``nonograms_6.json`` (:data:`PUZZLE_FILE`): the puzzles (list of ``{id, solution, clues:
  {rows, columns}, density}``, 4-space indented; the name is kept whatever the number of
  puzzles, as the ``default`` preset expects);
* ``assignment_schedule_<P>puzzles_3perms.json``: ``{"version": 1, "sequences": [...]}``, the
  ordered triples sessions draw from;
* ``backend/logs/<participant>.ndjson`` (:data:`LOG_DIR`): one NDJSON interaction log per
  participant (event types and fields as in :mod:`nonolab.sim.events`);
* ``riyad-analysis/derived/coded_responses.csv`` (:data:`CODED_FILE`): the coded free-text
  answers (one 0/1 column per theme / strategy code, same columns as the public file);
* ``ground_truth.json`` (:data:`GROUND_TRUTH`): what the analysis should recover.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nonolab.core.tables import write_text
from nonolab.sat.puzzles import Puzzle
from nonolab.sim.model import STRATEGIES, THEMES

if TYPE_CHECKING:
    from nonolab.sim.events import SimStudy

PUZZLE_FILE = "nonograms_6.json"
LOG_DIR = "backend/logs"
CODED_FILE = "riyad-analysis/derived/coded_responses.csv"
GROUND_TRUTH = "ground_truth.json"
CODED_COLUMNS = (
    ["response_id", "participant_id", "source_file", "response_kind", "text", "char_len"]
    + ["word_len", "order", "puzzle_id", "final_difficulty", "immediate_difficulty"]
    + ["skill_nonogram", "codeable", "n_codes"]
    + [f"code_{c}" for c in THEMES + STRATEGIES]
    + ["codes_str"]
)


def puzzle_records(puzzles: Sequence[Puzzle]) -> list[dict[str, Any]]:
    """Return the puzzles in the study file's layout (``id``, ``solution``, ``clues``, ``density``)."""
    out = []
    for p in puzzles:
        assert p.solution is not None
        cells = p.height * p.width
        out.append(
            {
                "id": int(p.label or 0),
                "solution": [list(r) for r in p.solution],
                "clues": p.clues_dict(),
                "density": round(sum(map(sum, p.solution)) / cells, 4),
            }
        )
    return out


def _coded_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(CODED_COLUMNS)
    for row in rows:
        out = []
        for c in CODED_COLUMNS:
            v = row.get(c)
            if v is None:
                out.append("")
            elif isinstance(v, bool):
                out.append("True" if v else "False")
            elif isinstance(v, float):
                out.append(repr(v))
            else:
                out.append(str(v))
        wr.writerow(out)
    return buf.getvalue()


def write_study(study: SimStudy, out_dir: str | Path) -> list[Path]:
    """Write ``study`` in the public study's folder layout under ``out_dir``; return the files.

    Refuses to write into a non-empty folder that does not already hold a simulated study
    (``ground_truth.json``), so a typo cannot clobber real data.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not (out / GROUND_TRUTH).exists():
        raise ValueError(f"{out} is not empty and holds no {GROUND_TRUTH}: refusing to write")
    if (out / LOG_DIR).exists():
        for f in (out / LOG_DIR).glob("*.ndjson"):
            f.unlink()
    files = []

    def put(rel: str, text: str) -> None:
        p = out / rel
        write_text(p, text)
        files.append(p)

    put(PUZZLE_FILE, json.dumps(puzzle_records(study.puzzles), indent=4) + "\n")
    sched = {"version": 1, "sequences": study.schedule}
    put(f"assignment_schedule_{study.params.n_puzzles}puzzles_3perms.json",
        json.dumps(sched, indent=2) + "\n")  # fmt: skip
    truncated = {f["participant_id"] for f in study.truth["faults"]
                 if f["fault"] == "truncated_last_line"}  # fmt: skip
    for pid, lines in study.logs.items():
        tail = "" if pid in truncated else "\n"
        put(f"{LOG_DIR}/{pid}.ndjson", "\n".join(lines) + tail)
    put(CODED_FILE, _coded_csv(study.coded))
    put(GROUND_TRUTH, json.dumps(study.truth, indent=2, sort_keys=True) + "\n")
    return files
