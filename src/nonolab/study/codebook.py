"""Coded survey themes: check that a coded-responses file names analysed participants and
codebook codes.

The ingest runs :func:`check_coded_themes` so that its findings are rows of the exclusion ledger;
the theme analysis (:mod:`nonolab.stats.themes`) reads the same files.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from nonolab.study.presets import OUTSIDE_LINKS, StudyError, inside_study

_CODE_ROW = re.compile(r"^\|\s*`([A-Z][A-Z_]*)`\s*\|")


def codebook_codes(path: str | Path) -> set[str]:
    """Return the codes defined in a Markdown codebook (table rows starting with a `CODE` cell)."""
    codes = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _CODE_ROW.match(line.strip())
        if m:
            codes.add(m.group(1))
    return codes


def check_coded_themes(
    path: str | Path,
    participant_ids: set[str],
    known_codes: set[str] | None,
    rel: str,
) -> list[dict[str, str]]:
    """Return ledger rows for a coded-responses CSV (one 0/1 ``code_*`` column per code).

    A repeat of an earlier row (same ``response_id``, or the same record when there is no
    ``response_id``; the theme analysis would count it twice), a row whose ``source_file`` stem
    (the published participant id) is not an analysed participant, a ``code_*`` column or
    ``codes_str`` entry that is not a known code, and a code value other than 0/1 are ledgered
    with ``file:line`` (CSV record end line); the theme analysis leaves out the first two
    (:func:`nonolab.stats.themes.select_coded_responses`). Raises
    :class:`StudyError` naming the file if it lacks ``source_file`` or is not UTF-8 CSV.
    """
    try:
        return _check_coded_themes(path, participant_ids, known_codes, rel)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise StudyError(f"{rel}: not a UTF-8 CSV coded-themes file ({exc})") from None


def _check_coded_themes(
    path: str | Path, participant_ids: set[str], known_codes: set[str] | None, rel: str
) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields = reader.fieldnames or []
        if "source_file" not in fields:
            raise StudyError(f"{rel}: coded-themes file has no source_file column")
        code_cols = [f for f in fields if f.startswith("code_")]
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
            stem = Path(rec.get("source_file") or "").stem
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
            for c in code_cols:
                if rec[c] not in ("0", "1", "0.0", "1.0"):
                    out.append(_lrow("line", where, stem, f"{c} = {rec[c]!r} is not 0/1"))
            named = [x for x in (rec.get("codes_str") or "").split("|") if x]
            for x in named:
                if x not in cols or (known_codes is not None and x not in known_codes):
                    out.append(_lrow("line", where, stem, f"codes_str names unknown code {x!r}"))
    return out


def _lrow(level: str, source: str, id_: str, reason: str) -> dict[str, str]:
    return {"level": level, "source": source, "id": id_, "reason": reason, "action": "excluded"}


def coded_themes_ledger(
    study_dir: Path,
    themes: dict[str, str],
    participant_ids: set[str],
    outside_links: bool = False,
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
    return check_coded_themes(coded, participant_ids, known, themes["coded_responses"]), coded


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
