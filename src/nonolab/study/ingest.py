"""Ingest a study folder into tidy, schema-validated tables and an exclusion ledger.

:func:`ingest_study` reads every line of every log file the preset's globs match (see
:mod:`nonolab.study.presets`), parses it with :mod:`nonolab.study.logs`, and returns the tables

* ``events``: one row per used event (a drag is expanded to one row per cell of its rectangle,
  all rows sharing ``drag_id`` = the drag's line number), with ``phase`` (``pre``, ``puzzle``,
  ``post``), attempt ``order``, ``puzzle_id`` label, ``puzzle_hash``, ``t`` (UTC) and ``t_s``
  (seconds from session start);
* ``attempts`` (participant x puzzle), ``participants`` (pre-survey answers and the six
  expertise items), ``ratings`` (initial and final 1-5, guessing answers), ``survey_texts``,
  ``puzzles`` (label, hash, size, clues and solution as JSON);
* ``ledger``: one row per file, participant, attempt or line that is not used as is
  (``level``, ``source`` = ``file:line``, ``id``, ``reason``, ``action`` = ``excluded`` or
  ``kept``);
* ``summary``: counts, with the identity ``events_read = events_used + events_excluded +
  events_ignored``.

Attempt windows follow the published analysis: events are ordered by time (stable), attempt
``k`` is ``[t(survey before it), t(survey puzzle_k))`` where the survey before attempt 1 is the
pre-survey; survey events belong to the attempt they rate.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from nonolab.core.hashing import file_sha256
from nonolab.core.strict import lookalikes
from nonolab.core.tables import atomic_folder, write_json, write_parquet_table, write_table
from nonolab.sat.puzzles import Puzzle, load_study_puzzles
from nonolab.study.board import Board
from nonolab.study.codebook import coded_themes_ledger, session_ratings
from nonolab.study.logs import (
    EVENT_SPECS,
    IGNORED_TYPES,
    INT64_MAX,
    INT64_MIN,
    Event,
    LogFileError,
    LogLineError,
    UnknownEventType,
    read_log_file,
)
from nonolab.study.presets import (
    OUTSIDE_LINKS,
    LogSource,
    Preset,
    StudyError,
    log_sources,
    study_file,
)
from nonolab.study.schemas import coerce_table, validate_table
from nonolab.study.schemas import columns as _columns

FREQUENCY_ORDER = {"never": 0, "few": 1, "many": 2, "regular": 3}
EXPERTISE_ITEMS = (
    "skill_nonogram",
    "skill_puzzles",
    "played_before_ord",
    "puzzle_played_frequency_ord",
    "n_nonogram_sizes",
    "n_logic_puzzles",
)
TEXT_KEYS = ("rating_reason", "strategy", "comments")
TABLES = ("events", "attempts", "participants", "ratings", "survey_texts", "puzzles", "ledger")
HUMAN_TABLES = ("attempts", "participants", "ratings", "ledger")

#: the default largest gap (s) between consecutive interactions of one attempt (preset key
#: ``max_gap_s``); a longer one is a clock jump or an abandoned attempt
DEFAULT_MAX_GAP_S = 3600.0


@dataclass
class IngestResult:
    """All ingest tables (DataFrames, keyed by name) and the summary dict."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]
    inputs: list[Path] = field(default_factory=list)


@dataclass
class _Ledger:
    rows: list[dict[str, str]] = field(default_factory=list)

    def add(self, level: str, source: str, id_: str, reason: str, action: str = "excluded"):
        self.rows.append(
            {"level": level, "source": source, "id": id_, "reason": reason, "action": action}
        )


def puzzles_table(puzzles: list[Puzzle]) -> pd.DataFrame:
    """Return one row per puzzle: label, hash, height, width, clues and solution as JSON."""
    rows = []
    for p in puzzles:
        if p.solution is None:
            raise StudyError(f"puzzle id {p.label}: no solution given; features need it")
        rows.append(
            {
                "puzzle_id": str(p.label),
                "puzzle_hash": p.hash,
                "height": p.height,
                "width": p.width,
                "n_filled": int(sum(map(sum, p.solution))),
                "clues_json": json.dumps(p.clues_dict(), separators=(",", ":")),
                "solution_json": json.dumps([list(r) for r in p.solution], separators=(",", ":")),
            }
        )
    return pd.DataFrame(rows)


def expertise_items(answers: dict[str, Any]) -> dict[str, Any]:
    """Return the six expertise items of a pre-survey ``answers`` dict (None when absent).

    Skills are the 1-10 answers; frequencies map never/few/many/regular to 0-3; the counts are
    the number of options ticked (an ``N/A`` tick counts, as in the published table).
    """

    def skill(v: Any) -> int | None:
        raw = _raw_rating(v)
        return raw if raw is not None and 1 <= raw <= 10 else None

    def ordinal(v: Any) -> int | None:
        return FREQUENCY_ORDER.get(str(v).lower()) if v is not None else None

    def count(v: Any) -> int | None:
        return len(v) if isinstance(v, list) else None

    return {
        "skill_nonogram": skill(answers.get("skill_nonogram")),
        "skill_puzzles": skill(answers.get("skill_puzzles")),
        "played_before_ord": ordinal(answers.get("played_before")),
        "puzzle_played_frequency_ord": ordinal(answers.get("puzzle_played_frequency")),
        "n_nonogram_sizes": count(answers.get("nonogram_size_experience")),
        "n_logic_puzzles": count(answers.get("logic_experience")),
    }


def _rating(v: Any) -> int | None:
    raw = _raw_rating(v)
    return raw if raw is not None and 1 <= raw <= 5 else None


