"""``nonolab validate``: check a study folder without writing anything.

Runs the ingest (:func:`nonolab.study.ingest.ingest_study`) in memory and sorts its ledger
into *known* rows and *problems*. Known rows are the ones the study's preset or the logging
platform explain:

* ``preset``: a log file the preset excludes (with its reason);
* ``follows preset``: a row about a participant whose log file the preset excludes (e.g. the
  coded survey responses of an excluded participant);
* ``skipped puzzle``: a rating of -1, the platform's value for a skipped puzzle (kept, set
  missing);
* ``coded ratings (preset)``: a coded rating reason whose rating differs from the log's, kept,
  when the preset says why (``themes.coded_ratings_differ``).

Every other ledger row is a problem, and so is a line whose client time disagrees with the
server's receive time beyond the bounds of :mod:`nonolab.study.clocks` (logs written by
``nonolab serve``, which carry ``server_t``). Exit status: 0 when the study is usable as it is (only
known rows), 1 when there are problems, 2 when the study cannot be read at all (the message
names the file).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

#: ledger reasons of a -1 rating (the platform's value for a skipped puzzle)
_SKIPPED_RATING = re.compile(r"^(initial|final) rating -1 is not")
#: ledger reasons of a coded rating reason that disagrees with the logs (kept)
_CODED_DIFFERS = "the coded rating is used as it is"


def _split_source(source: str) -> tuple[str, int | None]:
    """Return ``(file, line)`` of a ledger ``source`` (``file:line`` or ``file``)."""
    file, sep, line = source.rpartition(":")
    if sep and line.isdigit():
        return file, int(line)
    return source, None


def known_reason(
    row: dict[str, Any],
    excluded: dict[str, str],
    analysed: frozenset[str] = frozenset(),
    coded_ratings_differ: bool = False,
) -> str | None:
    """Return why ledger ``row`` is expected (``preset``, ``follows preset``, ``skipped
    puzzle``), or None when it is a problem. ``excluded`` maps each log file the preset
    excludes (path relative to the study) to its participant id (the file stem); ``analysed``
    holds the ids of the participants read, whose rows are never explained by an exclusion;
    ``coded_ratings_differ``: the preset says why its coded ratings may differ from the logs
    (``themes.coded_ratings_differ``), so such kept rows are known."""
    file, _ = _split_source(row["source"])
    if coded_ratings_differ and row["action"] == "kept" and _CODED_DIFFERS in row["reason"]:
        return "coded ratings (preset)"
    if row["level"] == "file" and file in excluded:
        return "preset"
    if row["id"] in excluded.values() and row["id"] not in analysed:
        return "follows preset"
    if row["action"] == "kept" and _SKIPPED_RATING.match(row["reason"]):
        return "skipped puzzle"
    return None


def validate_study(study: str | Path, preset_name: str = "auto") -> dict[str, Any]:
    """Return the validation report of the study folder ``study``.

    Keys: ``study``, ``preset``, ``preset_reason`` (why that preset:
    :func:`nonolab.study.presets.choose_preset`), ``usable`` (no problems), ``warnings`` (puzzles with more than
    one solution, :func:`puzzle_warnings`; log globs that are absolute or match nothing,
    :func:`glob_warnings`; they do not make the study unusable), ``problems`` and ``known`` (ledger
    rows as dicts: ``level``, ``file``, ``line`` (1-based, None for a whole file), ``id``,
    ``reason``, ``action``; known rows also ``known``, see :func:`known_reason`) and
    ``summary`` (``log_files``, ``files_excluded``, ``participants``,
    ``participants_excluded``, ``attempts``, ``lines_read`` = ``lines_used`` +
    ``lines_excluded`` + ``lines_ignored``). Raises ``StudyError``/``PuzzleError`` (both
    ``ValueError``) or ``OSError`` for a study that cannot be read.
    """
    from nonolab.study.ingest import ingest_study
    from nonolab.study.presets import StudyError, choose_preset, log_sources

    study = Path(study)
    if not study.is_dir():
        what = "is not a folder" if study.exists() else "does not exist"
        raise StudyError(f"study folder {study} {what}")
    preset, why = choose_preset(study, preset_name)
    result = ingest_study(study, preset)
    report = validation_report(result, study, preset, log_sources(study, preset))
    return {**report, "preset_reason": why}


def validation_report(result: Any, study: Path, preset: Any, sources: list[Any]) -> dict[str, Any]:
    """Return the :func:`validate_study` report of an ingest ``result`` of ``study`` read with
    ``preset``, whose log files are ``sources`` (:func:`nonolab.study.presets.log_sources`)."""
    # only the files the preset excludes are known; a file not read (renamed, a link outside
    # the study, not UTF-8) is a problem
    excluded = {s.rel: s.path.stem for s in sources if s.participant_id is None and s.read}
    analysed = frozenset(s.participant_id for s in sources if s.participant_id is not None)
    coded_differ = bool((preset.get("themes") or {}).get("coded_ratings_differ"))
    problems: list[dict[str, Any]] = []
    known: list[dict[str, Any]] = []
    for row in result.tables["ledger"].to_dict("records"):
        file, line = _split_source(row["source"])
        rec = {
            "level": row["level"],
            "file": file,
            "line": line,
            "id": row["id"],
            "reason": row["reason"],
            "action": row["action"],
        }
        why = known_reason(row, excluded, analysed, coded_differ)
        if why is None:
            problems.append(rec)
        else:
            known.append({**rec, "known": why})
    problems += snakemake_name_rows(study, preset, sources)
    problems += clock_check(sources)
    s = result.summary
    warnings = puzzle_warnings(study, preset) + glob_warnings(study, preset)
    warnings += _id_warnings(result, preset, sources)
    summary = {
        "log_files": s["log_files"],
        "files_excluded": s["files_excluded"],
        "participants": s["participants"],
        "participants_excluded": s["participants_excluded"],
        "attempts": s["attempts"],
        "lines_read": s["events_read"],
        "lines_used": s["events_used"],
        "lines_excluded": s["events_excluded"],
        "lines_ignored": s["events_ignored"],
    }
    return {
        "study": str(study),
        "preset": preset.name,
        "usable": not problems,
        "problems": problems,
        "warnings": warnings,
        "known": known,
        "summary": summary,
    }


def _id_warnings(result: Any, preset: Any, sources: list[Any]) -> list[dict[str, Any]]:
    """Return :func:`nonolab.study.identity.id_warnings` of the study's participant and puzzle
    ids (invisible characters, mixed scripts, puzzle ids that look alike)."""
    from nonolab.study.identity import id_warnings

    participants = [(s.rel, s.participant_id) for s in sources if s.participant_id is not None]
    puzzles = [str(p) for p in result.tables["puzzles"]["puzzle_id"]]
    return id_warnings(participants, puzzles, str(preset.get("puzzle_file", "")))


def snakemake_name_rows(study: Path, preset: Any, sources: list[Any]) -> list[dict[str, Any]]:
    """Return one problem per path ``nonolab run`` refuses because Snakemake would read a part
    of it as a path variable or a wildcard (the same rule:
    :func:`nonolab.study.snakemake_names.snakemake_name_problems`), naming the file."""
    from nonolab.study.snakemake_names import snakemake_name_problems

    return [
        {
            "level": "file",
            "file": p["file"],
            "line": None,
            "id": p["id"],
            "reason": p["reason"],
            "action": "refused by nonolab run",
        }
        for p in snakemake_name_problems(study, preset, sources)
    ]


def clock_check(sources: list[Any]) -> list[dict[str, Any]]:
    """Return the problems of lines whose client time ``t`` disagrees with the server's receive
    time ``server_t`` beyond the bounds of :mod:`nonolab.study.clocks`, over the log files read
    (``sources``: :func:`nonolab.study.presets.log_sources`; files the preset excludes are not
    checked)."""
    from nonolab.study.clocks import clock_problems

    out: list[dict[str, Any]] = []
    for s in sources:
        if s.read and s.participant_id is not None:
            out += clock_problems(s.path, s.rel, s.participant_id)
    return out


def puzzle_warnings(study: Path, preset: Any) -> list[dict[str, Any]]:
    """Return one warning per puzzle of the study's puzzle file that has more than one
    solution (or whose uniqueness the SAT check cannot settle): players could solve it
    otherwise than its stored solution, and the features compare boards with that solution.
    Each: ``level`` "puzzle", ``file``, ``line`` None, ``id`` (the puzzle id), ``reason``."""
    from nonolab.sat.puzzles import grid_to_strings, load_study_puzzles
    from nonolab.sat.solvers import uniqueness
    from nonolab.study.presets import study_file

    path = study_file(study, preset, "puzzle_file")
    out = []
    for p in load_study_puzzles(path):
        u = uniqueness(p)
        if u.status == "unique":
            continue
        if u.status == "multiple":
            other = u.second_grid if u.grid == p.solution else u.grid  # not the stored one
            second = "/".join(grid_to_strings(other or ()))
            why = f"has more than one solution (another: {second}); ratings and features may not mean the same puzzle"
        else:
            why = f"uniqueness not settled by the SAT check ({u.status})"
        out.append(
            {
                "level": "puzzle",
                "file": preset.puzzle_file,
                "line": None,
                "id": p.label,
                "reason": why,
            }
        )
    return out


def glob_warnings(study: Path, preset: Any) -> list[dict[str, Any]]:
    """Return one warning per log glob of the preset that is absolute (globs are relative to
    the study folder: it matches nothing there) or reads nothing: no glob matches a file in the
    folder it starts from (a misspelt folder; the default preset's ``*.json`` beside a folder of
    ``*.ndjson`` logs is not reported)."""
    from nonolab.study.presets import _find_logs, _glob_root

    globs = list(preset.get("log_globs", []))
    found = _find_logs(study, globs)[0]
    out = []
    for glob in globs:
        root = _glob_root(study, glob).relative_to(study).as_posix()
        inside = [rel for rel in found if root == "." or rel.startswith(root + "/")]
        if glob.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", glob):
            why = f"log glob {glob!r} is absolute; globs are relative to the study folder"
        elif not inside:
            why = f"log glob {glob!r} matches no file under the study folder"
        else:
            continue
        out.append(
            {"level": "preset", "file": str(preset.path), "line": None, "id": glob, "reason": why}
        )
    return out


def _row_text(rec: dict[str, Any]) -> str:
    where = rec["file"] if rec["line"] is None else f"{rec['file']}:{rec['line']}"
    tail = f" [{rec['known']}]" if "known" in rec else ""
    return f"  {rec['level']:<11} {where}  {rec['id']}: {rec['reason']} ({rec['action']}){tail}"


def _warning_text(rec: dict[str, Any]) -> str:
    return f"  {rec['level']:<11} {rec['file']}  {rec['id']}: {rec['reason']}"


def format_report(report: dict[str, Any]) -> str:
    """Return the text form of a :func:`validate_study` report."""
    s = report["summary"]
    out = [f"study {report['study']} (preset {report['preset']})"]
    if report.get("preset_reason"):
        out.append(f"preset {report['preset']}: {report['preset_reason']}")
    out.append(f"problems: {len(report['problems']) or 'none'}")
    out += [_row_text(r) for r in report["problems"]]
    warnings = report.get("warnings", [])
    out.append(f"warnings: {len(warnings) or 'none'}")
    out += [_warning_text(w) for w in warnings]
    out.append(f"known exclusions and notes: {len(report['known']) or 'none'}")
    out += [_row_text(r) for r in report["known"]]
    ignored = f" + {s['lines_ignored']} ignored" if s["lines_ignored"] else ""
    out.append(
        f"summary: {s['log_files']} log files ({s['files_excluded']} excluded), "
        f"{s['participants']} participants ({s['participants_excluded']} excluded), "
        f"{s['attempts']} attempts; {s['lines_read']} lines read = {s['lines_used']} used + "
        f"{s['lines_excluded']} excluded{ignored}"
    )
    out.append(
        "usable: yes" if report["usable"] else "usable: no (fix or exclude the problems above)"
    )
    return "\n".join(out)


def _validate(args: argparse.Namespace) -> int:
    report = validate_study(args.study, args.preset)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0 if report["usable"] else 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``validate`` to the CLI."""
    p = sub.add_parser(
        "validate",
        help="check a study folder: every problem the ingest finds, without writing tables",
        description="Read a study folder as `nonolab ingest` does, in memory, and list every "
        "problem (ledger rows: level, file:line, id, reason, action) apart from the exclusions "
        "its preset declares and the platform's -1 rating of a skipped puzzle, then a summary "
        "(participants, attempts, lines read = used + excluded).",
        epilog="exit status: 0 the study is usable (only known exclusions); 1 there are "
        "problems; 2 the study cannot be read (the message names the file), or a usage error",
    )
    p.add_argument("study", help="study folder (public-study layout)")
    p.add_argument("--preset", default="auto", help="preset name or file (default: auto)")
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.set_defaults(func=_validate)
