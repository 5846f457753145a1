"""Puzzle file formats: readers for every black-and-white format in the benchmarks, and writers.

One entry point, :func:`read_puzzles`, dispatches on the extension and, for ``.txt``, on the
content. Supported (see ``../shared/benchmarks/README.md`` for the sources):

========================  ==========================================================  ======
format                    layout                                                      puzzles
========================  ==========================================================  ======
study JSON (``.json``)    list of ``{id, solution, clues}`` (:func:`load_study_puzzles`) many
Simpson ``.non``          ``width``/``height``/``rows``/``columns``/``goal`` keys      one
``.nonpack``              ``.non`` records separated by ``====`` lines                many
Wilk ``.nin``             ``W H``, H row lines, W column lines                        one
Olsak ``.mk``             ``H W``, H row lines, ``#``, W column lines                 one
Olsak ``.g``              free text, ``:`` line, rows, ``:`` line, columns, ``:``     one
``.cwd``                  H line, W line, H rows, blank line, W columns               one
ASP facts (``.lp``)       ``#const w/h``, ``row_hint(R, I, L).``, ``col_hint(...)``   one
nonogrid ``.toml``        ``[clues]`` with ``columns``/``rows`` strings               one
TAAI question ``.txt``    ``$N`` then 25 column lines then 25 row lines (TABs)        many
TAAI solution ``.txt``    ``$N`` then 25 rows of TAB-separated 0/1                    many
pynogram ``.txt``         INI-like ``[clues]`` with ``columns =``/``rows =``          one
SPOJ JCROSS ``.txt``      count, then per puzzle ``H W`` and 0-terminated clue lines   many
gramcracker ``.txt``      row lines, one blank line, column lines                     one
grid ``.txt``             rows of ``#``/``.`` (a solution; clues read off it)         one
========================  ==========================================================  ======

Colour puzzles and triddlers are refused with a :class:`FormatError` (nonolab is black and
white). Syntax errors raise :class:`FormatError` naming ``file:line``; clues that no grid can
satisfy (or that contradict a given solution) raise :class:`~nonolab.sat.puzzles.PuzzleError`, also
with ``file:line``. Labels: the file stem for single-puzzle files, ``stem:N`` for the N-th
(1-based, or the file's own number) puzzle of a multi-puzzle file, the study id for study JSON.

Writers: :func:`to_non`, :func:`to_nin`, :func:`to_taai` (and :func:`write_puzzles`); DIMACS via
:func:`to_dimacs` (``Encoding.to_dimacs``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from nonolab.core.tables import write_text
from nonolab.sat.puzzles import Clue, Grid, Puzzle, PuzzleError, load_study_puzzles


class FormatError(ValueError):
    """A puzzle file does not follow its format; the message names the file and line."""


_INT = re.compile(r"[0-9]{1,9}")  # ASCII digits; longer numbers are no sane puzzle size
_MAX_SIDE = 100_000  # refuse absurd sizes before allocating anything


def _err(source: str, line: int | None, msg: str) -> FormatError:
    where = f"{source}:{line}" if line is not None else source
    return FormatError(f"{where}: {msg}")


def _int(tok: str, source: str, line: int | None, what: str = "number") -> int:
    tok = tok.strip()
    if not _INT.fullmatch(tok):
        raise _err(source, line, f"expected a {what}, got {tok!r}")
    return int(tok)


def _size(tok: str, source: str, line: int | None, what: str) -> int:
    n = _int(tok, source, line, what)
    if not 1 <= n <= _MAX_SIDE:
        raise _err(source, line, f"{what} {n} is out of range 1..{_MAX_SIDE}")
    return n


def _clue(tokens: Sequence[str], source: str, line: int | None) -> Clue:
    """Return a clue from block-length tokens; ``[]`` or ``["0"]`` is the empty clue."""
    vals = []
    for t in tokens:
        if not _INT.fullmatch(t):
            if re.fullmatch(r"[0-9]+[A-Za-z]", t):
                raise _err(source, line, f"colour block {t!r}: colour puzzles are not supported")
            raise _err(source, line, f"expected a block length, got {t!r}")
        vals.append(int(t))
    if vals == [0]:
        return ()
    if any(v == 0 for v in vals):
        raise _err(source, line, f"block length 0 inside clue {' '.join(tokens)!r}")
    return tuple(vals)


def _make(
    rows: Sequence[Clue],
    cols: Sequence[Clue],
    label: str,
    source: str,
    line: int | None = None,
    solution: Grid | None = None,
) -> Puzzle:
    try:
        return Puzzle(rows=tuple(rows), cols=tuple(cols), solution=solution, label=label)
    except PuzzleError as exc:
        where = f"{source}:{line}" if line is not None else source
        raise PuzzleError(f"{where}: {exc}") from None


def _lines(text: str) -> list[str]:
    """Split on LF/CRLF/CR (not on the other separators ``str.splitlines`` knows)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return re.split(r"\r\n|\r|\n", text.removesuffix("\n").removesuffix("\r"))