def _raw_rating(v: Any) -> int | None:
    """Return the logged rating as an int when it is a whole number a table column can hold
    (64-bit), else None (the ledger row about it keeps the logged value)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        whole = float(v).is_integer()
    except OverflowError:  # an int too large for a float
        return None
    return int(v) if whole and INT64_MIN <= v <= INT64_MAX else None


def _drag_cells(f: dict[str, Any]) -> list[tuple[int, int]]:
    (r0, c0), (r1, c1) = f["normalized_start"], f["normalized_end"]
    return [
        (r, c)
        for r in range(min(r0, r1), max(r0, r1) + 1)
        for c in range(min(c0, c1), max(c0, c1) + 1)
    ]


def _drag_problem(f: dict[str, Any], h: int, w: int) -> str | None:
    (r0, c0), (r1, c1) = f["normalized_start"], f["normalized_end"]
    if max(r0, r1) >= h or max(c0, c1) >= w:
        return f"drag rectangle ({r0},{c0})-({r1},{c1}) lies outside the {h}x{w} grid"
    if r0 > r1 or c0 > c1:
        return f"drag normalized_start ({r0},{c0}) is after normalized_end ({r1},{c1})"
    if "start" in f and "end" in f:
        (sr, sc), (er, ec) = f["start"], f["end"]
        if (min(sr, er), min(sc, ec), max(sr, er), max(sc, ec)) != (r0, c0, r1, c1):
            return "drag start/end do not span the normalized rectangle"
    n = (r1 - r0 + 1) * (c1 - c0 + 1)
    if f["changed_cells"] != n:
        return f"drag changed_cells={f['changed_cells']} but its rectangle has {n} cells"
    return None


def _first(events: list[Event], typ: str, **match: Any) -> Event | None:
    for e in events:
        if e.type == typ and all(e.fields.get(k) == v for k, v in match.items()):
            return e
    return None


def ingest_study(study_dir: str | Path, preset: Preset) -> IngestResult:
    """Return every ingest table and the summary for the study at ``study_dir``.

    Raises :class:`~nonolab.study.StudyError` for an unusable study (no log files, missing
    puzzle file, duplicated participant ids) and :class:`~nonolab.sat.puzzles.PuzzleError` for a
    puzzle file that cannot be used (clues that contradict its solutions, a solution cell other
    than 0/1, a clue that is not a finite whole number, not JSON). Everything else that cannot
    be used is a ledger row: a file that is not read, a copy of another file's session
    (:func:`duplicate_sessions`), a participant, attempt or line.
    """
    # Millions of small row objects and no reference cycles: the cyclic garbage collector
    # would rescan them over and over (quadratic in the study size), so it is paused here.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _ingest_study(study_dir, preset)
    finally:
        if enabled:
            gc.enable()


def _ingest_study(study_dir: str | Path, preset: Preset) -> IngestResult:
    study_dir = Path(study_dir)
    puzzle_path = study_file(study_dir, preset, "puzzle_file")
    if not puzzle_path.is_file():
        raise StudyError(f"puzzle file {puzzle_path} does not exist (preset {preset.name})")
    puzzles = load_study_puzzles(puzzle_path)
    if not puzzles:
        raise StudyError(
            f"puzzle file {puzzle_path} holds no puzzles: no session can be read (preset "
            f"{preset.name})"
        )
    ptab = puzzles_table(puzzles)
    by_label = {p.label: p for p in puzzles}
    sources = log_sources(study_dir, preset)
    if sources and not any(s.read for s in sources):
        listed = "; ".join(f"{s.rel} ({s.reason})" for s in sources[:5])
        raise StudyError(
            f"no log file under {study_dir} is read with the preset {preset.name} globs "
            f"{preset.get('log_globs')}: {listed}"
        )
    if not sources:
        raise StudyError(
            f"no log files under {study_dir} match the preset {preset.name} globs "
            f"{preset.get('log_globs')}"
        )
    sizes = preset.session_sizes
    ledger = _Ledger()
    _lookalike_participants(sources, ledger)
    counts: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    ignored: Counter[str] = Counter()
    ev_cols: dict[str, list[Any]] = {c: [] for c in _columns("events")}
    att_rows: list[dict[str, Any]] = []
    part_rows: list[dict[str, Any]] = []
    rating_rows: list[dict[str, Any]] = []
    text_rows: list[dict[str, Any]] = []
    inputs = [puzzle_path]

    hash_of = {label: p.hash for label, p in by_label.items()}
    outs = list(
        _read_sources(sources, by_label, hash_of, sizes, preset.max_gap_s, preset.puzzle_file)
    )
    copies = duplicate_sessions(sources, [o["digest"] for o in outs], preset)
    first_with_start: dict[Any, str] = {}
    for src, out in zip(sources, outs, strict=True):
        if not out.get("not_read"):
            inputs.append(src.path)
        counts["log_files"] += 1
        counts["events_read"] += out["n_lines"]
        by_type.update(out["by_type"])
        if src.rel in copies:
            why = f"duplicate of {copies[src.rel]} (the same session: identical event lines)"
            ledger.add("file", src.rel, src.participant_id or src.path.stem, why)
            counts["events_excluded"] += out["n_lines"]
            counts["files_excluded"] += 1
            continue
        ledger.rows += [_name_puzzle_file(r, preset.puzzle_file) for r in out["ledger"]]
        key = out.get("start_key")
        if key is not None and src.participant_id is not None:
            if key in first_with_start:
                why = (
                    f"same session start ({key[0]}, queue {list(key[1])}) as "
                    f"{first_with_start[key]} but other content (a partial copy?): both used; "
                    "exclude one in the preset if they are one session"
                )
                ledger.add("file", src.rel, src.participant_id, why, "kept")
            else:
                first_with_start[key] = src.rel
        if src.participant_id is None or out.get("not_read"):
            counts["events_excluded"] += out["n_lines"]
            counts["files_excluded"] += 1
            continue
        counts["events_excluded"] += out["n_errors"]
        res = out["res"]
        if res is None:
            counts["events_excluded"] += out["n_events"]
            counts["participants_excluded"] += 1
            continue
        counts["events_excluded"] += res["n_excluded"]
        for typ, n in res["ignored"].items():
            ignored[typ] += n
        counts["events_used"] += res["n_used"]
        for c, vals in res["events"].items():
            ev_cols[c] += vals
        att_rows += res["attempts"]
        part_rows.append(res["participant"])
        rating_rows += res["ratings"]
        text_rows += res["texts"]

    pids = {r["participant_id"] for r in part_rows}
    # participant -> (response kind, puzzle) of each logged free-text answer
    log_reasons: dict[str, set[tuple[str, str]]] = {}
    for r in text_rows:
        puzzle = str(r["puzzle_id"]) if r["question"] == "rating_reason" else ""
        log_reasons.setdefault(r["participant_id"], set()).add((r["question"], puzzle))
    theme_rows, coded = coded_themes_ledger(
        study_dir,
        preset.get("themes") or {},
        pids,
        session_ratings(rating_rows),
        bool(preset.get(OUTSIDE_LINKS, False)),
        log_reasons,
    )
    if coded is not None:
        inputs.append(coded)
        ledger.rows += theme_rows
    tables = {
        "events": _events_frame_from_columns(ev_cols),
        "attempts": pd.DataFrame(att_rows, columns=_columns("attempts")),
        "participants": pd.DataFrame(part_rows, columns=_columns("participants")),
        "ratings": pd.DataFrame(rating_rows, columns=_columns("ratings")),
        "survey_texts": pd.DataFrame(text_rows, columns=_columns("survey_texts")),
        "puzzles": ptab,
        "ledger": pd.DataFrame(ledger.rows, columns=_columns("ledger")),
    }
    tables = {k: coerce_table(v, k) for k, v in tables.items()}
    for name, df in tables.items():
        validate_table(df, name)
    summary = _summary(preset.name, counts, ignored, by_type, tables)
    return IngestResult(tables, summary, inputs)


def _lookalike_participants(sources: list[LogSource], ledger: _Ledger) -> None:
    """Ledger (kept) each used log file whose participant id differs from an earlier one's
    only in letter case or looks like it (the same confusable skeleton:
    :func:`nonolab.core.strict.lookalikes`): two participants, which a reader may take for
    one. (Ids equal in Unicode normal form C are one id:
    :func:`~nonolab.study.presets.log_sources` refuses them.)"""
    used = [s for s in sources if s.participant_id is not None]
    by_id = {s.participant_id: s for s in used}
    for first, second, kind in lookalikes([s.participant_id for s in used]):
        src = by_id[second]
        if kind == "confusable":
            how = (
                f"looks like {first!r} ({by_id[first].rel}): the same Unicode confusable "
                f"skeleton ({_confusable_detail(first, second)})"
            )
        else:
            how = f"differs from {first!r} ({by_id[first].rel}) only in letter case"
        why = (
            f"participant id {second!r} {how}: two participants; exclude one in the preset if "
            "they are one person"
        )
        ledger.add("file", src.rel, second, why, "kept")


def _confusable_detail(first: str, second: str) -> str:
    """Return what makes two confusable ids differ: their invisible characters and scripts."""
    from nonolab.core.confusables import invisible_characters, scripts

    parts = []
    for ident in (first, second):
        hidden = invisible_characters(ident)
        what = ", ".join(sorted(scripts(ident))) or "no letters"
        parts.append(f"{ident!r}: {what}" + (f"; invisible {', '.join(hidden)}" if hidden else ""))
    return " vs ".join(parts)


def _name_puzzle_file(row: dict[str, str], puzzle_file: str) -> dict[str, str]:
    """Return ledger ``row`` with "the puzzle file" in its reason followed by the file's path
    (relative to the study), so that a problem caused by an edit of the puzzle file names it."""
    reason = row["reason"]
    if reason.endswith("not in the puzzle file"):
        return row | {"reason": f"{reason} {puzzle_file}"}
    return row


def _summary(
    preset_name: str,
    counts: Counter[str],
    ignored: Counter[str],
    by_type: Counter[str],
    tables: dict[str, pd.DataFrame],
) -> dict[str, Any]:
    """Return the ingest summary: file, participant, attempt and rating counts, and the event
    accounting (lines read = used + excluded + ignored). Raises ``AssertionError`` if the
    accounting does not add up."""
    att, rat = tables["attempts"], tables["ratings"]
    n_ignored = sum(ignored.values())
    summary = {
        "preset": preset_name,
        "log_files": counts["log_files"],
        "files_excluded": counts["files_excluded"],
        "participants": int(len(tables["participants"])),
        "participants_excluded": counts["participants_excluded"],
        "attempts": int(len(att)),
        "final_ratings": int(rat["final_difficulty"].notna().sum()),
        "initial_ratings": int(rat["initial_difficulty"].notna().sum()),
        "solve_times": int(
            (att["first_solved_check_t"].notna() | (att["n_interactions"] >= 2)).sum()
        ),
        "solved": int(att["solved"].fillna(False).astype(bool).sum()) if len(att) else 0,
        "attempts_per_puzzle": {
            str(k): int(v) for k, v in att.groupby("puzzle_id").size().sort_index().items()
        },
        "events_read": counts["events_read"],
        "events_used": counts["events_used"],
        "events_excluded": counts["events_excluded"],
        "events_ignored": n_ignored,
        "events_ignored_by_type": dict(sorted(ignored.items())),
        "events_by_type": dict(sorted(by_type.items())),  # lines read, by type
        "event_rows": int(len(tables["events"])),
        "ledger_rows": int(len(tables["ledger"])),
        "ledger_by_level": {
            f"{lv}/{ac}": int(n)
            for (lv, ac), n in tables["ledger"].groupby(["level", "action"]).size().items()
        },
    }
    summary["identity_ok"] = summary["events_read"] == (
        summary["events_used"] + summary["events_excluded"] + summary["events_ignored"]
    )
    if not summary["identity_ok"]:
        raise AssertionError(f"event accounting does not add up: {summary}")
    return summary


def session_digest(events: list[Event]) -> str | None:
    """Return the hex sha256 of a log's event lines (each as parsed: without its line end,
    surrounding white space or byte-order mark) in file order, or None for a log without
    events. Blank and unparsable lines do not count. Two files with the same digest hold the
    same session, whatever their names and line ends."""
    if not events:
        return None
    text = "\n".join(e.raw for e in events)
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def duplicate_sessions(
    sources: list[LogSource], digests: list[str | None], preset: Preset
) -> dict[str, str]:
    """Return ``{copy: kept file}`` (relative paths) for log files that hold the same session
    as another used file (equal :func:`session_digest`).

    Of each group one file is kept: a file the preset maps explicitly, else the shortest file
    name (``Bing-p1.ndjson`` rather than ``Bing-p1 (1).ndjson`` or ``Copy-of-Bing-p1.ndjson``),
    else the first by path. Files the preset excludes are not compared.
    """
    mapped = {row["file"] for row in preset.get("participants", {}).get("files", [])}
    groups: dict[str, list[LogSource]] = {}
    for src, digest in zip(sources, digests, strict=True):
        if digest is not None and src.participant_id is not None:
            groups.setdefault(digest, []).append(src)
    out: dict[str, str] = {}
    for group in groups.values():
        if len(group) < 2:
            continue
        keep = min(group, key=lambda s: (s.rel not in mapped, len(s.path.name), s.rel))
        out |= {s.rel: keep.rel for s in group if s is not keep}
    return out


#: Studies with at least this many log files are read by a pool of worker processes (one per
#: available CPU, at most 8, or ``NONOLAB_INGEST_WORKERS``; 1 = no pool), each file
#: independently; smaller ones in this process.
PARALLEL_MIN_FILES = 200
#: files a worker process reads per task
PARALLEL_CHUNK = 32


def _read_source(
    src: Any,
    by_label: dict[str | None, Puzzle],
    hash_of: dict[str, str],
    sizes: frozenset[int],
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    puzzle_file: str = "the puzzle file",
) -> dict[str, Any]:
    """Read and ingest one log file: line counts, types read, its ledger rows (in order) and
    the participant's rows (``res``, None when the participant or file is excluded);
    ``not_read`` says why a file was not read (not a readable log: no lines counted)."""
    if not src.read:
        return _not_read(src, src.reason or "not read")
    try:
        events, errors, n_lines, note = read_log_file(str(src.path), src.rel)
    except OSError as exc:  # unreadable (permissions, a folder, an I/O error)
        return _not_read(src, f"not read: {type(exc).__name__}: {exc.strerror or exc}")
    except LogFileError as exc:  # compressed, or text that does not decode
        return _not_read(src, exc.reason)
    by_type: Counter[str] = Counter(e.type for e in events)
    for err in errors:
        by_type["(unknown)" if isinstance(err, UnknownEventType) else "(unparsable)"] += 1
    ledger = _Ledger()
    start = _first(events, "session_start_three")
    out = {
        "digest": session_digest(events) if src.participant_id is not None else None,
        "start_key": (start.t.isoformat(), tuple(start.fields["queue"])) if start else None,
        "n_lines": n_lines,
        "n_events": len(events),
        "n_errors": len(errors),
        "by_type": by_type,
        "ledger": ledger.rows,
        "res": None,
    }
    if src.participant_id is None:
        ledger.add("file", src.rel, src.path.stem, src.reason or "excluded by preset")
        return out
    pid = src.participant_id
    if note is not None:  # another encoding or old Mac line ends: read, one row for the file
        ledger.add("file", src.rel, pid, note, "kept")
    for err in errors:
        ledger.add("line", err.source, pid, err.reason)
    for e in events:
        if e.note is not None:
            ledger.add("line", f"{src.rel}:{e.line_no}", pid, e.note, "kept")
    out["res"] = _ingest_participant(
        src.rel, pid, events, by_label, sizes, ledger, hash_of, max_gap_s, puzzle_file
    )
    return out


def _not_read(src: LogSource, reason: str) -> dict[str, Any]:
    """Return the :func:`_read_source` result of a file that is not read: no lines, one
    file-level ledger row with ``reason``."""
    ledger = _Ledger()
    ledger.add("file", src.rel, src.participant_id or Path(src.rel).stem, reason)
    return {
        "digest": None,
        "n_lines": 0,
        "n_events": 0,
        "n_errors": 0,
        "by_type": Counter(),
        "ledger": ledger.rows,
        "res": None,
        "not_read": reason,
    }


def _read_sources(
    sources: list[Any],
    by_label: dict[str | None, Puzzle],
    hash_of: dict[str, str],
    sizes: frozenset[int],
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    puzzle_file: str = "the puzzle file",
) -> Iterator[dict[str, Any]]:
    """Yield :func:`_read_source` of every source, in order (in parallel for many files)."""
    work = partial(
        _read_source,
        by_label=by_label,
        hash_of=hash_of,
        sizes=sizes,
        max_gap_s=max_gap_s,
        puzzle_file=puzzle_file,
    )
    n_cpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n_workers = int(os.environ.get("NONOLAB_INGEST_WORKERS") or min(n_cpu or 1, 8))
    if n_workers < 2 or len(sources) < PARALLEL_MIN_FILES:
        yield from map(work, sources)
        return
    from nonolab.core.workers import Workers

    chunks = [sources[i : i + PARALLEL_CHUNK] for i in range(0, len(sources), PARALLEL_CHUNK)]
    # fork: a worker starts with the parent's imports and tables (spawn cost ~0.8 s of 6.6 s
    # on a 1,000-participant study); ingest runs no threads of its own
    with Workers(n_workers, partial(_read_chunk, work), start_method="fork") as workers:
        for outs in workers.imap(chunks):
            yield from outs


def _read_chunk(work: Callable[[Any], dict[str, Any]], sources: list[Any]) -> list[dict[str, Any]]:
    """Return ``[work(s) for s in sources]`` (one task of a worker process)."""
    return [work(s) for s in sources]


@dataclass
class _Session:
    """One participant's session while it is ingested: where it comes from, its puzzle queue
    and survey bounds, and the ledger its problems go to."""

    rel: str
    pid: str
    ledger: _Ledger
    puzzles: dict[str | None, Puzzle]
    queue: list[str]
    start: Event
    surveys: dict[str, Event]
    bounds: list[Any]
    hashes: dict[str, str]
    excluded: set[int]

    def note(self, level: str, e: Event | None, reason: str, action: str = "excluded") -> None:
        """Add a ledger row about line ``e`` (or the whole file when None)."""
        where = f"{self.rel}:{e.line_no}" if e is not None else self.rel
        self.ledger.add(level, where, self.pid, reason, action)

    def exclude(self, e: Event, reason: str) -> None:
        """Ledger line ``e`` as excluded and leave it out of the events."""
        self.note("line", e, reason)
        self.excluded.add(e.line_no)


def _ingest_participant(
    rel: str,
    pid: str,
    events: list[Event],
    puzzles: dict[str | None, Puzzle],
    sizes: frozenset[int],
    ledger: _Ledger,
    hash_of: dict[str, str] | None = None,
    max_gap_s: float = DEFAULT_MAX_GAP_S,
    puzzle_file: str = "the puzzle file",
) -> dict[str, Any] | None:
    """Return the rows of one participant's session, or None (participant ledgered).

    The rows: ``events`` (column lists of the events table), ``attempts``, ``ratings``,
    ``texts``, ``participant`` (one row), ``n_used`` and ``n_excluded`` (log lines) and
    ``ignored`` (lines of ignored types, by type).
    """
    events = _time_ordered(events, rel, pid, ledger)
    excluded = _duplicate_lines(events, rel, pid, ledger)
    _second_session(events, excluded, rel, pid, ledger)
    start = _session_start(events, rel, pid, puzzles, sizes, ledger, puzzle_file)
    if start is None:
        return None
    queue = [str(q) for q in start.fields["queue"]]
    n_per = len(queue)
    surveys = _session_surveys(events, excluded, rel, pid, n_per, ledger)
    if surveys is None:
        return None
    bounds = [surveys[s].t for s in ("pre", *(f"puzzle_{k}" for k in range(1, n_per + 1)))]
    if any(b1 < b0 for b0, b1 in zip(bounds, bounds[1:], strict=False)):
        ledger.add("participant", rel, pid, "survey times are not in order pre < puzzle_1 < ...")
        return None
    if "post" not in surveys:
        ledger.add("participant", rel, pid, "no post-survey: final ratings missing", "kept")
    if not any(e.type in COMPLETION_EVENTS for e in events):
        why = "no completion event: the platform's solved and skipped flags are missing"
        ledger.add("participant", rel, pid, why, "kept")
    hashes = {q: hash_of[q] if hash_of else puzzles[q].hash for q in queue}
    sess = _Session(rel, pid, ledger, puzzles, queue, start, surveys, bounds, hashes, excluded)
    completion = _completion_event(events, sess)
    dropped = _clock_jumps(events, sess, max_gap_s)
    _session_gaps(events, sess, max_gap_s, dropped)
    rows, n_used, ignored = _event_rows(sess, events)
    attempts = _attempt_rows(sess, completion, rows)
    ratings = _rating_rows(sess)
    texts = _text_rows(sess)
    if dropped:
        attempts = [r for r in attempts if r["order"] not in dropped]
        ratings = [r for r in ratings if r["order"] not in dropped]
        texts = [r for r in texts if r["order"] not in dropped]
    return {
        "events": {c: [r.get(c) for r in rows] for c in _columns("events")},
        "attempts": attempts,
        "ratings": ratings,
        "texts": texts,
        "participant": _participant_row(sess),
        "n_used": n_used,
        "n_excluded": len(excluded),
        "ignored": ignored,
    }


def _time_ordered(events: list[Event], rel: str, pid: str, ledger: _Ledger) -> list[Event]:
    """Return the events in stable time order, as the published analysis ordered them; a line
    whose time is earlier than a previous line's is ledgered (kept)."""
    prev = None
    for e in events:
        if prev is not None and e.t < prev and e.type != "session_end":
            ledger.add(
                "line",
                f"{rel}:{e.line_no}",
                pid,
                f"{e.type} time is earlier than the previous line; events are ordered by time",
                "kept",
            )
        prev = e.t if prev is None else max(prev, e.t)
    return sorted(events, key=lambda e: e.t)


