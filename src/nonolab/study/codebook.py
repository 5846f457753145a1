"""Coded survey themes: check that a coded-responses file names analysed participants and
codebook codes.

The ingest runs :func:`check_coded_themes` so that its findings are rows of the exclusion ledger;
the theme analysis (:mod:`nonolab.stats.themes`) reads the same files.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

import yaml

from nonolab.core.strict import normalise_id
from nonolab.study.presets import OUTSIDE_LINKS, SCHEMA_DIR, StudyError, inside_study

_CODE_ROW = re.compile(r"^\|\s*`([A-Z][A-Z_]*)`\s*\|")


def codebook_codes(path: str | Path) -> set[str]:
    """Return the codes defined in a Markdown codebook (table rows starting with a `CODE` cell)."""
    codes = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _CODE_ROW.match(line.strip())
        if m:
            codes.add(m.group(1))
    return codes


#: ``{participant id: {puzzle id: the final rating as logged (None when missing)}}`` of the
#: analysed sessions (:func:`session_ratings`)
SessionRatings = Mapping[str, Mapping[str, object]]

#: columns of a coded-responses file that are read (the schema's properties) and columns that
#: are informational (allowed, not read); ``code_*`` columns are codes; any other column is
#: unknown (ledgered, not read)
_SCHEMA = yaml.safe_load((SCHEMA_DIR / "coded_responses.schema.yaml").read_text("utf-8"))
INFORMATIONAL_COLUMNS = tuple(_SCHEMA["x-informational"])
READ_COLUMNS = tuple(c for c in _SCHEMA["properties"] if c not in INFORMATIONAL_COLUMNS)
REQUIRED_COLUMNS = tuple(_SCHEMA["required"])
#: final ratings a coded row may carry: 1-5, and the platform's -1 for a skipped puzzle
CODED_RATINGS = (-1, 1, 2, 3, 4, 5)
_WHOLE = re.compile(r"^-?[0-9]+(\.0*)?$")


def session_ratings(ratings: Iterable[Mapping[str, object]]) -> dict[str, dict[str, object]]:
    """Return :data:`SessionRatings` of ratings-table rows (``participant_id``, ``puzzle_id``,
    ``final_difficulty_raw``)."""
    out: dict[str, dict[str, object]] = {}
    for r in ratings:
        raw = r.get("final_difficulty_raw")
        raw = None if raw is None or raw != raw else int(raw)  # NaN / NA -> None
        out.setdefault(str(r["participant_id"]), {})[str(r["puzzle_id"])] = raw
    return out


def coded_puzzle_label(value: object) -> str:
    """Return a coded row's ``puzzle_id`` cell as a puzzle id: a whole number (``5``, ``5.0``)
    as its integer text, any other text in Unicode normal form C, "" when empty or missing."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value))
    text = str(value).strip()
    if _WHOLE.match(text):
        return str(int(float(text)))
    return normalise_id(text)


def coded_rating_problem(
    participant: str,
    kind: str,
    puzzle_id: object,
    final: object,
    ratings: SessionRatings,
) -> tuple[str, str] | None:
    """Return ``(reason, action)`` when a rating-reason row of an analysed participant
    disagrees with the logs, else None (also for other response kinds).

    ``excluded`` (the theme tests leave the row out, :func:`out_of_range_rating`): its
    ``final_difficulty`` is not a whole number in :data:`CODED_RATINGS`. ``kept`` (the coded
    value is used, as the published analysis used it): its puzzle is not one the
    participant's session served, or its rating is not the final rating the log holds for that
    puzzle (an empty cell or -1, the platform's value for a skipped puzzle, match a missing
    rating).
    """
    if kind != "rating_reason" or participant not in ratings:
        return None
    bad = out_of_range_rating(final)
    if bad:
        return bad, "excluded"
    label = coded_puzzle_label(puzzle_id)
    session = ratings[participant]
    if label not in session:
        why = (
            f"rating reason of puzzle {label!r}, not a puzzle of {participant}'s analysed "
            f"attempts {sorted(session)}: the coded rating is used as it is"
        )
        return why, "kept"
    text = _cell_text(final)
    coded = int(float(text)) if text else None
    logged = session[label]
    if coded == -1 and logged is None:
        return None  # -1: a skipped puzzle, which has no final rating in the post-survey
    if coded != logged:
        shown = "missing" if logged is None else logged
        why = (
            f"final_difficulty {text or '(empty)'} differs from the log's final rating of "
            f"puzzle {label} ({shown}): the coded rating is used as it is"
        )
        return why, "kept"
    return None