def _stem(source: str) -> str:
    return Path(source).stem


# --------------------------------------------------------------------------------------------
# Simpson .non / .nonpack


def parse_non(text: str, source: str = "<non>", label: str | None = None) -> Puzzle:
    """Return the puzzle of one ``.non`` text (Simpson's format as extended by nonogram-db).

    Unknown keys are skipped; ``rows``/``columns`` are followed by exactly ``height``/``width``
    clue lines (comma-separated lengths; ``0`` or a blank line = empty clue); ``goal`` (quoted,
    unquoted, or on the following lines) is the solution, ``0`` empty and anything else filled.
    """
    lines = _lines(text)
    width = height = None
    rows = cols = None
    rows_line = 1
    goal: tuple[str, int] | None = None
    title = None
    i = 0
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        i += 1
        if not s:
            continue
        key, _, rest = s.partition(" ")
        key = key.strip()
        rest = rest.strip()
        if key in ("width", "height"):
            val = _size(rest, source, i, key)
            if key == "width":
                width = val
            else:
                height = val
        elif key in ("rows", "columns"):
            n = height if key == "rows" else width
            if n is None:
                raise _err(source, i, f"'{key}' comes before 'height'/'width'")
            if rest:
                raise _err(source, i, f"unexpected text after '{key}': {rest!r}")
            if i + n > len(lines):
                raise _err(source, i, f"'{key}' needs {n} clue lines, the file ends first")
            block = []
            for k in range(n):
                ln = lines[i + k].strip()
                toks = [t.strip() for t in ln.split(",")] if ln else []
                block.append(_clue(toks, source, i + k + 1))
            if key == "rows":
                rows, rows_line = block, i
            else:
                cols = block
            i += n
        elif key == "goal":
            if rest:
                goal = (rest.strip('"'), i)
            else:  # pbnsolve's readable variant: the grid on the following lines
                start = i
                buf = []
                while i < len(lines) and re.fullmatch(r"[0-9]+", lines[i].strip() or "-"):
                    buf.append(lines[i].strip())
                    i += 1
                goal = ("".join(buf), start)
        elif key == "title":
            title = rest.strip('"')
        elif key == "color":
            raise _err(source, i, "colour puzzles are not supported")
    if rows is None or cols is None:
        raise _err(source, None, "missing 'rows' or 'columns' block")
    assert width is not None and height is not None
    solution = None
    if goal is not None:
        g, gline = goal
        g = re.sub(r"\s", "", g)
        if len(g) != width * height:
            raise _err(source, gline, f"goal has {len(g)} cells, expected {width}x{height}")
        solution = tuple(
            tuple(0 if ch == "0" else 1 for ch in g[r * width : (r + 1) * width])
            for r in range(height)
        )
    del title  # kept in the file; the label is the file stem (titles are not unique)
    return _make(rows, cols, label or _stem(source), source, rows_line, solution)


def parse_nonpack(text: str, source: str = "<nonpack>") -> list[Puzzle]:
    """Return the puzzles of a ``.nonpack`` bundle (``.non`` records split by ``====`` lines)."""
    out: list[Puzzle] = []
    chunk: list[str] = []
    offset = 0
    for n, line in enumerate([*_lines(text), "===="], start=1):
        if line.strip() == "====":
            if any(x.strip() for x in chunk):
                # pad so that line numbers in messages refer to the bundle
                body = "\n" * offset + "\n".join(chunk)
                out.append(parse_non(body, source, label=f"{_stem(source)}:{len(out) + 1}"))
            chunk, offset = [], n
        else:
            chunk.append(line)
    if not out:
        raise _err(source, None, "no puzzle in the bundle")
    return out