def _duplicate_lines(events: list[Event], rel: str, pid: str, ledger: _Ledger) -> set[int]:
    """Return the line numbers of exact repeats of an earlier line (ledgered, excluded)."""
    excluded: set[int] = set()
    seen: dict[str, int] = {}
    for e in events:
        if e.raw in seen:
            ledger.add("line", f"{rel}:{e.line_no}", pid, f"duplicate of line {seen[e.raw]}")
            excluded.add(e.line_no)
        else:
            seen[e.raw] = e.line_no
    return excluded


def _sizes_text(sizes: frozenset[int]) -> str:
    """Return the allowed session sizes as text: ``3``, ``2, 3 or 4``."""
    s = sorted(sizes)
    return str(s[0]) if len(s) == 1 else ", ".join(map(str, s[:-1])) + f" or {s[-1]}"


def _second_session(
    events: list[Event], excluded: set[int], rel: str, pid: str, ledger: _Ledger
) -> None:
    """Exclude a second session logged in the same file: every line from the second
    ``session_start_three`` on (in time order) is added to ``excluded``, with one ledger row
    naming both starts; the first session is used as if the file ended there."""
    starts = [e for e in events if e.type == "session_start_three" and e.line_no not in excluded]
    if len(starts) < 2:
        return
    cut = events.index(starts[1])
    later = [e.line_no for e in events[cut:] if e.line_no not in excluded]
    excluded.update(later)
    why = (
        f"second session start (the first is line {starts[0].line_no}): a second session in one "
        f"log; it and the {len(later) - 1} lines after it are excluded, the first session is used"
    )
    ledger.add("line", f"{rel}:{starts[1].line_no}", pid, why)


