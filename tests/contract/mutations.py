"""Mutation operators of the contract fuzzer and the invariant they are checked against.

A *case* is a list of operations applied to one participant's log file of a base study (or, for
a *global* case, to the puzzle file or the coded-responses file). An operation is a JSON-able
dict ``{"op": name, "a": int, "b": int}``: ``a`` and ``b`` pick the line, position, variant or
value, taken modulo what is there, so that every pair of integers is a valid operation and
hypothesis can shrink them. docs/bad-input.md ("Contract fuzzer") lists the operators.

The invariant (:func:`check_cases`): after the mutation, either every derived table (the ingest
tables but the ledger, and the per-attempt features; for a global case also the coded
responses the theme analysis reads) is identical to the unmutated run's, with renamed files
mapped back to their original names, or ``validate`` reports a problem that names a mutated file
(its file, or its name in the reason) and the ledger holds that row, or the ingest stops with an
error naming a mutated file.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from nonolab.cli.commands.validate import validation_report
from nonolab.sat.puzzles import PuzzleError
from nonolab.stats.themes import load_coded_responses, select_coded_responses
from nonolab.study.features import attempt_features
from nonolab.study.ingest import ingest_study
from nonolab.study.presets import StudyError, load_preset, log_sources

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
LOGS = "backend/logs"
PUZZLES = "nonograms_6.json"
CODED = "riyad-analysis/derived/coded_responses.csv"
THRESHOLD_S = 2.36
#: columns of the events table that hold a line's position in its file
POSITION_COLUMNS = ("line_no", "seq", "drag_id")
DERIVED = ("events", "attempts", "participants", "ratings", "survey_texts", "puzzles")

#: operators on one log file
LOG_OPS = (
    "duplicate_line",
    "drop_structural_line",
    "swap_lines",
    "truncate_line",
    "truncate_file",
    "duplicate_file",
    "split_file",
    "rename_case",
    "rename_unicode",
    "rename_extension",
    "append_session",
    "clock_jump",
    "clock_jump_between_attempts",
    "insert_unknown_event",
    "insert_stray_event",
    "change_value_type",
    "duplicate_key",
    "corrupt_bytes",
)
#: operators on the puzzle file or the coded-responses file (global cases)
GLOBAL_OPS = (
    "coded_duplicate_row",
    "coded_drop_row",
    "coded_edit_rating",
    "coded_unknown_participant",
    "coded_unknown_puzzle",
    "coded_bad_code",
    "coded_add_column",
    "coded_drop_column",
    "puzzle_change_clue",
    "puzzle_change_solution",
    "puzzle_id_type",
    "puzzle_duplicate_key",
    "puzzle_duplicate_id",
    "puzzle_drop",
    "puzzle_corrupt_bytes",
)
#: operators that find a contract hole nobody has closed yet: left out of the fuzzer's draws
#: (so that it checks everything else), each kept as an open regression case
#: (tests/contract/regressions/, a strict xfail) and listed in docs/bad-input.md
OPEN_OPS: dict[str, str] = {}
STRUCTURAL = (b'"session_start_three"', b'"survey_submit"', b'"ended_without_full_completion"',
              b'"completed_all_three"')  # fmt: skip


@dataclass
class Mutated:
    """The files of a case after its operations: ``files`` maps a path relative to the study
    to its bytes (None: deleted); ``origin`` maps a log file's new path to its original one."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    origin: dict[str, str] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    #: puzzle ids the base study's sessions served
    served: set[str] = field(default_factory=set)
    puzzle_rel: str = PUZZLES
    coded_rel: str = CODED


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _join(lines: list[bytes]) -> bytes:
    return b"\n".join(lines)


def _content_index(lines: list[bytes]) -> list[int]:
    """Indexes of the non-empty lines."""
    return [i for i, ln in enumerate(lines) if ln.strip()]


def _obj(line: bytes) -> dict[str, Any] | None:
    try:
        o = json.loads(line)
    except ValueError:
        return None
    return o if isinstance(o, dict) else None


def _time(o: dict[str, Any] | None) -> datetime | None:
    try:
        return datetime.fromisoformat(o["t"]) if o else None
    except (KeyError, TypeError, ValueError):
        return None


def _dump(o: dict[str, Any]) -> bytes:
    return json.dumps(o, ensure_ascii=False).encode("utf-8")