def _cell_text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def out_of_range_rating(final: object) -> str | None:
    """Return why a coded ``final_difficulty`` cell cannot be a rating (not a number, not a
    whole number in :data:`CODED_RATINGS`), or None (also for an empty cell: no rating)."""
    text = _cell_text(final)
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        return f"final_difficulty {text!r} is not a number"
    if not number.is_integer() or int(number) not in CODED_RATINGS:
        return f"final_difficulty {text} is not a rating 1-5 (or -1, skipped)"
    return None


def check_coded_themes(
    path: str | Path,
    participant_ids: set[str],
    known_codes: set[str] | None,
    rel: str,
    ratings: SessionRatings | None = None,
    log_reasons: Mapping[str, Collection[object]] | None = None,
) -> list[dict[str, str]]:
    """Return ledger rows for a coded-responses CSV (one 0/1 ``code_*`` column per code).

    Excluded (the theme analysis leaves them out, :func:`nonolab.stats.themes.
    select_coded_responses`): a repeat of an earlier row (same ``response_id``, or the same
    record when there is no ``response_id``), a row whose ``source_file`` stem (the published
    participant id) is not an analysed participant, and, with ``ratings``, a rating reason
    whose rating is out of range; one that disagrees with the logs is kept
    (:func:`coded_rating_problem`). Ledgered as well: a column that
    is neither read, informational nor a code (kept, not read), a ``code_*`` column or
    ``codes_str`` entry that is not a known code, a code value other than 0/1, and, with
    ``log_reasons`` (participant id -> ``(response kind, puzzle id)`` of each free-text answer
    in the logs; a bare puzzle id is a rating reason), an answer that no coded row codes
    although the logs or the file's shape call for one (a dropped row; kept, naming the file;
    :func:`_missing_rows`). Rows carry
    ``file:line`` (CSV record end line). Raises :class:`StudyError` naming the file if it
    lacks a required column or is not UTF-8 CSV.
    """
    try:
        return _check_coded_themes(path, participant_ids, known_codes, rel, ratings, log_reasons)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise StudyError(f"{rel}: not a UTF-8 CSV coded-themes file ({exc})") from None