def _clock_jumps(events: list[Event], sess: _Session, max_gap_s: float) -> set[int]:
    """Return the orders of the attempts excluded for a gap longer than ``max_gap_s`` seconds
    between two consecutive interaction lines of the attempt (a clock jump, or an attempt left
    for hours). Each is one attempt-level ledger row (file:line of the line after the gap);
    every line of the attempt is added to ``sess.excluded`` and its attempt, rating and text
    rows are left out; the participant's other attempts are used."""
    last: dict[int, Event] = {}
    dropped: set[int] = set()
    for e in events:
        if e.line_no in sess.excluded or e.role not in ("interaction", "marker"):
            continue
        phase, order = _event_phase(e, sess.bounds)
        if phase != "puzzle" or order is None or order in dropped:
            continue
        prev = last.get(order)
        last[order] = e
        if prev is None:
            continue
        gap = (e.t - prev.t).total_seconds()
        if gap > max_gap_s:
            dropped.add(order)
            sess.ledger.add(
                "attempt",
                f"{sess.rel}:{e.line_no}",
                f"{sess.pid}/{order}",
                f"{gap:.0f} s between line {prev.line_no} and this line inside attempt {order} "
                f"(more than max_gap_s = {max_gap_s:g} s: a clock jump or an abandoned "
                "attempt): the attempt is excluded",
            )
    if dropped:
        for e in events:
            if _event_phase(e, sess.bounds)[1] in dropped:
                sess.excluded.add(e.line_no)
    return dropped


