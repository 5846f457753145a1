"""Which study a results folder belongs to.

The ingest stage writes ``results/ingest/study.json`` (:func:`study_identity`): the study
folder's absolute path, the preset, and a content fingerprint of every file the analysis reads
(the puzzle file and every log file, by relative path and sha256). The workflow compares it with
the study it is asked to run (:func:`check_results_study`) and refuses to mix two studies in one
results folder, so a table, figure or report always belongs to the study it names.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from nonolab.core.hashing import file_sha256
from nonolab.study.presets import Preset, StudyError, log_sources, study_file

STUDY_RECORD = "study.json"


def study_fingerprint(study_dir: str | os.PathLike, preset: Preset) -> str:
    """Return the hex sha256 over the sorted ``(relative path, sha256)`` pairs of the study's
    puzzle file and every log file the preset matches (renaming or moving the folder keeps it;
    changing any byte of those files changes it)."""
    study_dir = Path(study_dir)
    files = {study_file(study_dir, preset, "puzzle_file")}
    files.update(s.path for s in log_sources(study_dir, preset))
    h = hashlib.sha256()
    for f in sorted(files, key=lambda p: p.relative_to(study_dir).as_posix()):
        h.update(f"{f.relative_to(study_dir).as_posix()}\0{file_sha256(f)}\n".encode())
    return h.hexdigest()


def study_identity(study_dir: str | os.PathLike, preset: Preset) -> dict[str, Any]:
    """Return the record that names a study: ``study_dir`` (absolute POSIX path), ``preset``
    (name), ``preset_file`` (the preset's absolute POSIX path: ``nonolab run`` reuses it for
    a later run on the same results folder) and ``fingerprint`` (:func:`study_fingerprint`)."""
    study_dir = Path(study_dir).resolve()
    return {
        "study_dir": study_dir.as_posix(),
        "preset": preset.name,
        "preset_file": Path(preset.path).resolve().as_posix(),
        "fingerprint": study_fingerprint(study_dir, preset),
    }


def read_results_study(results_dir: str | os.PathLike) -> dict[str, Any] | None:
    """Return the study record of a results folder (``<results>/ingest/study.json``), or None
    when the folder holds no ingest yet."""
    path = Path(results_dir) / "ingest" / STUDY_RECORD
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def check_results_study(
    results_dir: str | os.PathLike, study_dir: str | os.PathLike, preset: Preset
) -> dict[str, Any] | None:
    """Return the study record of ``results_dir`` after checking that it belongs to the study
    asked for; None when the folder holds no results yet.

    The same folder (path) is the same study, whatever changed inside it (the ingest then reruns
    on the new content). Another path is accepted only when its content fingerprint is the same
    (a moved or copied study). Raises :class:`StudyError` otherwise, naming both studies.
    """
    rec = read_results_study(results_dir)
    if rec is None:
        return None
    asked = Path(study_dir).resolve().as_posix()
    if rec.get("study_dir") == asked:
        return rec
    if Path(asked).is_dir() and rec.get("fingerprint") == study_fingerprint(asked, preset):
        return rec
    raise StudyError(
        f"{Path(results_dir) / 'ingest' / STUDY_RECORD} says these results belong to the study "
        f"{rec.get('study_dir')} (preset {rec.get('preset')}), not to {asked}. Keep one results "
        "folder per study: `nonolab run --study DIR --results OTHER_DIR` (Snakemake: "
        "--directory), or pass --config study_dir=<that study>, or remove the results folder."
    )


def id_warnings(
    participants: list[tuple[str, str]], puzzles: list[str], puzzle_file: str
) -> list[dict[str, Any]]:
    """Return ``validate`` warnings for ids a reader may misread: ``participants`` as
    ``(file, id)`` and the ``puzzles`` ids of ``puzzle_file``. An id holding a character
    nobody sees (:func:`nonolab.core.confusables.invisible_characters`: zero-width, format and
    control characters) or mixing scripts (:func:`~nonolab.core.confusables.mixed_scripts`:
    a Cyrillic ``р`` among Latin letters) is one warning; two puzzle ids that differ only in
    letter case or look alike (:func:`nonolab.core.strict.lookalikes`) are one warning on the
    later. (Two participant ids that look alike are a kept ledger row of the ingest, as
    letter-case twins are.) Records: ``level``, ``file``, ``line`` (None), ``id``,
    ``reason``."""
    from nonolab.core.confusables import invisible_characters, mixed_scripts
    from nonolab.core.strict import lookalikes

    out: list[dict[str, Any]] = []

    def add(level: str, file: str, ident: str, reason: str) -> None:
        out.append({"level": level, "file": file, "line": None, "id": ident, "reason": reason})

    entries = [("participant", f, i) for f, i in participants]
    entries += [("puzzle", puzzle_file, i) for i in puzzles]
    for level, file, ident in entries:
        hidden = invisible_characters(ident)
        if hidden:
            add(level, file, ident, f"{level} id {ident!r} holds characters nobody sees: "
                f"{', '.join(hidden)}; it looks like {_shown(ident)!r}")  # fmt: skip
        mixed = mixed_scripts(ident)
        if mixed:
            add(level, file, ident, f"{level} id {ident!r} mixes scripts "
                f"({', '.join(sorted(mixed))}): letters of one may be taken for another's")  # fmt: skip
    for first, second, kind in lookalikes(puzzles):
        how = "only in letter case" if kind == "case" else "in characters drawn alike"
        add("puzzle", puzzle_file, second, f"puzzle id {second!r} differs from {first!r} {how}")
    return out


def _shown(ident: str) -> str:
    """Return ``ident`` without the characters nobody sees (what a reader takes it for)."""
    from nonolab.core.confusables import invisible_characters

    hidden = {int(h.split()[0][2:], 16) for h in invisible_characters(ident)}
    return "".join(ch for ch in ident if ord(ch) not in hidden)


__all__ = [
    "STUDY_RECORD",
    "id_warnings",
    "check_results_study",
    "read_results_study",
    "study_fingerprint",
    "study_identity",
]