def _shift(line: bytes, delta: timedelta) -> bytes:
    o = _obj(line)
    t = _time(o)
    if t is None:
        return line
    return _dump(o | {"t": (t + delta).isoformat()})


def _rename(m: Mutated, old: str, new: str) -> None:
    if new == old:
        return
    m.files[new] = m.files[old]
    m.files[old] = None
    m.origin[new] = m.origin.pop(old, old)
    m.touched.discard(old)
    m.touched.add(new)


def apply_log_op(m: Mutated, op: dict[str, Any]) -> None:
    """Apply one log-file operation to the case's files (the first live log file, or the one
    ``op['f']`` picks among them)."""
    live = sorted(r for r, d in m.files.items() if d is not None and r.startswith(LOGS))
    if not live:
        return
    rel = live[op.get("f", 0) % len(live)]
    data = m.files[rel]
    lines = _lines(data)
    idx = _content_index(lines) or [0]
    a, b = op["a"], op["b"]
    i = idx[a % len(idx)]
    name = op["op"]
    folder, _, fname = rel.rpartition("/")
    stem, dot, suffix = fname.partition(".")
    if not dot:
        stem, suffix = fname, "ndjson"
    if name == "duplicate_line":
        lines.insert(idx[b % len(idx)] + 1, lines[i])
    elif name == "drop_structural_line":
        struct = [j for j in idx if any(s in lines[j] for s in STRUCTURAL)]
        if struct:
            del lines[struct[a % len(struct)]]
    elif name == "swap_lines":
        j = idx[(a + 1) % len(idx)]
        lines[i], lines[j] = lines[j], lines[i]
    elif name == "truncate_line":
        if len(lines[i]) > 1:
            lines[i] = lines[i][: 1 + b % (len(lines[i]) - 1)]
    elif name == "truncate_file":
        lines = lines[: max(1, i)]
    elif name == "duplicate_file":
        m.files[f"{folder}/{stem} ({1 + b % 3}).{suffix}"] = data
        m.origin[f"{folder}/{stem} ({1 + b % 3}).{suffix}"] = m.origin.get(rel, rel)
        m.touched.add(f"{folder}/{stem} ({1 + b % 3}).{suffix}")
    elif name == "split_file":
        new = f"{folder}/{stem}-part2.{suffix}"
        m.files[new] = _join(lines[i:])
        m.origin[new] = m.origin.get(rel, rel)
        m.touched.add(new)
        lines = lines[:i]
    elif name == "rename_case":
        _rename(m, rel, f"{folder}/{stem.swapcase()}.{suffix}")
        return
    elif name == "rename_unicode":
        form = ("NFD", "NFC", "NFKD")[b % 3]
        _rename(m, rel, f"{folder}/{unicodedata.normalize(form, stem + '-é')}.{suffix}")
        return
    elif name == "rename_extension":
        ext = ("json", "NDJSON", "jsonl", "txt", "ndjson.bak", "")[b % 6]
        _rename(m, rel, f"{folder}/{stem}.{ext}" if ext else f"{folder}/{stem}")
        return
    elif name == "append_session":
        delta = timedelta(days=1 + b % 3)
        lines = [ln for ln in lines if ln.strip()] + [
            _shift(ln, delta) for ln in lines if ln.strip()
        ]
    elif name in ("clock_jump", "clock_jump_between_attempts"):
        deltas = [timedelta(days=1), timedelta(hours=2), timedelta(days=-1)]
        if name == "clock_jump":
            # between two attempts a step back shorter than the break before it leaves a valid,
            # ordered log (a shorter break): only steps the grammar can see are drawn there
            deltas.append(timedelta(seconds=-90))
        delta = deltas[b % len(deltas)]
        # clock_jump: inside an attempt (between two interactions); the other: right after a
        # puzzle survey, where one attempt ends and the next begins
        if name == "clock_jump":
            inter = (b'"move"', b'"hint"', b'"drag"')
            at = [j for j in idx[1:] if any(x in lines[j] for x in inter)]
            at = [j for j in at if any(x in lines[j - 1] for x in inter)]
        else:
            at = [
                j + 1 for j in idx if b'"survey_type": "puzzle_' in lines[j] and j + 1 < len(lines)
            ]
        if not at:
            return
        i = at[a % len(at)]
        lines = lines[:i] + [_shift(ln, delta) for ln in lines[i:]]
    elif name == "insert_unknown_event":
        t = _time(_obj(lines[i]))
        ev = {"type": ("teleport", "Move", "move ", "")[b % 4]}
        if t is not None:
            ev["t"] = t.isoformat()
        lines.insert(i, _dump(ev))
    elif name == "insert_stray_event":
        first = _time(_obj(lines[idx[0]]))
        t = _time(_obj(lines[i])) or first
        if t is None:
            return
        stray = (
            {"type": "move", "r": 0, "c": 0, "value": 1, "t": (first - timedelta(seconds=5))},
            {"type": "check_bank", "puzzle_id": 97, "solved": True, "mismatches": [], "t": t},
            {
                "type": "survey_submit",
                "survey_type": "puzzle_9",
                "puzzle_idx": 8,
                "answers": {},
                "t": t,
            },  # fmt: skip
            {"type": "session_start_three", "queue": [0, 1, 2], "schedule_idx": 0, "t": t},
            {"type": "completed_all_three", "t": t},
            {"type": "move", "r": 40, "c": 3, "value": 1, "t": t},
        )[b % 6]
        lines.insert(i, _dump(stray | {"t": stray["t"].isoformat()}))
    elif name == "change_value_type":
        o = _obj(lines[i])
        keys = [k for k in (o or {}) if k != "type"]
        if not keys:
            return
        k = keys[b % len(keys)]
        v = o[k]
        if isinstance(v, bool):
            new: Any = int(v)
        elif isinstance(v, int):
            new = (str(v), float(v), bool(v % 2), None)[a % 4]
        elif isinstance(v, float):
            new = str(v)
        elif isinstance(v, str):
            new = ([v], None, 1)[a % 3]
        elif isinstance(v, list):
            new = {"0": v[0]} if v else None
        elif isinstance(v, dict):
            new = list(v.values())
        else:
            new = 0
        lines[i] = _dump({**o, k: new})
    elif name == "duplicate_key":
        o = _obj(lines[i])
        keys = [k for k in (o or {}) if k != "type"]
        if not keys:
            return
        k = keys[b % len(keys)]
        other = json.dumps(o[k] if a % 2 else "other", ensure_ascii=False).encode()
        lines[i] = b"{" + json.dumps(k).encode() + b": " + other + b", " + lines[i].lstrip()[1:]
    elif name == "corrupt_bytes":
        ln = lines[i]
        pos = b % max(1, len(ln))
        variant = a % 3
        if variant == 0:
            lines[i] = ln[:pos] + b"\xff" + ln[pos:]  # not UTF-8
        elif variant == 1:
            structural = [p for p, ch in enumerate(ln) if ch in b'{}":,[]']
            if structural:
                p = structural[b % len(structural)]
                lines[i] = ln[:p] + b"#" + ln[p + 1 :]
        else:
            lines[i] = ln[:pos] + b"\x00" + ln[pos:]
    else:
        raise ValueError(f"unknown log operator {name}")
    m.files[rel] = _join(lines)
    m.touched.add(rel)