def _session_gaps(events: list[Event], sess: _Session, max_gap_s: float, dropped: set[int]) -> None:
    """Ledger (kept) every gap longer than ``max_gap_s`` seconds between two consecutive used
    lines of the session that is not inside one attempt (between attempts, or around a
    survey): a clock jump or a long break there moves no per-attempt measure, but it moves the
    session's absolute times, so it leaves a row naming the line after the gap."""
    prev: Event | None = None
    for e in events:
        if e.line_no in sess.excluded:
            continue
        if prev is not None:
            gap = (e.t - prev.t).total_seconds()
            phase_a, order_a = _event_phase(prev, sess.bounds)
            phase_b, order_b = _event_phase(e, sess.bounds)
            inside = phase_a == phase_b == "puzzle" and order_a == order_b is not None
            if gap > max_gap_s and not (inside and order_a not in dropped):
                sess.ledger.add(
                    "line",
                    f"{sess.rel}:{e.line_no}",
                    sess.pid,
                    f"{gap:.0f} s between line {prev.line_no} and this line, outside any one "
                    f"attempt (more than max_gap_s = {max_gap_s:g} s: a clock jump or a long "
                    "break); per-attempt measures are unaffected",
                    "kept",
                )
        prev = e


def _session_start(
    events: list[Event],
    rel: str,
    pid: str,
    puzzles: dict[str | None, Puzzle],
    sizes: frozenset[int],
    ledger: _Ledger,
    puzzle_file: str = "the puzzle file",
) -> Event | None:
    """Return the session's ``session_start_three`` event, or None (participant ledgered) when
    there is none or its puzzle queue does not fit the preset and the puzzle file (named
    ``puzzle_file``, its path in the study)."""
    ss = _first(events, "session_start_three")
    if ss is None:
        ledger.add("participant", rel, pid, "no session_start_three event with a puzzle queue")
        return None
    queue = [str(q) for q in ss.fields["queue"]]
    where = f"{rel}:{ss.line_no}"
    # puzzles the puzzle file does not hold name the cause (a log of another study, or another
    # puzzle file) before a count that differs from the preset's, which follows from it
    unknown = [q for q in queue if q not in puzzles]
    if unknown:
        held = sorted((k for k in puzzles if k is not None), key=lambda k: (len(k), k))
        shown = ", ".join(held[:12]) + (", ..." if len(held) > 12 else "")
        why = (
            f"puzzle id(s) {unknown} of the session queue {queue} are not in the puzzle file "
            f"{puzzle_file} (it holds {shown or 'no puzzle'}): a log of another study, or of "
            "another puzzle file?"
        )
        if len(queue) not in sizes:
            why += f" The session also serves {len(queue)} puzzles, the preset expects "
            why += f"{_sizes_text(sizes)}."
        ledger.add("participant", where, pid, why)
        return None
    if len(queue) not in sizes:
        why = f"session serves {len(queue)} puzzles, the preset expects {_sizes_text(sizes)}"
        ledger.add("participant", where, pid, why)
        return None
    repeated = sorted({q for q in queue if queue.count(q) > 1}, key=queue.index)
    if repeated:
        why = (
            f"session queue {queue} names puzzle id(s) {repeated} more than once; its attempts "
            "cannot be told apart"
        )
        ledger.add("participant", where, pid, why)
        return None
    return ss