def _check_coded_themes(
    path: str | Path,
    participant_ids: set[str],
    known_codes: set[str] | None,
    rel: str,
    ratings: SessionRatings | None,
    log_reasons: Mapping[str, Collection[object]] | None = None,
) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    coded_reasons: dict[str, set[str]] = {}
    #: participant -> the (response kind, puzzle label) of each coded row used
    coded_keys: dict[str, set[tuple[str, str]]] = {}
    mislabelled: Counter[str] = Counter()
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in fields]
        if missing:
            raise StudyError(f"{rel}: coded-themes file has no {', '.join(missing)} column")
        repeated = sorted({f for f in fields if fields.count(f) > 1})
        if repeated:
            raise StudyError(f"{rel}: coded-themes file names column(s) {repeated} twice")
        code_cols = [f for f in fields if f.startswith("code_")]
        if not code_cols:
            raise StudyError(f"{rel}: coded-themes file has no code_* column")
        for col in fields:
            if col not in READ_COLUMNS and col not in INFORMATIONAL_COLUMNS and col[:5] != "code_":
                out.append(
                    _lrow("file", f"{rel}:1", col, f"unknown column {col!r}: not read", "kept")
                )
        if known_codes is not None:
            for col in code_cols:
                if col[5:] not in known_codes:
                    out.append(
                        _lrow(
                            "file",
                            f"{rel}:1",
                            col,
                            f"column {col}: code {col[5:]!r} "
                            "is not in the codebook; column ignored",
                        )
                    )
        cols = {c[5:] for c in code_cols}
        key_col = "response_id" if "response_id" in fields else None
        seen: dict[object, tuple[int, tuple]] = {}
        for rec in reader:
            where = f"{rel}:{reader.line_num}"
            stem = normalise_id(Path(rec.get("source_file") or "").stem)
            content = tuple(rec.get(f) for f in fields)
            key = rec.get(key_col) if key_col else content
            if key in seen:
                line, first = seen[key]
                why = (
                    f"duplicate of line {line}"
                    if first == content
                    else f"response_id {key!r} repeats line {line} with other content; the first"
                    " is used"
                )
                out.append(_lrow("line", where, stem or "(empty)", why))
                continue
            seen[key] = (reader.line_num, content)
            if stem not in participant_ids:
                out.append(
                    _lrow(
                        "line",
                        where,
                        stem or "(empty)",
                        f"coded response of {stem!r}, not an analysed participant",
                    )
                )
                continue
            kind = rec.get("response_kind") or ""
            label = coded_puzzle_label(rec.get("puzzle_id")) if kind == "rating_reason" else ""
            coded_keys.setdefault(stem, set()).add((kind, label))
            if kind == "rating_reason":
                coded_reasons.setdefault(stem, set()).add(label)
                if ratings is not None and label not in ratings.get(stem, {label: None}):
                    mislabelled[stem] += 1
            if ratings is not None:
                problem = coded_rating_problem(
                    stem,
                    rec.get("response_kind") or "",
                    rec.get("puzzle_id"),
                    rec.get("final_difficulty"),
                    ratings,
                )
                if problem and problem[1] == "excluded":
                    out.append(_lrow("line", where, stem, problem[0]))
                    continue
                if problem:
                    out.append(_lrow("line", where, stem, problem[0], "kept"))
            for c in code_cols:
                if rec[c] not in ("0", "1", "0.0", "1.0"):
                    out.append(_lrow("line", where, stem, f"{c} = {rec[c]!r} is not 0/1"))
            named = [x for x in (rec.get("codes_str") or "").split("|") if x]
            for x in named:
                if x not in cols or (known_codes is not None and x not in known_codes):
                    out.append(_lrow("line", where, stem, f"codes_str names unknown code {x!r}"))
    out += _missing_rows(rel, coded_keys, coded_reasons, mislabelled, ratings, log_reasons)
    return out


def _key_of(entry: object) -> tuple[str, str]:
    """A logged answer as ``(response kind, puzzle label)``: a bare puzzle id is a rating
    reason (the older form of ``log_reasons``)."""
    if isinstance(entry, tuple):
        return str(entry[0]), str(entry[1] or "")
    return "rating_reason", str(entry)


