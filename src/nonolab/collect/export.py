"""Exporting the store as a study folder that ``nonolab validate`` and ``nonolab run`` read.

Layout (the default preset's, docs/data-format.md)::

    DEST/
      nonograms_6.json              the plan's puzzles (id, solution, clues)
      backend/logs/<label>.ndjson   one log per finished session
      incomplete/<label>.ndjson     logs of unfinished sessions (not read by the analysis)
      preset.yaml                   only when a session serves other than 3 puzzles
      plan.yaml                     the plan served: the database's own copy
      export.json                   what was exported (counts, time, excluded sessions, every
                                    file with its sha256)

Guarantees:

* one snapshot: every session and log line is read in one read transaction
  (:meth:`nonolab.collect.store.Store.snapshot`), so a session finished in the snapshot is under
  ``backend/logs/`` with all its lines and an unfinished one under ``incomplete/``, however many
  participants finish during the export;
* one plan: the puzzle file and ``plan.yaml`` come from the plan the database is bound to
  (:meth:`~nonolab.collect.store.Store.bind_plan`), never from the file on disk; an export with
  another plan is refused;
* nothing destroyed: the folder is written next to ``DEST`` under a temporary name and renamed
  into place (a reader never sees half an export); an existing ``DEST`` is replaced only when
  every file in it is one an earlier export wrote, unchanged (``export.json`` lists them with
  their hashes). Otherwise the export is refused naming the files it did not write (or that
  were changed since), and nothing is touched.
"""

from __future__ import annotations

import hashlib
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


class ForeignFiles(FileExistsError):
    """The destination holds files an export did not write (or changed since); nothing was
    written or removed. ``files`` lists them (paths relative to the destination)."""

    def __init__(self, message: str, files: list[str]):
        super().__init__(message)
        self.files = files


def puzzle_file_records(plan: StudyPlan) -> list[dict[str, Any]]:
    """Return the plan's puzzles in the study puzzle-file layout (``id``, ``solution``,
    ``clues``), in id order."""
    return [
        {"id": pid, "solution": [list(r) for r in p.solution], "clues": p.clues_dict()}
        for pid, p in sorted(plan.puzzles.items())
    ]