def _session_surveys(
    events: list[Event], excluded: set[int], rel: str, pid: str, n_per: int, ledger: _Ledger
) -> dict[str, Event] | None:
    """Return ``{survey_type: first survey_submit event}`` (a second one of a type is ledgered
    and added to ``excluded``), or None (participant ledgered) when the pre-survey or a puzzle
    survey is missing."""
    surveys: dict[str, Event] = {}
    for e in events:
        if e.type == "survey_submit" and e.line_no not in excluded:
            st = e.fields["survey_type"]
            if st in surveys:
                ledger.add(
                    "line", f"{rel}:{e.line_no}", pid, f"second {st} survey; the first is used"
                )
                excluded.add(e.line_no)
            else:
                surveys[st] = e
    needed = ["pre"] + [f"puzzle_{k}" for k in range(1, n_per + 1)]
    missing = [s for s in needed if s not in surveys]
    if missing:
        why = "no pre-survey" if missing == ["pre"] else f"incomplete surveys: missing {missing}"
        ledger.add("participant", rel, pid, why)
        return None
    return surveys


def _event_phase(e: Event, bounds: list[Any]) -> tuple[str, int | None]:
    """Return the event's ``(phase, attempt order)``: a survey belongs to the attempt it rates;
    other events fall into ``pre``, attempt ``k`` (``bounds[k - 1] <= t < bounds[k]``) or
    ``post``."""
    if e.type == "survey_submit":
        st = e.fields["survey_type"]
        if st.startswith("puzzle_"):
            return "puzzle", int(st[7:])
        return st, None
    if e.t < bounds[0]:
        return "pre", None
    if e.t >= bounds[-1]:
        return "post", None
    return "puzzle", bisect_right(bounds, e.t)


def _event_rows(
    sess: _Session, events: list[Event]
) -> tuple[list[dict[str, Any]], int, Counter[str]]:
    """Return the session's event rows (a drag gives one row per cell), the number of log lines
    used and the count of ignored lines by type. Each attempt's board is replayed
    (:class:`~nonolab.study.board.Board`) for the moves' and drag cells' previous values; lines
    that cannot be used are ledgered and added to ``sess.excluded``."""
    n_per = len(sess.queue)
    boards = {
        k: Board(sess.puzzles[q].height, sess.puzzles[q].width)
        for k, q in enumerate(sess.queue, start=1)
    }
    t0 = sess.start.t
    rows: list[dict[str, Any]] = []
    ignored: Counter[str] = Counter()
    n_used = 0
    for seq, e in enumerate(events):
        if e.line_no in sess.excluded:
            continue
        if e.role == "ignored":
            ignored[e.type] += 1
            continue
        phase, order = _event_phase(e, sess.bounds)
        if e.type == "survey_submit" and order is not None and order > n_per:
            sess.exclude(e, f"survey {e.fields['survey_type']} beyond the session")
            continue
        qid = sess.queue[order - 1] if order else None
        base = {
            "participant_id": sess.pid,
            "source_file": sess.rel,
            "line_no": e.line_no,
            "seq": seq,
            "phase": phase,
            "order": order,
            "puzzle_id": qid,
            "puzzle_hash": sess.hashes[qid] if qid else None,
            "t": e.t,
            "t_s": (e.t - t0).total_seconds(),
            "type": e.type,
            "role": e.role,
        }
        board = boards[order] if order else None
        if e.type == "drag":
            cells = _drag_rows(sess, e, qid, phase, board)
            if cells is None:
                continue
            n_used += 1
            rows += [base | cell for cell in cells]
            continue
        extra = _event_fields(sess, e, qid, phase, board)
        if extra is None:
            continue
        n_used += 1
        rows.append(base | extra)
    return rows, n_used, ignored


def _drag_rows(
    sess: _Session, e: Event, qid: str | None, phase: str, board: Board | None
) -> list[dict[str, Any]] | None:
    """Return the per-cell fields of a drag applied to ``board``, or None (line excluded) for a
    drag outside an attempt or with an inconsistent rectangle."""
    f = e.fields
    if qid is None or board is None:
        sess.exclude(e, f"drag outside a puzzle window ({phase})")
        return None
    puz = sess.puzzles[qid]
    problem = _drag_problem(f, puz.height, puz.width)
    if problem:
        sess.exclude(e, problem)
        return None
    cells = _drag_cells(f)
    return [
        {
            "r": r,
            "c": c,
            "value": new,
            "prev_value": old,
            "drag_id": e.line_no,
            "drag_mode": f["mode"],
            "drag_cells": len(cells),
        }
        for (r, c), (old, new) in zip(cells, board.drag(f["mode"], cells), strict=True)
    ]


def _event_fields(
    sess: _Session, e: Event, qid: str | None, phase: str, board: Board | None
) -> dict[str, Any] | None:
    """Return the type-specific fields of a non-drag event (applying moves, undos and resets to
    ``board``), or None (line excluded) for a move or hint that is outside an attempt or
    outside the grid. Puzzle ids the attempt or the puzzle file do not know are ledgered
    (kept)."""
    f = e.fields
    if e.type in ("move", "hint"):
        if qid is None or board is None:
            sess.exclude(e, f"{e.type} outside a puzzle window ({phase})")
            return None
        puz = sess.puzzles[qid]
        if f["r"] >= puz.height or f["c"] >= puz.width:
            sess.exclude(
                e, f"{e.type} cell ({f['r']},{f['c']}) outside the {puz.height}x{puz.width} grid"
            )
            return None
        if e.type == "hint":
            board.hint(f["r"], f["c"])
            return {"r": f["r"], "c": f["c"]}
        old = board.move(f["r"], f["c"], f["value"])
        return {"r": f["r"], "c": f["c"], "value": f["value"], "prev_value": old}
    if e.type == "undo" and board is not None:
        board.undo()
        return {"undo_label": f.get("label"), "diffs_len": f.get("diffs_len")}
    if e.type == "reset" and board is not None:
        board.reset()
        return {}
    if e.type == "check_bank":
        named = str(f["puzzle_id"])
        if qid is not None and named != qid:
            why = f"check_bank names puzzle {f['puzzle_id']} but the attempt is puzzle {qid}"
            sess.note("line", e, why, "kept")
        if named not in sess.puzzles:
            why = f"check_bank names puzzle id {f['puzzle_id']}, not in the puzzle file"
            sess.note("line", e, why, "kept")
        return {
            "solved": f["solved"],
            "n_mismatches": len(f["mismatches"]),
            "event_puzzle_id": named,
        }
    if e.type in ("skip_puzzle", "puzzle_advanced"):
        if str(f["puzzle_id"]) not in sess.puzzles:
            why = f"{e.type} names puzzle id {f['puzzle_id']}, not in the puzzle file"
            sess.note("line", e, why, "kept")
        return {"event_puzzle_id": str(f["puzzle_id"])}
    if e.type == "survey_submit":
        return {"survey_type": f["survey_type"]}
    if e.type == "session_start_three":
        return {"schedule_idx": f.get("schedule_idx")}
    return {}


# The events that close a session and carry the platform's solved/skipped flags.
COMPLETION_EVENTS = ("completed_all_three", "ended_without_full_completion")