def _missing_rows(
    rel: str,
    coded_keys: Mapping[str, set[tuple[str, str]]],
    coded_reasons: Mapping[str, set[str]],
    mislabelled: Counter[str],
    ratings: SessionRatings | None,
    log_reasons: Mapping[str, Collection[object]] | None,
) -> list[dict[str, str]]:
    """Ledger rows (kept, on the coded file) for answers a coded row should code and none does.

    Two sources say which rows the file should hold for an analysed participant:

    - the logs: every rating reason they hold, and every other free-text answer of a response
      kind the file codes at all (``log_reasons``: participant -> ``(kind, puzzle label)``, or a
      bare puzzle id for a rating reason);
    - the file's own shape, for a participant it codes: a rating reason for each puzzle the
      session served once the participant has one (exports write a row for a skipped puzzle's
      empty reason too), and a row of each other kind that most coded participants have or
      that the file exports without an answer in the logs (one row per participant and
      question: an empty answer is exported too).

    A log question matches the response kind it names or ends with
    (``nonogram_size_experience_other`` is a ``size_experience_other`` answer).

    A rating reason coded under a puzzle the session did not serve (ledgered on its line)
    stands for one missing rating reason. Every drop of a row is seen by one of the two, however
    many rows are dropped, unless it removes all rows of a kind, or all rating reasons of a
    participant whose reasons the logs do not hold."""
    kinds = {k for keys in coded_keys.values() for k, _ in keys}

    def kind_of(question: str) -> str:
        # a log question names its response kind, or ends with it
        # (nonogram_size_experience_other -> size_experience_other)
        return next((k for k in sorted(kinds) if question.endswith("_" + k)), question)

    logged_keys: dict[str, set[tuple[str, str]]] = {}
    for pid, logged in (log_reasons or {}).items():
        keys = {_key_of(e) for e in logged}
        logged_keys[pid] = {(kind_of(k), label) for k, label in keys}
    expected: dict[str, set[tuple[str, str]]] = {}
    for pid, keys in logged_keys.items():
        expected[pid] = {k for k in keys if k[0] == "rating_reason" or k[0] in kinds}
    coded_pids = set(coded_keys)
    for kind in sorted(kinds - {"rating_reason"}):
        having = {pid for pid, keys in coded_keys.items() if any(k == kind for k, _ in keys)}
        # the file exports this question for everyone: most coded participants have a row,
        # or some row holds an answer the logs do not (an empty answer, exported all the same)
        unlogged = any((kind, "") not in logged_keys.get(pid, set()) for pid in having)
        if unlogged or 2 * len(having) > len(coded_pids):
            for pid in coded_pids - having:
                expected.setdefault(pid, set()).add((kind, ""))
    for pid in coded_pids:
        if ratings is not None and coded_reasons.get(pid):
            served = ratings.get(pid, {})
            expected.setdefault(pid, set()).update(("rating_reason", str(q)) for q in served)
    out = []
    for pid, want in sorted(expected.items()):
        have = coded_keys.get(pid, set())
        missing = sorted(want - have)
        reasons = [label for kind, label in missing if kind == "rating_reason"]
        others = [kind for kind, _ in missing if kind != "rating_reason"]
        # a rating reason coded under a puzzle the session did not serve stands for one of them
        if len(reasons) <= mislabelled[pid]:
            reasons = []
        if reasons:
            why = (
                f"the logs or {pid}'s other coded rows call for a rating reason of {pid} for "
                f"puzzle(s) {reasons} that no coded row codes (a row left out?): the theme "
                "tests see only the coded ones"
            )
            out.append(_lrow("file", rel, pid, why, "kept"))
        if others:
            why = (
                f"the logs or the file's other participants call for a {' and a '.join(others)} "
                f"answer of {pid} that no coded row codes (a row left out?): the theme tables "
                "count only the coded rows"
            )
            out.append(_lrow("file", rel, pid, why, "kept"))
    return out


def _lrow(
    level: str, source: str, id_: str, reason: str, action: str = "excluded"
) -> dict[str, str]:
    return {"level": level, "source": source, "id": id_, "reason": reason, "action": action}