def to_non(puzzle: Puzzle) -> str:
    """Return ``puzzle`` as ``.non`` text (title = label; ``goal`` when it has a solution)."""
    out = []
    if puzzle.label is not None:
        out.append(f'title "{puzzle.label}"')
    out += [f"width {puzzle.width}", f"height {puzzle.height}", "", "rows"]
    out += [",".join(map(str, c)) if c else "0" for c in puzzle.rows]
    out += ["", "columns"]
    out += [",".join(map(str, c)) if c else "0" for c in puzzle.cols]
    if puzzle.solution is not None:
        out += ["", 'goal "' + "".join(str(v) for row in puzzle.solution for v in row) + '"']
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# size-prefixed space-separated formats: .nin, .mk, .cwd


def _space_clue(line: str, source: str, n: int) -> Clue:
    return _clue(line.split(), source, n)


def parse_nin(text: str, source: str = "<nin>") -> Puzzle:
    """Return the puzzle of a ``.nin`` text: ``W H``, then H row lines, then W column lines."""
    lines = _lines(text)
    idx = [k for k, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    if not idx:
        raise _err(source, 1, "empty file")
    head = lines[idx[0]].split()
    if len(head) != 2:
        raise _err(source, idx[0] + 1, "first line must be 'WIDTH HEIGHT'")
    w = _size(head[0], source, idx[0] + 1, "width")
    h = _size(head[1], source, idx[0] + 1, "height")
    body = list(range(idx[0] + 1, len(lines)))
    while body and not lines[body[-1]].strip():
        body.pop()
    if len(body) != h + w:
        raise _err(source, None, f"expected {h} row and {w} column lines, found {len(body)} lines")
    clues = [_space_clue(lines[k], source, k + 1) for k in body]
    return _make(clues[:h], clues[h:], _stem(source), source, idx[0] + 1)


def parse_mk(text: str, source: str = "<mk>") -> Puzzle:
    """Return the puzzle of an Olsak ``.mk`` text: ``H W``, H rows, ``#``, W columns."""
    lines = _lines(text)
    first = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise _err(source, 1, "empty file")
    head = lines[first].split()
    if len(head) != 2:
        raise _err(source, first + 1, "first line must be 'HEIGHT WIDTH'")
    h = _size(head[0], source, first + 1, "height")
    w = _size(head[1], source, first + 1, "width")
    sep = next((k for k in range(first + 1, len(lines)) if lines[k].strip() == "#"), None)
    if sep is None:
        raise _err(source, None, "no '#' line between row and column clues")
    row_idx = list(range(first + 1, sep))
    col_idx = list(range(sep + 1, len(lines)))
    while col_idx and not lines[col_idx[-1]].strip():
        col_idx.pop()
    # pbnsolve reads a blank line as a blank clue; drop blank lines only if the count says so
    if len(row_idx) != h:
        row_idx = [k for k in row_idx if lines[k].strip()]
    if len(col_idx) != w:
        col_idx = [k for k in col_idx if lines[k].strip()]
    if len(row_idx) != h:
        raise _err(source, sep + 1, f"expected {h} row clue lines before '#', found {len(row_idx)}")
    if len(col_idx) != w:
        raise _err(
            source, sep + 1, f"expected {w} column clue lines after '#', found {len(col_idx)}"
        )
    rows = [_space_clue(lines[k], source, k + 1) for k in row_idx]
    cols = [_space_clue(lines[k], source, k + 1) for k in col_idx]
    return _make(rows, cols, _stem(source), source, first + 1)


def parse_cwd(text: str, source: str = "<cwd>") -> Puzzle:
    """Return the puzzle of a ``.cwd`` text: H line, W line, H rows, blank line, W columns."""
    lines = [ln for ln in _lines(text)]
    nonblank = [k for k, ln in enumerate(lines) if ln.strip()]
    if len(nonblank) < 2:
        raise _err(source, 1, "expected a height line and a width line")
    h = _size(lines[nonblank[0]], source, nonblank[0] + 1, "height")
    w = _size(lines[nonblank[1]], source, nonblank[1] + 1, "width")
    body = nonblank[2:]
    if len(body) != h + w:
        raise _err(source, None, f"expected {h} row and {w} column lines, found {len(body)}")
    clues = [_space_clue(lines[k], source, k + 1) for k in body]
    return _make(clues[:h], clues[h:], _stem(source), source, nonblank[0] + 1)


def to_nin(puzzle: Puzzle) -> str:
    """Return ``puzzle`` as ``.nin`` text (``W H``, rows, columns; ``0`` = empty clue)."""
    out = [f"{puzzle.width} {puzzle.height}"]
    out += [" ".join(map(str, c)) if c else "0" for c in (*puzzle.rows, *puzzle.cols)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Olsak .g


def parse_g(text: str, source: str = "<g>") -> Puzzle:
    """Return the puzzle of an Olsak ``.g`` text (black and white only).

    Text before the first line starting with ``:`` is comment; the next ``:`` line ends the
    row clues, the third (or the end of the file) ends the column clues. Blank lines inside a
    clue section are ignored; an empty clue is ``0``. A ``#d`` colour block or colour-suffixed
    lengths (``3b``) raise :class:`FormatError`, as does a ``#t``/``#T`` triddler.
    """
    lines = _lines(text)
    marks = []
    for k, ln in enumerate(lines):
        if ln.startswith("#t") or ln.startswith("#T"):
            raise _err(source, k + 1, "triddlers (hexagonal puzzles) are not supported")
        if ln.startswith("#d") and not marks:
            raise _err(source, k + 1, "colour declarations: colour puzzles are not supported")
        if ln.startswith(":"):
            marks.append(k)
    if len(marks) < 2:
        raise _err(source, None, "expected ':' lines opening the row and column sections")
    end = marks[2] if len(marks) > 2 else len(lines)
    sections = []
    for a, b in ((marks[0], marks[1]), (marks[1], end)):
        sections.append(
            [_space_clue(lines[k], source, k + 1) for k in range(a + 1, b) if lines[k].strip()]
        )
    if not sections[0] or not sections[1]:
        raise _err(source, marks[0] + 1, "empty row or column section")
    return _make(sections[0], sections[1], _stem(source), source, marks[0] + 1)


# --------------------------------------------------------------------------------------------
# ASP facts (.lp, gramcracker)

_LP_FACT = re.compile(
    r"(row_hint|col_hint)\(\s*([0-9]{1,9})\s*,\s*([0-9]{1,9})\s*,\s*([0-9]{1,9})\s*\)\s*\."
)
_LP_CONST = re.compile(r"#const\s+([wh])\s*=\s*([0-9]{1,9})\s*\.")


def parse_lp(text: str, source: str = "<lp>") -> Puzzle:
    """Return the puzzle of an ASP instance (``#const w/h``, ``row_hint(R, I, L).``, ...).

    Rows, columns and block indices are 1-based; a line with no facts (or one fact of length 0)
    is empty. ``%`` starts a comment.
    """
    size: dict[str, int] = {}
    hints: dict[str, dict[int, dict[int, int]]] = {"row_hint": {}, "col_hint": {}}
    for n, raw in enumerate(_lines(text), start=1):
        s = raw.split("%", 1)[0].strip()
        if not s:
            continue
        pos = 0
        while pos < len(s):
            m = _LP_CONST.match(s, pos) or _LP_FACT.match(s, pos)
            if m is None:
                raise _err(source, n, f"cannot read {s[pos:]!r}")
            if m.re is _LP_CONST:
                size[m.group(1)] = _size(m.group(2), source, n, m.group(1))
            else:
                kind, line, k, length = m.group(1), *map(int, m.group(2, 3, 4))
                blocks = hints[kind].setdefault(line, {})
                if k in blocks:
                    raise _err(source, n, f"{kind}({line}, {k}, ...) given twice")
                blocks[k] = length
            pos = m.end()
            while pos < len(s) and s[pos] == " ":
                pos += 1
    if set(size) != {"w", "h"}:
        raise _err(source, None, "missing '#const w = ...' or '#const h = ...'")

    def clues(kind: str, n: int) -> list[Clue]:
        out = []
        extra = set(hints[kind]) - set(range(1, n + 1))
        if extra:
            raise _err(source, None, f"{kind} for line {min(extra)} outside 1..{n}")
        for i in range(1, n + 1):
            blocks = hints[kind].get(i, {})
            if sorted(blocks) != list(range(1, len(blocks) + 1)):
                raise _err(source, None, f"{kind} line {i}: block indices are not 1..k")
            vals = [str(blocks[k]) for k in sorted(blocks)]
            out.append(_clue(vals, source, None) if vals else ())
        return out

    return _make(clues("row_hint", size["h"]), clues("col_hint", size["w"]), _stem(source), source)


# --------------------------------------------------------------------------------------------
# pynogram INI-like .txt and nonogrid .toml


def _clue_list(value: str, source: str, line0: int) -> list[Clue]:
    """Parse a pynogram/nonogrid clue list: clues split by newlines/commas, comments removed."""
    out = []
    for k, raw in enumerate(value.split("\n")):
        s = re.split(r"[#;]", raw, maxsplit=1)[0]
        for item in s.split(","):
            item = item.strip().strip("'\"").strip()
            if item:
                out.append(_clue(item.split(), source, line0 + k))
    return out


def parse_pynogram(text: str, source: str = "<pynogram>") -> Puzzle:
    """Return the puzzle of a pynogram INI-like text (``[clues]`` with ``columns =``/``rows =``)."""
    lines = _lines(text)
    section = None
    current = None
    values: dict[str, list[str]] = {}
    starts: dict[str, int] = {}
    for n, raw in enumerate(lines, start=1):
        s = re.split(r"[#;]", raw, maxsplit=1)[0]
        st = s.strip()
        if not st:
            continue
        if m := re.fullmatch(r"\[(\w+)\]", st):
            section, current = m.group(1).lower(), None
            continue
        if section == "colors":
            raise _err(source, n, "colour definitions: colour puzzles are not supported")
        if section != "clues":
            raise _err(source, n, f"text outside the [clues] section: {st!r}")
        if m := re.fullmatch(r"(columns|rows)\s*=(.*)", st):
            current = m.group(1)
            if current in values:
                raise _err(source, n, f"'{current}' given twice")
            values[current] = [m.group(2)]
            starts[current] = n
        elif current is None:
            raise _err(source, n, f"expected 'columns =' or 'rows =', got {st!r}")
        else:
            values[current].append(s)
    if set(values) != {"columns", "rows"}:
        raise _err(source, None, "the [clues] section needs both 'columns' and 'rows'")
    rows = _clue_list("\n".join(values["rows"]), source, starts["rows"])
    cols = _clue_list("\n".join(values["columns"]), source, starts["columns"])
    return _make(rows, cols, _stem(source), source, starts["rows"])


def parse_toml(text: str, source: str = "<toml>") -> Puzzle:
    """Return the puzzle of a nonogrid ``.toml`` text (``[clues]`` ``columns``/``rows`` strings)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _err(source, None, f"not valid TOML ({exc})") from None
    colors = data.get("colors", {})
    if colors and (not isinstance(colors, dict) or colors.get("defs")):
        raise _err(source, None, "colour definitions: colour puzzles are not supported")
    clues = data.get("clues")
    if not isinstance(clues, dict):
        raise _err(source, None, "missing [clues] table")
    parts = {}
    for key in ("rows", "columns"):
        val = clues.get(key)
        if isinstance(val, list) and all(isinstance(x, str | int) for x in val):
            val = "\n".join(map(str, val))
        if not isinstance(val, str):
            raise _err(source, None, f"[clues] {key} must be a string")
        line = next(
            (n for n, ln in enumerate(_lines(text), 1) if re.match(rf"\s*{key}\s*=", ln)), None
        )
        parts[key] = _clue_list(val, source, line or 1)
    return _make(parts["rows"], parts["columns"], _stem(source), source)


# --------------------------------------------------------------------------------------------
# TAAI tournament files


def _taai_records(lines: list[str], source: str) -> list[tuple[str, int, list[int]]]:
    """Return ``(number, header line, body line indices)`` per ``$N`` record."""
    recs: list[tuple[str, int, list[int]]] = []
    for k, ln in enumerate(lines):
        if ln.startswith("$"):
            num = ln[1:].strip()
            if not _INT.fullmatch(num):
                raise _err(source, k + 1, f"record header must be '$N', got {ln!r}")
            recs.append((num, k + 1, []))
        elif not recs:
            if ln.strip():
                raise _err(source, k + 1, "text before the first '$N' record header")
        else:
            recs[-1][2].append(k)
    if not recs:
        raise _err(source, 1, "no '$N' record header")
    return recs


def parse_taai(text: str, source: str = "<taai>", size: int = 25) -> list[Puzzle]:
    """Return the puzzles of a TAAI question text: per ``$N``, ``size`` column then ``size``
    row clue lines (TAB-separated lengths; an empty line is an empty clue)."""
    lines = _lines(text)
    out = []
    for num, hline, body in _taai_records(lines, source):
        if len(body) == 2 * size + 1 and not lines[body[-1]].strip():
            body = body[:-1]  # tolerate one blank line between records
        if len(body) != 2 * size:
            raise _err(
                source, hline, f"record ${num} has {len(body)} clue lines, expected {2 * size}"
            )
        clues = [
            _clue([t for t in lines[k].split("\t") if t.strip()], source, k + 1)
            if lines[k].strip()
            else ()
            for k in body
        ]
        out.append(_make(clues[size:], clues[:size], f"{_stem(source)}:{num}", source, hline))
    return out


def parse_taai_solutions(text: str, source: str = "<taai>", size: int = 25) -> dict[str, Grid]:
    """Return ``{N: grid}`` from a TAAI solution text (``$N`` then ``size`` rows of 0/1)."""
    lines = _lines(text)
    out: dict[str, Grid] = {}
    for num, hline, body in _taai_records(lines, source):
        body = [k for k in body if lines[k].strip()]
        if len(body) != size:
            raise _err(source, hline, f"solution ${num} has {len(body)} rows, expected {size}")
        grid = []
        for k in body:
            cells = lines[k].strip().split("\t")
            if len(cells) != size or any(c not in ("0", "1") for c in cells):
                raise _err(source, k + 1, f"expected {size} TAB-separated 0/1 cells")
            grid.append(tuple(int(c) for c in cells))
        if num in out:
            raise _err(source, hline, f"solution ${num} given twice")
        out[num] = tuple(grid)
    return out


def read_taai_solutions(path: str | Path, size: int = 25) -> dict[str, Grid]:
    """Return ``{puzzle number: grid}`` of a TAAI solution file."""
    path = Path(path)
    return parse_taai_solutions(_read_text(path), str(path), size)


def attach_solutions(puzzles: Iterable[Puzzle], solutions: dict[str, Grid]) -> list[Puzzle]:
    """Return ``puzzles`` with the solution whose key is the label's part after ``:``.

    Each solution is checked against the clues (:class:`PuzzleError` on a mismatch); a puzzle
    with no solution in ``solutions`` raises ``KeyError``.
    """
    out = []
    for p in puzzles:
        key = (p.label or "").rsplit(":", 1)[-1]
        if key not in solutions:
            raise KeyError(f"no solution for puzzle {p.label!r}")
        try:
            out.append(Puzzle(p.rows, p.cols, solution=solutions[key], label=p.label))
        except PuzzleError as exc:
            raise PuzzleError(f"solution ${key}: {exc}") from None
    return out


def to_taai(puzzles: Iterable[Puzzle]) -> str:
    """Return square puzzles as TAAI question text (``$N`` = 1, 2, ...; columns first)."""
    out = []
    for n, p in enumerate(puzzles, start=1):
        if p.height != p.width:
            raise ValueError(f"TAAI puzzles are square; {p.label!r} is {p.height}x{p.width}")
        out.append(f"${n}")
        out += ["\t".join(map(str, c)) for c in (*p.cols, *p.rows)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# SPOJ JCROSS, gramcracker text, grids


def parse_spoj(text: str, source: str = "<spoj>") -> list[Puzzle]:
    """Return the puzzles of a SPOJ JCROSS text: a count, then per puzzle ``H W`` and H row
    then W column lines, each terminated by a ``0`` sentinel."""
    lines = [(k + 1, ln) for k, ln in enumerate(_lines(text)) if ln.strip()]
    if not lines:
        raise _err(source, 1, "empty file")
    count = _int(lines[0][1], source, lines[0][0], "puzzle count")
    pos = 1
    out = []
    for i in range(count):
        if pos >= len(lines):
            raise _err(source, None, f"puzzle {i + 1} of {count} is missing")
        n, head = lines[pos]
        parts = head.split()
        if len(parts) != 2:
            raise _err(source, n, "expected 'HEIGHT WIDTH'")
        h, w = _size(parts[0], source, n, "height"), _size(parts[1], source, n, "width")
        if pos + 1 + h + w > len(lines):
            raise _err(source, n, f"puzzle {i + 1} needs {h + w} clue lines, the file ends first")
        clues = []
        for ln_no, ln in lines[pos + 1 : pos + 1 + h + w]:
            toks = ln.split()
            if not toks or toks[-1] != "0":
                raise _err(source, ln_no, "clue line must end with the sentinel 0")
            clues.append(_clue(toks[:-1] or ["0"], source, ln_no))
        out.append(_make(clues[:h], clues[h:], f"{_stem(source)}:{i + 1}", source, n))
        pos += 1 + h + w
    if pos != len(lines):
        raise _err(source, lines[pos][0], f"text after the {count} puzzles announced")
    return out


def parse_rows_blank_cols(text: str, source: str = "<txt>") -> Puzzle:
    """Return the puzzle of a gramcracker text: row clue lines, one blank line, column lines."""
    lines = _lines(text)
    groups: list[list[int]] = []
    prev_blank = True
    for k, ln in enumerate(lines):
        if ln.strip():
            if prev_blank:
                groups.append([])
            groups[-1].append(k)
            prev_blank = False
        else:
            prev_blank = True
    if len(groups) != 2:
        raise _err(
            source,
            None,
            f"expected row clues, one blank line, column clues; found {len(groups)} blocks",
        )
    rows = [_space_clue(lines[k], source, k + 1) for k in groups[0]]
    cols = [_space_clue(lines[k], source, k + 1) for k in groups[1]]
    return _make(rows, cols, _stem(source), source, 1)


def parse_grid(text: str, source: str = "<grid>") -> Grid:
    """Return a grid written as rows of ``#`` (filled) and ``.`` (empty)."""
    rows = []
    for k, ln in enumerate(_lines(text), start=1):
        s = ln.strip()
        if not s:
            continue
        if not re.fullmatch(r"[#.]+", s):
            raise _err(source, k, "grid rows hold only '#' and '.'")
        rows.append(tuple(int(ch == "#") for ch in s))
    if not rows:
        raise _err(source, 1, "empty grid")
    if len({len(r) for r in rows}) != 1:
        raise _err(source, None, "grid rows have different lengths")
    return tuple(rows)


def parse_grid_puzzle(text: str, source: str = "<grid>") -> Puzzle:
    """Return the puzzle whose clues are read off a ``#``/``.`` grid (which is its solution)."""
    return Puzzle.from_grid(parse_grid(text, source), label=_stem(source))


# --------------------------------------------------------------------------------------------
# dispatch


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"puzzle file {path} does not exist") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _err(str(path), None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def sniff_txt(text: str) -> str:
    """Return the format name of a ``.txt`` text: ``taai``, ``taai_solution``, ``pynogram``,
    ``spoj``, ``grid`` or ``rows_blank_cols`` (the fallback)."""
    lines = [ln for ln in _lines(text)]
    nonblank = [ln.strip() for ln in lines if ln.strip()]
    if not nonblank:
        return "rows_blank_cols"
    first = nonblank[0]
    if first.startswith("$"):
        k = next((i for i, ln in enumerate(lines) if ln.startswith("$")), 0)
        body = []
        for ln in lines[k + 1 :]:
            if ln.startswith("$"):
                break
            body.append(ln)
        while body and not body[-1].strip():
            body.pop()
        if (
            body
            and len(body) == len(body[0].split("\t"))
            and all(re.fullmatch(r"[01](\t[01])*", b.strip()) for b in body)
        ):
            return "taai_solution"
        return "taai"
    if any(re.fullmatch(r"\[\w+\]", ln.split("#")[0].split(";")[0].strip()) for ln in nonblank):
        return "pynogram"
    if all(re.fullmatch(r"[#.]+", ln) for ln in nonblank):
        return "grid"
    content = "\n".join(lines).strip("\n")
    one_block = not re.search(r"\n[ \t]*\n", content)
    if one_block and _INT.fullmatch(first) and len(nonblank) > 1:
        if re.fullmatch(r"\d+\s+\d+", nonblank[1]):
            return "spoj"
    return "rows_blank_cols"


_ONE: dict[str, Callable[[str, str], Puzzle]] = {
    ".non": parse_non,
    ".nin": parse_nin,
    ".mk": parse_mk,
    ".g": parse_g,
    ".cwd": parse_cwd,
    ".lp": parse_lp,
    ".toml": parse_toml,
}
_TXT: dict[str, Callable[[str, str], list[Puzzle]]] = {
    "taai": parse_taai,
    "taai_solution": lambda t, s: [
        Puzzle.from_grid(g, label=f"{_stem(s)}:{n}") for n, g in parse_taai_solutions(t, s).items()
    ],
    "pynogram": lambda t, s: [parse_pynogram(t, s)],
    "spoj": parse_spoj,
    "grid": lambda t, s: [parse_grid_puzzle(t, s)],
    "rows_blank_cols": lambda t, s: [parse_rows_blank_cols(t, s)],
}

#: Every puzzle format name (``fmt``); ``table`` (``.csv``/``.parquet``) only through
#: :func:`nonolab.measure.puzzle_files.read_puzzles`, which reads every format.
FORMATS: tuple[str, ...] = (
    "json",
    "table",
    "nonpack",
    *(ext[1:] for ext in _ONE),
    *_TXT,
)


def parse_text(text: str, fmt: str, source: str = "<text>") -> list[Puzzle]:
    """Return the puzzles of ``text`` read as format ``fmt`` (a name in :data:`FORMATS` other
    than ``json``/``table``, or ``txt`` to sniff)."""
    if fmt == "txt":
        fmt = sniff_txt(text)
    if f".{fmt}" in _ONE:
        return [_ONE[f".{fmt}"](text, source)]
    if fmt == "nonpack":
        return parse_nonpack(text, source)
    if fmt in _TXT:
        return _TXT[fmt](text, source)
    raise ValueError(f"unknown puzzle format {fmt!r}; known: {', '.join(FORMATS)}")


def read_puzzles(path: str | Path, fmt: str | None = None) -> list[Puzzle]:
    """Return every puzzle in the file ``path``, labelled (see the module docstring).

    ``fmt`` overrides detection (a name in :data:`FORMATS`); by default the extension decides,
    and ``.txt`` files are sniffed (:func:`sniff_txt`). Tables (``.csv``/``.parquet``, format
    ``table``) need pandas and are read by :func:`nonolab.measure.puzzle_files.read_puzzles`; here
    they raise :class:`FormatError`. Raises :class:`FormatError` or :class:`PuzzleError` naming
    the file and line, ``FileNotFoundError`` for a missing file.
    """
    path = Path(path)
    ext = path.suffix.lower()
    fmt = fmt or {".json": "json", ".csv": "table", ".parquet": "table"}.get(ext)
    if fmt == "json":
        return load_study_puzzles(path)
    if fmt == "table":
        raise FormatError(
            f"{path}: puzzle tables are read with nonolab.measure.puzzle_files.read_puzzles"
        )
    if fmt is None:
        if ext == ".nonpack":
            fmt = "nonpack"
        elif ext in _ONE:
            fmt = ext[1:]
        elif ext in (".txt", ""):
            fmt = "txt"
        else:
            raise FormatError(
                f"{path}: unknown puzzle file extension {ext!r}; give the format explicitly "
                f"(one of {', '.join(FORMATS)})"
            )
    return parse_text(_read_text(path), fmt, str(path))


# --------------------------------------------------------------------------------------------
# writers


def to_dimacs(puzzle: Puzzle, encoding: str = "block_start") -> str:
    """Return the DIMACS CNF of ``puzzle`` under ``encoding`` (``Encoding.to_dimacs``)."""
    from nonolab.sat.encodings import get_encoding

    return get_encoding(encoding)(puzzle).to_dimacs()


_WRITERS: dict[str, Callable[[Sequence[Puzzle]], str]] = {
    "non": lambda ps: "====\n".join(to_non(p) for p in ps),
    "nin": lambda ps: "".join(to_nin(p) for p in ps),
    "taai": to_taai,
}


def write_puzzles(puzzles: Sequence[Puzzle], path: str | Path, fmt: str | None = None) -> None:
    """Write ``puzzles`` to ``path`` as ``non`` (several: a ``====`` bundle), ``nin`` (one
    puzzle) or ``taai``; ``fmt`` defaults from the extension."""
    path = Path(path)
    fmt = fmt or {".non": "non", ".nonpack": "non", ".nin": "nin", ".txt": "taai"}.get(
        path.suffix.lower()
    )
    if fmt not in _WRITERS:
        raise ValueError(f"cannot write format {fmt!r}; writable: {sorted(_WRITERS)}")
    if fmt == "nin" and len(puzzles) != 1:
        raise ValueError(".nin holds exactly one puzzle")
    if fmt == "non" and len(puzzles) > 1 and path.suffix.lower() == ".non":
        raise ValueError("several puzzles go in a .nonpack bundle, not a .non file")
    write_text(path, _WRITERS[fmt](list(puzzles)))