def _completion_event(events: list[Event], sess: _Session) -> Event | None:
    """Return the session's completion event: the first (in time order) of
    :data:`COMPLETION_EVENTS` not excluded. A later one is ledgered and excluded (a session
    completes once; its flags would otherwise depend on which event is read)."""
    found = [e for e in events if e.type in COMPLETION_EVENTS and e.line_no not in sess.excluded]
    for e in found[1:]:
        sess.exclude(
            e,
            f"second completion event ({e.type}) in one session; the first "
            f"({found[0].type}, line {found[0].line_no}) is used",
        )
    return found[0] if found else None


def _completion_flags(end_ev: Event | None, n: int) -> list[tuple[bool | None, bool | None]]:
    """Return the platform's ``(solved, skipped)`` flags of attempts 1..``n`` from the
    session's completion event (``completed_all_three``: every puzzle served was solved,
    whatever their number), None when there is none or it has no flag for the attempt."""
    if end_ev is None:
        return [(None, None)] * n
    if end_ev.type == "completed_all_three":
        return [(True, False)] * n
    sf = end_ev.fields["solved_flags"]
    kf = end_ev.fields.get("skipped_flags")
    return [
        (
            sf[k] if k < len(sf) else None,
            kf[k] if kf is not None and k < len(kf) else None,
        )
        for k in range(n)
    ]