def _csv_rows(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def apply_global_op(m: Mutated, op: dict[str, Any]) -> None:
    """Apply one operation to the puzzle file or the coded-responses file."""
    name, a, b = op["op"], op["a"], op["b"]
    if name.startswith("coded_"):
        rel = m.coded_rel
        rows = _csv_rows(m.files[rel])
        header = rows[0].decode("utf-8").split(",")
        if "final_difficulty" not in header or "source_file" not in header:
            return  # a required column dropped by an earlier operator
        body = [i for i in range(1, len(rows)) if rows[i].strip()]
        i = body[a % len(body)]
        import csv
        import io

        cells = next(csv.reader(io.StringIO(rows[i].decode("utf-8"))))

        def put(row: list[str]) -> bytes:
            buf = io.StringIO()
            csv.writer(buf, lineterminator="").writerow(row)
            return buf.getvalue().encode("utf-8")

        if name == "coded_duplicate_row":
            rows.insert(i + 1, rows[i])
        elif name == "coded_drop_row":
            del rows[i]
        elif name == "coded_edit_rating":
            col = header.index("final_difficulty")
            cells[col] = ("99", "-1", "0", "1.0", "x")[b % 5]
            rows[i] = put(cells)
        elif name == "coded_unknown_participant":
            cells[header.index("source_file")] = "Nobody-p0.ndjson"
            rows[i] = put(cells)
        elif name == "coded_unknown_puzzle":
            if "puzzle_id" not in header:
                return
            cells[header.index("puzzle_id")] = ("97", "abc", "")[b % 3]
            rows[i] = put(cells)
        elif name == "coded_bad_code":
            codes = [j for j, h in enumerate(header) if h.startswith("code_")]
            cells[codes[b % len(codes)]] = ("2", "x", "-1", "")[a % 4]
            rows[i] = put(cells)
        elif name == "coded_add_column":  # not a code_* column: without a codebook a new
            # code column is a coder's edit like any other code value
            col = (b"notes", b"final_difficulty2", b"Participant_ID")[b % 3]
            rows = [rows[0] + b"," + col] + [r + b",1" if r.strip() else r for r in rows[1:]]
        elif name == "coded_drop_column":  # not a code_* column: without a codebook the
            # file defines the codes, and a code nobody was given can go unnoticed
            cols = [j for j, h in enumerate(header) if not h.startswith("code_")]
            j = cols[b % len(cols)]
            out = []
            for r in rows:
                if not r.strip():
                    out.append(r)
                    continue
                c = next(csv.reader(io.StringIO(r.decode("utf-8"))))
                out.append(put(c[:j] + c[j + 1 :]))
            rows = out
        else:
            raise ValueError(f"unknown operator {name}")
        m.files[rel] = b"\n".join(rows)
        m.touched.add(rel)
        return
    rel = m.puzzle_rel
    data = m.files[rel]
    try:
        puzzles = json.loads(data)
    except ValueError:  # corrupted by an earlier operator: left as it is
        return
    if (
        not isinstance(puzzles, list)
        or not puzzles
        or not all(isinstance(q, dict) for q in puzzles)
    ):
        return
    k = a % len(puzzles)
    if name in ("puzzle_change_clue", "puzzle_change_solution"):
        # only a puzzle that gives its clues: the clues are then checked against the solution
        # (a puzzle given by its solution alone is another puzzle after the edit)
        k = next((j for j in range(k, k + len(puzzles)) if "clues" in puzzles[j % len(puzzles)]), k)
        k %= len(puzzles)
        if "clues" not in puzzles[k]:
            return
    p = puzzles[k]
    if name == "puzzle_change_clue":
        line = p["clues"]["rows"][b % len(p["clues"]["rows"])]
        line.append(1) if not line or line == [0] else line.__setitem__(0, line[0] + 1)
    elif name == "puzzle_change_solution":
        row = p["solution"][b % len(p["solution"])]
        row[0] = 1 - row[0]
    elif name == "puzzle_id_type":  # of a puzzle some session served
        served = [q for q in puzzles if str(q["id"]) in m.served] or [p]
        p = served[b % len(served)]
        p["id"] = (str(p["id"]) + ".0", float(p["id"]), True, None, [p["id"]], str(p["id"]) + " ")[
            b % 6
        ]
    elif name == "puzzle_duplicate_id":
        puzzles[(k + 1) % len(puzzles)]["id"] = p["id"]
    elif name == "puzzle_drop":  # a puzzle some session served (an unused one is a new study)
        served = [i for i, q in enumerate(puzzles) if str(q["id"]) in m.served] or [k]
        del puzzles[served[a % len(served)]]
    if name in ("puzzle_duplicate_key", "puzzle_corrupt_bytes"):
        text = json.dumps(puzzles, indent=1).encode()
        if name == "puzzle_duplicate_key":
            at = text.index(b'"id"', 0)
            for _ in range(k):
                at = text.index(b'"id"', at + 1)
            text = text[:at] + f'"id": {(k + 1 + b) % 7}, '.encode() + text[at:]
        else:
            pos = b % len(text)
            text = text[:pos] + b"\xff" + text[pos:]
        m.files[rel] = text
    else:
        m.files[rel] = json.dumps(puzzles, indent=1).encode()
    m.touched.add(rel)


# --- studies and the invariant -----------------------------------------------------------------


@dataclass
class Base:
    """A base study: its files and the derived tables of its unmutated run."""

    files: dict[str, bytes]
    preset_text: str
    tables: dict[str, pd.DataFrame]
    logs: list[str]
    puzzle_rel: str = PUZZLES
    coded_rel: str = CODED


def example_files(n_logs: int | None = None, themes: bool = False) -> dict[str, bytes]:
    """The example study's puzzle file and log files (the first ``n_logs`` by name), and its
    coded responses (only those of the kept participants) when ``themes``."""
    logs = sorted((EXAMPLE / LOGS).iterdir())[:n_logs]
    files = {PUZZLES: (EXAMPLE / PUZZLES).read_bytes()}
    files |= {f"{LOGS}/{p.name}": p.read_bytes() for p in logs}
    if themes:
        keep = {p.name for p in logs}
        rows = (EXAMPLE / CODED).read_bytes().split(b"\n")
        src = rows[0].decode().split(",").index("source_file")
        body = [r for r in rows[1:] if r.strip() and r.decode().split(",")[src] in keep]
        files[CODED] = b"\n".join([rows[0], *body]) + b"\n"
    return files


def write_files(root: Path, files: dict[str, bytes | None]) -> None:
    for rel, data in files.items():
        if data is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


PRESET_NO_THEMES = "extends: default\nname: fuzz\nthemes: null\n"
PRESET_THEMES = "extends: default\nname: fuzz\n"


def run_study(root: Path, preset_text: str) -> tuple[Any, Any, list[Any]]:
    """Ingest ``root`` with the preset ``preset_text``; return ``(result, preset, sources)``."""
    (root.parent / "preset.yaml").write_text(preset_text, encoding="utf-8")
    preset = load_preset(root.parent / "preset.yaml")
    return ingest_study(root, preset), preset, log_sources(root, preset)


def derived_tables(
    root: Path, result: Any, themes: bool, coded_rel: str = CODED
) -> dict[str, pd.DataFrame]:
    """The derived tables of an ingest result: its tables but the ledger, the features and
    (``themes``) the coded responses as the theme analysis reads them."""
    out = {k: result.tables[k] for k in DERIVED}
    out["features"] = attempt_features(result.tables, THRESHOLD_S)
    if themes and (root / coded_rel).is_file():
        out["coded"] = used_coded_responses(root / coded_rel, result)
    return out


def used_coded_responses(path: Path, result: Any) -> pd.DataFrame:
    """The coded responses the theme analysis uses (``select_coded_responses`` of the
    analysed participants) and the columns it reads: kind, participant, puzzle, codes, and
    the final difficulty of rating reasons (the only rows whose rating it reads)."""
    coded, _ = select_coded_responses(
        load_coded_responses(path), set(result.tables["participants"]["participant_id"])
    )
    cols = ["response_id", "participant", "response_kind", "puzzle_id", "final_difficulty"]
    cols += [c for c in coded.columns if c.startswith("code_")]
    out = coded[cols].copy()
    other = out["response_kind"] != "rating_reason"
    out.loc[other, "final_difficulty"] = float("nan")
    out.loc[other, "puzzle_id"] = ""
    return out


def make_base(tmp: Path, files: dict[str, bytes], preset_text: str, themes: bool) -> Base:
    root = tmp / "base" / "study"
    write_files(root, files)
    result, preset, _ = run_study(root, preset_text)
    coded_rel = (preset.get("themes") or {}).get("coded_responses", CODED)
    logs = sorted(r for r in files if r.startswith(LOGS))
    tables = derived_tables(root, result, themes, coded_rel)
    return Base(files, preset_text, tables, logs, preset.puzzle_file, coded_rel)


def _canonical(df: pd.DataFrame, origin: dict[str, str], pids: set[str] | None) -> str:
    """``df`` as CSV text with renamed files' ids and paths mapped back, restricted to the
    participants ``pids`` (None: all rows)."""
    ids = {
        unicodedata.normalize("NFC", Path(new).stem): Path(old).stem
        for new, old in origin.items()
        if new != old
    }
    paths = {new: old for new, old in origin.items()}
    if "participant_id" in df and pids is not None:
        df = df[df["participant_id"].isin(pids | set(ids))]
    df = df.copy()
    if "participant_id" in df:
        df["participant_id"] = df["participant_id"].map(lambda v: ids.get(v, v))
    if "source_file" in df:
        df["source_file"] = df["source_file"].map(lambda v: paths.get(v, v))
    # positions in the file (line number, order of reading, a drag's line) are provenance, not
    # results: two lines exchanged without breaking the time order move them and nothing else
    df = df.drop(columns=[c for c in POSITION_COLUMNS if c in df.columns])
    return df.to_csv(index=False)


class ContractViolation(AssertionError):
    """A mutation changed a derived table without a validate problem naming a mutated file."""


def _names(rel: str) -> set[str]:
    return {rel, rel.rsplit("/", 1)[-1], unicodedata.normalize("NFC", rel)}


def check_cases(
    tmp: Path, base: Base, cases: list[dict[str, Any]], themes: bool = False
) -> dict[str, str]:
    """Apply every case (``{"p": base log index, "ops": [...]}`` or ``{"global": True, "ops":
    [...]}``) to a fresh copy of ``base``, ingest once, and check the invariant for each case;
    return ``{case index: how it passed}`` (``identical``, ``problem``, ``error``). Raises
    :class:`ContractViolation` naming the case, its operations and what changed."""
    muts: list[Mutated] = []
    files: dict[str, bytes | None] = {}
    used = set()
    for case in cases:
        if case.get("global"):
            m = Mutated(
                files={k: v for k, v in base.files.items() if not k.startswith(LOGS)},
                served=set(base.tables["attempts"]["puzzle_id"].astype(str)),
                puzzle_rel=base.puzzle_rel,
                coded_rel=base.coded_rel,
            )
            for op in case["ops"]:
                apply_global_op(m, op)
            used |= set(base.logs)
        else:
            rel = base.logs[case["p"] % len(base.logs)]
            if rel in used:
                continue
            used.add(rel)
            m = Mutated(files={rel: base.files[rel]}, origin={rel: rel})
            for op in case["ops"]:
                apply_log_op(m, op)
        muts.append(m)
        files |= m.files
    study_files = {k: v for k, v in base.files.items() if not k.startswith(LOGS) or k in used}
    study_files |= files
    root = tmp / "study"
    if root.exists():
        shutil.rmtree(root)
    write_files(root, study_files)
    touched = set().union(*(m.touched for m in muts)) if muts else set()
    try:
        result, preset, sources = run_study(root, base.preset_text)
        derived = derived_tables(root, result, themes, base.coded_rel)
    except (StudyError, PuzzleError, ValueError) as exc:
        msg = str(exc)
        if any(n in msg for t in touched for n in _names(t)):
            return dict.fromkeys(map(str, range(len(muts))), "error")
        raise ContractViolation(f"error naming no mutated file {sorted(touched)}: {msg}") from exc
    report = validation_report(result, root, preset, sources)
    problems = report["problems"]
    out = {}
    for n, m in enumerate(muts):
        origin = m.origin
        pids = {Path(o).stem for o in origin.values()} if origin else None
        changed = [
            name
            for name, df in derived.items()
            if (pids is None or name != "puzzles")
            and _canonical(df, origin, pids) != _canonical(base.tables[name], {}, pids)
        ]
        if not changed:
            out[str(n)] = "identical"
            continue
        names = set().union(*(_names(t) for t in m.touched)) if m.touched else set()
        hit = [
            p
            for p in problems
            if p["file"] in names or any(re.search(re.escape(x), p["reason"]) for x in names)
        ]
        if hit:
            out[str(n)] = "problem"
            continue
        raise ContractViolation(
            f"mutation changed {changed} with no validate problem naming "
            f"{sorted(m.touched)}; problems: {[(p['file'], p['line'], p['reason']) for p in problems][:8]}"
        )
    return out


def doc_files() -> dict[str, bytes]:
    """The minimal study of docs/data-format.md (its ``File `...`:`` blocks), preset apart."""
    text = (REPO / "docs" / "data-format.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^File `([^`]+)`:\n\n```[a-z]*\n(.*?)^```", text, re.M | re.S)
    return {rel: body.encode("utf-8") for rel, body in blocks}


#: the base studies: name -> (files, preset text, themes compared)
BASES = ("example", "example-themes", "doc")
_BASES: dict[str, tuple[Base, bool]] = {}


def base_study(name: str, tmp: Path) -> tuple[Base, bool]:
    """Return ``(base, themes)`` for a base study name of :data:`BASES` (made once per
    process): ``example`` (the 30 participants of the example study, no coded themes),
    ``example-themes`` (its first three participants and their coded responses), ``doc``
    (the minimal study of docs/data-format.md with its preset and coded responses)."""
    if name not in _BASES:
        if name == "example":
            files, preset, themes = example_files(), PRESET_NO_THEMES, False
        elif name == "example-themes":
            files, preset, themes = example_files(3, themes=True), PRESET_THEMES, True
        elif name == "doc":
            files = doc_files()
            preset = files.pop("preset.yaml").decode("utf-8")
            themes = True
        else:
            raise KeyError(name)
        _BASES[name] = (make_base(tmp / name, files, preset, themes), themes)
    return _BASES[name]