def coded_themes_ledger(
    study_dir: Path,
    themes: dict[str, str],
    participant_ids: set[str],
    ratings: SessionRatings | None = None,
    outside_links: bool = False,
    log_reasons: Mapping[str, Collection[object]] | None = None,
) -> tuple[list[dict[str, str]], Path | None]:
    """Return the ledger rows of the study's coded-responses file and that file's path.

    ``themes`` is the preset's ``themes`` mapping (``coded_responses`` and optional ``codebook``,
    relative to ``study_dir``). Returns ``([], None)`` when the preset names no coded-responses
    file or it does not exist; codes are checked against the codebook when it exists. Both
    must lie inside the study folder (:func:`nonolab.study.presets.inside_study`; a link
    outside it only with ``outside_links``), else :class:`StudyError`.
    """
    opt = {OUTSIDE_LINKS: outside_links}

    def path(key: str) -> Path | None:
        return inside_study(study_dir, themes[key], f"themes.{key}", opt) if key in themes else None

    coded = path("coded_responses")
    if coded is None or not coded.is_file():
        return [], None
    book = path("codebook")
    known = codebook_codes(book) if book is not None and book.is_file() else None
    rows = check_coded_themes(
        coded, participant_ids, known, themes["coded_responses"], ratings, log_reasons
    )
    return rows, coded


_SECTION = re.compile(r"^##\s+(\w+)")
_ENTRY = re.compile(r"^\|\s*`([A-Z][A-Z_]*)`\s*\|([^|]*)\|([^|]*)\|")


def codebook_entries(path: str | Path) -> list[dict[str, str]]:
    """Return the codebook's codes in file order, one dict each: ``category`` (the first word of
    the ``## `` heading above the code's table, e.g. ``Difficulty``, ``Strategy``), ``code``,
    ``name`` and ``definition`` (the table's second and third cells, stripped)."""
    out, category = [], ""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if m := _SECTION.match(line):
            category = m.group(1)
        elif m := _ENTRY.match(line):
            code, name, definition = (g.strip() for g in m.groups())
            out.append({"category": category, "code": code, "name": name, "definition": definition})
    return out


def truncate_quote(text: str, max_chars: int = 180) -> str:
    """Return ``text`` with runs of whitespace collapsed; when longer than ``max_chars``
    characters, cut at the last word boundary within them and end with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    head = text[: max_chars + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else text[:max_chars]
    return cut.rstrip() + "\u2026"


def code_examples(
    responses: Iterable[tuple[str, Sequence[str], str]],
    overrides: Mapping[str, str] | None = None,
) -> dict[str, tuple[str, str]]:
    """Return one example response per code: ``code -> (response_id, text)``.

    ``responses``: ``(response_id, codes, text)``. For each code, the response carrying that
    code alone is preferred over one carrying several, then the shorter text, then the smaller
    ``response_id``. ``overrides`` (code -> response_id) replace a choice by hand; each must be
    a response carrying that code alone, else :class:`ValueError`.
    """
    best: dict[str, tuple[int, int, str, str]] = {}
    by_id: dict[str, tuple[Sequence[str], str]] = {}
    for rid, codes, text in responses:
        by_id[rid] = (codes, text)
        for code in codes:
            key = (0 if len(codes) == 1 else 1, len(text), rid, text)
            if code not in best or key < best[code]:
                best[code] = key
    out = {code: (k[2], k[3]) for code, k in best.items()}
    for code, rid in (overrides or {}).items():
        if rid not in by_id or list(by_id[rid][0]) != [code]:
            raise ValueError(f"example override {rid!r} for {code!r} is not coded {code!r} alone")
        out[code] = (rid, by_id[rid][1])
    return out


def codebook_examples(
    codebook: str | Path,
    responses: Iterable[tuple[str, Sequence[str], str]],
    overrides: Mapping[str, str] | None = None,
    max_chars: int = 180,
) -> list[dict[str, str]]:
    """Return the codebook table with examples (the paper's Table 4): one dict per codebook
    code in file order with ``category``, ``code``, ``name``, ``response_id`` and ``example``
    (:func:`truncate_quote` of the :func:`code_examples` choice; both empty when no response
    carries the code)."""
    examples = code_examples(responses, overrides)
    rows = []
    for e in codebook_entries(codebook):
        rid, text = examples.get(e["code"], ("", ""))
        quote = truncate_quote(text, max_chars) if text else ""
        rows.append({k: e[k] for k in ("category", "code", "name")} | {"response_id": rid})
        rows[-1]["example"] = quote
    return rows