def _write(path: Path, text: str, written: dict[str, str], root: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    written[path.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()


def write_study_folder(store: Store, plan: StudyPlan, folder: Path) -> dict[str, Any]:
    """Write the export into the (new or empty) ``folder``; return the ``export.json`` record
    (``plan``, ``plan_sha256``, ``exported_at``, ``finished``, ``incomplete``: session counts,
    ``lines``: log lines written, ``excluded``: ``{label: reason}`` of the sessions the
    researcher excluded (exported like the others), ``files``: ``{relative path: sha256}`` of every file written
    but ``export.json`` itself).

    The puzzles and ``plan.yaml`` are the database's own plan (``plan`` binds a database that
    has none yet); raises :class:`nonolab.collect.store.PlanMismatch` when the database serves
    another plan than ``plan``."""
    bound, _ = store.bind_plan(plan)
    written: dict[str, str] = {}
    _write(folder / PUZZLE_FILE, json.dumps(puzzle_file_records(bound), indent=2) + "\n",
           written, folder)  # fmt: skip
    if bound.per_session != 3:
        _write(
            folder / "preset.yaml",
            "# the default layout with this plan's session length: nonolab run/validate "
            "--preset preset.yaml\nextends: default\nname: exported\n"
            f"puzzles_per_session: {bound.per_session}\n",
            written,
            folder,
        )
    _write(folder / "plan.yaml", bound.text, written, folder)
    finished = incomplete = n_lines = 0
    with store.snapshot() as conn:
        excluded = store.exclusions(conn)
        for row, lines in store.logs(conn=conn):
            done = row["step"] == "done"
            sub = LOG_DIR if done else INCOMPLETE_DIR
            _write(folder / sub / f"{row['label']}.ndjson", "\n".join(lines) + "\n", written,
                   folder)  # fmt: skip
            finished += done
            incomplete += not done
            n_lines += len(lines)
    record = {
        "plan": bound.name,
        "plan_sha256": bound.digest,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "finished": finished,
        "incomplete": incomplete,
        "lines": n_lines,
        "excluded": excluded,
        "files": written,
    }
    (folder / LOG_DIR).mkdir(parents=True, exist_ok=True)
    _write(folder / MARKER, json.dumps(record, indent=2) + "\n", {}, folder)
    return record


#: what an export wrote before ``export.json`` listed its files (``files`` missing)
_LEGACY = ("nonograms_6.json", "preset.yaml", "plan.yaml", "export.json")


def foreign_files(folder: Path) -> list[str]:
    """Return the paths (relative, sorted) under the earlier export ``folder`` that no export
    wrote, or that changed since (their sha256 differs from the one ``export.json`` lists);
    folders count when they hold no written file. Links are not followed."""
    try:
        record = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [MARKER]
    files = record.get("files") if isinstance(record, dict) else None
    out = []
    keep_dirs = {"backend", LOG_DIR, INCOMPLETE_DIR}
    if isinstance(files, dict):
        keep_dirs |= {"/".join(p.split("/")[:k]) for p in files for k in range(1, p.count("/") + 1)}
    for dirpath, dirnames, filenames in os.walk(folder):
        base = Path(dirpath)
        for name in list(dirnames):
            rel = (base / name).relative_to(folder).as_posix()
            if rel not in keep_dirs or (base / name).is_symlink():  # never made by an export
                out.append(rel + "/")
                dirnames.remove(name)
        for name in filenames:
            full = base / name
            rel = full.relative_to(folder).as_posix()
            if rel == MARKER:
                continue
            if full.is_symlink() or not full.is_file():
                out.append(rel)
            elif isinstance(files, dict):
                want = files.get(rel)
                if want is None or hashlib.sha256(full.read_bytes()).hexdigest() != want:
                    out.append(rel)
            elif not (
                rel in _LEGACY
                or (rel.endswith(".ndjson") and rel.rsplit("/", 1)[0] in (LOG_DIR, INCOMPLETE_DIR))
            ):
                out.append(rel)
    return sorted(out)


def _refuse_foreign(dest: Path, foreign: list[str]) -> None:
    shown = ", ".join(foreign[:10]) + (
        f" and {len(foreign) - 10} more" if len(foreign) > 10 else ""
    )
    raise ForeignFiles(
        f"{dest} holds files no export wrote or that were changed since ({shown}); an export "
        "never deletes or overwrites them: move them out, or export to another folder",
        foreign,
    )


def export_study(store: Store, plan: StudyPlan, dest: str | Path) -> dict[str, Any]:
    """Export atomically to ``dest`` (see the module docstring); return the export record.

    Raises ``FileExistsError`` when ``dest`` exists and is not an earlier export, and
    :class:`ForeignFiles` (a ``FileExistsError``) when it is one that holds files no export
    wrote, or changed ones; nothing is written or removed then.
    """
    dest = Path(dest).resolve()
    if dest.exists() and not (dest / MARKER).is_file():
        if dest.is_dir() and not dest.is_symlink() and not any(dest.iterdir()):
            dest.rmdir()
        else:
            raise FileExistsError(
                f"{dest} exists and is not an earlier export: refusing to replace it"
            )
    if dest.exists():
        foreign = foreign_files(dest)
        if foreign:
            _refuse_foreign(dest, foreign)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        record = write_study_folder(store, plan, tmp)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            os.rename(dest, old / "x")
            # a file added while this export was written: put everything back, refuse
            foreign = foreign_files(old / "x")
            if foreign:
                os.rename(old / "x", dest)
                old.rmdir()
                _refuse_foreign(dest, foreign)
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