def _attempt_rows(
    sess: _Session, completion: Event | None, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Return one attempts-table row per attempt of the session (times are UTC timestamps;
    ``order`` is the attempt's position in the session, ``session_size`` the number of puzzles
    the session served)."""
    attempts = []
    flags = _completion_flags(completion, len(sess.queue))
    for k, q in enumerate(sess.queue, start=1):
        in_win = [
            r for r in rows if r["order"] == k and r["phase"] == "puzzle" and r["role"] != "survey"
        ]
        inter = [r["t"] for r in in_win if r["role"] != "session"]
        solved, skipped = flags[k - 1]
        solved_check = [r["t"] for r in in_win if r["type"] == "check_bank" and r["solved"]]
        attempts.append(
            {
                "participant_id": sess.pid,
                "order": k,
                "puzzle_id": q,
                "puzzle_hash": sess.hashes[q],
                "source_file": sess.rel,
                "window_start": sess.bounds[k - 1],
                "window_end": sess.bounds[k],
                "first_interaction_t": min(inter) if inter else pd.NaT,
                "last_interaction_t": max(inter) if inter else pd.NaT,
                "first_solved_check_t": min(solved_check) if solved_check else pd.NaT,
                "solved": solved,
                "skipped": skipped,
                "skip_events": sum(1 for r in in_win if r["type"] == "skip_puzzle"),
                "n_events": len({r["line_no"] for r in in_win}),
                "n_interactions": len(
                    {r["line_no"] for r in in_win if r["role"] in ("interaction", "marker")}
                ),
                "session_size": len(sess.queue),
            }
        )
    return attempts


def _rating_rows(sess: _Session) -> list[dict[str, Any]]:
    """Return one ratings-table row per attempt (initial and final 1-5 ratings, raw values and
    guessing answers); ratings that are not integers 1-5 are ledgered (kept, set missing)."""
    post = sess.surveys.get("post")
    post_ans = post.fields["answers"] if post else {}
    ratings = []
    for k, q in enumerate(sess.queue, start=1):
        ps = sess.surveys[f"puzzle_{k}"].fields["answers"]
        ini_raw = ps.get("difficulty")
        fin_raw = post_ans.get(f"puzzle_{k}_rate_again")
        for label, raw in (("initial", ini_raw), ("final", fin_raw)):
            if raw is not None and _rating(raw) is None:
                src = sess.surveys[f"puzzle_{k}"] if label == "initial" else post
                sess.ledger.add(
                    "attempt",
                    f"{sess.rel}:{src.line_no}",
                    f"{sess.pid}/{k}",
                    f"{label} rating {raw!r} is not an integer 1-5: set to missing"
                    + (" (-1 = the platform's value for a skipped puzzle)" if raw == -1 else ""),
                    "kept",
                )
        ratings.append(
            {
                "participant_id": sess.pid,
                "order": k,
                "puzzle_id": q,
                "puzzle_hash": sess.hashes[q],
                "initial_difficulty": _rating(ini_raw),
                "initial_difficulty_raw": _raw_rating(ini_raw),
                "initial_guesses": _str_or_none(ps.get(f"puzzle_{k}_guesses")),
                "final_difficulty": _rating(fin_raw),
                "final_difficulty_raw": _raw_rating(fin_raw),
                "final_guesses": _str_or_none(post_ans.get(f"puzzle_{k}_guesses")),
            }
        )
    return ratings


def _text_rows(sess: _Session) -> list[dict[str, Any]]:
    """Return the survey_texts rows: per-attempt rating reasons, then free-text answers
    (``*_other``, rating reason, strategy, comments) of the pre- and post-survey."""
    post = sess.surveys.get("post")
    pre_ans = sess.surveys["pre"].fields["answers"]
    post_ans = post.fields["answers"] if post else {}
    texts = []
    for k, q in enumerate(sess.queue, start=1):
        reason = post_ans.get(f"puzzle_{k}_rating_reason")
        if isinstance(reason, str):
            texts.append(
                {
                    "participant_id": sess.pid,
                    "survey_type": "post",
                    "question": "rating_reason",
                    "order": k,
                    "puzzle_id": q,
                    "puzzle_hash": sess.hashes[q],
                    "text": reason,
                }
            )
    for st, ans in (("pre", pre_ans), ("post", post_ans)):
        for key, val in ans.items():
            if isinstance(val, str) and (key.endswith("_other") or key in TEXT_KEYS):
                texts.append(
                    {
                        "participant_id": sess.pid,
                        "survey_type": st,
                        "question": key,
                        "order": None,
                        "puzzle_id": None,
                        "puzzle_hash": None,
                        "text": val,
                    }
                )
    return texts


def _participant_row(sess: _Session) -> dict[str, Any]:
    """Return the participants-table row: session facts, pre-survey answers and the six
    expertise items (skills that are not integers 1-10 are ledgered, kept as missing)."""
    pre = sess.surveys["pre"]
    pre_ans = pre.fields["answers"]
    items = expertise_items(pre_ans)
    for key in ("skill_nonogram", "skill_puzzles"):
        if pre_ans.get(key) is not None and items[key] is None:
            sess.ledger.add(
                "participant",
                f"{sess.rel}:{pre.line_no}",
                sess.pid,
                f"pre-survey {key}={pre_ans.get(key)!r} is not an integer 1-10: set to missing",
                "kept",
            )
    return {
        "participant_id": sess.pid,
        "source_file": sess.rel,
        "queue_json": json.dumps(_logged_queue(sess)),
        "schedule_idx": sess.start.fields.get("schedule_idx"),
        "session_start": sess.start.t,
        "has_post_survey": "post" in sess.surveys,
        "played_before": _str_or_none(pre_ans.get("played_before")),
        "puzzle_played_frequency": _str_or_none(pre_ans.get("puzzle_played_frequency")),
        "nonogram_size_experience_json": json.dumps(pre_ans.get("nonogram_size_experience")),
        "logic_experience_json": json.dumps(pre_ans.get("logic_experience")),
    } | items


def _logged_queue(sess: _Session) -> list[int | str]:
    """Return the session's queue as logged: integer ids as integers, string ids as their NFC
    text (the ids of ``sess.queue``)."""
    raw = json.loads(sess.start.raw)["queue"]
    return [r if isinstance(r, int) else q for r, q in zip(raw, sess.queue, strict=True)]


def _str_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) else None


# ---------------------------------------------------------------------------------------------
# Table schemas: workflow/schemas/<table>.schema.yaml (JSON Schema of one row).


def _events_frame_from_columns(cols: dict[str, list[Any]]) -> pd.DataFrame:
    """Return the events frame of column lists (None = missing), as :func:`_events_frame`
    builds it from row dicts (a missing key there is a missing value here)."""
    if not cols or not any(len(v) for v in cols.values()):
        return _events_frame([])
    return pd.DataFrame(cols)[_columns("events")]


def _events_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in _columns("events"):
        if c not in df:
            df[c] = None
    return df[_columns("events")]


#: the file of an ingest folder that lists every other file with its sha256 (written last)
MANIFEST = "manifest.json"


def ingest_file_names(extra_json: dict[str, Any] | None = None) -> frozenset[str]:
    """Return the names of the files :func:`write_ingest` writes into its folder: each table's
    Parquet file, CSV file (human-facing tables) and provenance sidecar, ``summary.json``,
    ``manifest.json``, ``study.json`` and the names of ``extra_json``."""
    names = {"summary.json", MANIFEST, "study.json", *(extra_json or {})}
    for t in TABLES:
        names |= {f"{t}.parquet", f"{t}.csv", f"{t}.provenance.json"}
    return frozenset(names)


def write_ingest(
    result: IngestResult,
    out_dir: str | Path,
    params: dict | None = None,
    extra_json: dict[str, Any] | None = None,
) -> None:
    """Write every table as Parquet (CSV too for human-facing ones), summary.json, the JSON
    files of ``extra_json`` (``{file name: object}``) and ``manifest.json``, replacing
    ``out_dir`` as a whole.

    Each table gets a provenance sidecar (:func:`nonolab.core.tables.write_table` for the
    human-facing ones, :func:`nonolab.core.tables.write_parquet_table` for the others). The
    files are written into a new sibling folder that then takes the place of ``out_dir``
    (:func:`nonolab.core.tables.atomic_folder`): a killed or failed run leaves the previous
    complete folder (or none), never a mix of two runs. ``manifest.json`` lists every file
    with its sha256 and the ``run_id`` (the sha256 of that list); :func:`read_ingest` checks
    it. Raises :class:`StudyError` when ``out_dir`` is an existing file, or a folder holding
    files that are not an ingest output (they would be lost), and
    :class:`nonolab.core.tables.OutputError` naming the file or folder that could not be
    written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise StudyError(f"output folder {out} exists and is not a folder; give another path")
    if out.is_dir() and any(out.iterdir()):
        ours = ingest_file_names(extra_json)
        marked = (out / MANIFEST).is_file() or (out / "summary.json").is_file()
        # without its manifest and summary (Snakemake removes a job's declared outputs before
        # running it again, leaving the provenance sidecars) the folder is still ours when it
        # holds nothing but files an ingest writes
        if not marked and not all(f.is_file() and f.name in ours for f in out.iterdir()):
            raise StudyError(
                f"output folder {out} holds files that are not an ingest output (no {MANIFEST} "
                "or summary.json); the ingest replaces its whole output folder: give an empty "
                "or new folder"
            )
    with atomic_folder(out) as tmp:
        for name, df in result.tables.items():
            if name in HUMAN_TABLES:
                write_table(
                    df,
                    tmp / f"{name}.csv",
                    inputs=result.inputs,
                    params=params,
                    formats=("parquet",),
                )
            else:
                write_parquet_table(
                    df, tmp / f"{name}.parquet", inputs=result.inputs, params=params
                )
        write_json(result.summary, tmp / "summary.json")
        for file_name, obj in (extra_json or {}).items():
            write_json(obj, tmp / file_name)
        files = {
            f.name: file_sha256(f) for f in sorted(tmp.iterdir()) if not f.name.startswith(".")
        }
        run_id = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
        write_json({"files": files, "run_id": run_id}, tmp / MANIFEST)


def check_ingest_folder(out_dir: str | Path) -> str:
    """Return the ``run_id`` of a complete ingest folder written by :func:`write_ingest`.

    Raises :class:`StudyError` naming the folder and the file when it is not one run's
    complete output: no ``manifest.json``, a listed file missing, or a file whose sha256
    differs from the manifest's (a file of another run, or a half-written one)."""
    out = Path(out_dir)
    if not out.is_dir():
        raise StudyError(f"ingest folder {out} does not exist (run `nonolab ingest` first)")
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        files, run_id = dict(manifest["files"]), str(manifest["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        raise StudyError(
            f"ingest folder {out} has no readable {MANIFEST}: it is not the complete output of "
            "one `nonolab ingest` run; run the ingest again (`nonolab ingest STUDY OUT`, or "
            "`nonolab run`, which plans it)"
        ) from None
    for name, want in files.items():
        path = out / name
        if not path.is_file():
            raise StudyError(f"ingest folder {out} is incomplete: {name} is missing")
        if file_sha256(path) != want:
            raise StudyError(
                f"ingest folder {out} is inconsistent: {name} is not the file its run "
                f"{run_id[:12]} wrote (a mix of two runs?); run the ingest again (`nonolab "
                "ingest STUDY OUT`, or `nonolab run -- --forcerun ingest`)"
            )
    missing = [f"{t}.parquet" for t in TABLES if f"{t}.parquet" not in files]
    if missing:
        raise StudyError(f"ingest folder {out} is incomplete: {missing} not in its {MANIFEST}")
    return run_id


def read_ingest(out_dir: str | Path) -> dict[str, pd.DataFrame]:
    """Return the ingest tables written by :func:`write_ingest` (from their Parquet files),
    after checking the folder is one run's complete output (:func:`check_ingest_folder`)."""
    out = Path(out_dir)
    check_ingest_folder(out)
    return {name: pd.read_parquet(out / f"{name}.parquet") for name in TABLES}


EVENT_TYPE_NAMES = tuple(EVENT_SPECS) + tuple(IGNORED_TYPES)
__all__ = [
    "IngestResult",
    "LogLineError",
    "check_ingest_folder",
    "expertise_items",
    "ingest_study",
    "puzzles_table",
    "read_ingest",
    "write_ingest",
]
