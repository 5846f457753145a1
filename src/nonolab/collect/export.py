"""Exporting the store as a study folder that ``nonolab validate`` and ``nonolab run`` read.

Layout (the default preset's, docs/data-format.md)::

    DEST/
      nonograms_6.json              the plan's puzzles (id, solution, clues)
      backend/logs/<label>.ndjson   one log per finished session
      incomplete/<label>.ndjson     logs of unfinished sessions (not read by the analysis)
      preset.yaml                   only when a session serves other than 3 puzzles
      plan.yaml                     the plan served
      export.json                   what was exported (counts, time)

The folder is written next to ``DEST`` under a temporary name and renamed into place, so a
reader never sees half an export; an existing ``DEST`` is replaced only when it holds an earlier
export (``export.json``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from nonolab.collect.plan import StudyPlan
from nonolab.collect.store import Store

PUZZLE_FILE = "nonograms_6.json"
LOG_DIR = "backend/logs"
INCOMPLETE_DIR = "incomplete"
MARKER = "export.json"


def puzzle_file_records(plan: StudyPlan) -> list[dict[str, Any]]:
    """Return the plan's puzzles in the study puzzle-file layout (``id``, ``solution``,
    ``clues``), in id order."""
    return [
        {"id": pid, "solution": [list(r) for r in p.solution], "clues": p.clues_dict()}
        for pid, p in sorted(plan.puzzles.items())
    ]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def write_study_folder(store: Store, plan: StudyPlan, folder: Path) -> dict[str, Any]:
    """Write the export into the (new or empty) ``folder``; return the ``export.json`` record
    (``finished``, ``incomplete``: session counts, ``lines``: log lines written)."""
    _write(folder / PUZZLE_FILE, json.dumps(puzzle_file_records(plan), indent=2) + "\n")
    if plan.per_session != 3:
        _write(
            folder / "preset.yaml",
            "# the default layout with this plan's session length: nonolab run/validate "
            "--preset preset.yaml\nextends: default\nname: exported\n"
            f"puzzles_per_session: {plan.per_session}\n",
        )
    if plan.path is not None and plan.path.is_file():
        shutil.copyfile(plan.path, folder / "plan.yaml")
    finished = incomplete = n_lines = 0
    for row, lines in store.logs():
        done = row["step"] == "done"
        sub = LOG_DIR if done else INCOMPLETE_DIR
        _write(folder / sub / f"{row['label']}.ndjson", "\n".join(lines) + "\n")
        finished += done
        incomplete += not done
        n_lines += len(lines)
    record = {
        "plan": plan.name,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": finished,
        "incomplete": incomplete,
        "lines": n_lines,
    }
    (folder / LOG_DIR).mkdir(parents=True, exist_ok=True)
    _write(folder / MARKER, json.dumps(record, indent=2) + "\n")
    return record


def export_study(store: Store, plan: StudyPlan, dest: str | Path) -> dict[str, Any]:
    """Export atomically to ``dest`` (see the module docstring); return the export record.

    Raises ``FileExistsError`` when ``dest`` exists and is not an earlier export.
    """
    dest = Path(dest).resolve()
    if dest.exists() and not (dest / MARKER).is_file():
        if dest.is_dir() and not any(dest.iterdir()):
            dest.rmdir()
        else:
            raise FileExistsError(
                f"{dest} exists and is not an earlier export: refusing to replace it"
            )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        record = write_study_folder(store, plan, tmp)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            os.rename(dest, old / "x")
            os.rename(tmp, dest)
            shutil.rmtree(old)
        else:
            os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return record


def validate_now(store: Store, plan: StudyPlan, timeout_s: float = 300.0) -> dict[str, Any]:
    """Export the data so far into a temporary folder and run ``nonolab validate --json`` on it
    (the command itself, in a child process); return ``{usable, problems (count),
    first_problems (up to 20 texts), finished}``; ``usable`` is None before any session is
    finished."""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="nonolab-validate-") as d:
        folder = Path(d) / "study"
        folder.mkdir()
        record = write_study_folder(store, plan, folder)
        if record["finished"] == 0:
            return {"usable": None, "problems": 0, "first_problems": [], "finished": 0}
        preset = folder / "preset.yaml"
        cmd = [sys.executable, "-m", "nonolab", "validate", str(folder), "--json"]
        if preset.is_file():
            cmd += ["--preset", str(preset)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode not in (0, 1):
        return {"usable": False, "problems": -1, "finished": record["finished"],
                "first_problems": [proc.stderr.strip()[-2000:]]}  # fmt: skip
    report = json.loads(proc.stdout)
    probs = report["problems"]
    return {
        "usable": report["usable"],
        "problems": len(probs),
        "first_problems": [f"{r['file']}:{r['line']}: {r['reason']}" for r in probs[:20]],
        "finished": record["finished"],
    }
