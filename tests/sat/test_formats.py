"""Puzzle file formats: hand-written examples, errors naming file and line, round trips, and
cross-checks between the benchmark copies of the same puzzles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.sat.formats import (
    FORMATS,
    FormatError,
    attach_solutions,
    parse_cwd,
    parse_g,
    parse_grid,
    parse_lp,
    parse_mk,
    parse_nin,
    parse_non,
    parse_nonpack,
    parse_pynogram,
    parse_rows_blank_cols,
    parse_spoj,
    parse_taai,
    parse_taai_solutions,
    parse_text,
    parse_toml,
    read_puzzles,
    read_taai_solutions,
    sniff_txt,
    to_dimacs,
    to_nin,
    to_non,
    to_taai,
    write_puzzles,
)
from nonolab.sat.puzzles import Puzzle, PuzzleError

# One small puzzle written in every format by hand: the grid
#   # # .
#   . # #
# rows [2], [2]; columns [1], [2], [1].
ROWS = ((2,), (2,))
COLS = ((1,), (2,), (1,))
SOLUTION = ((1, 1, 0), (0, 1, 1))

EXAMPLES = {
    "non": 'title "t"\nwidth 3\nheight 2\n\nrows\n2\n2\n\ncolumns\n1\n2\n1\n\ngoal "110011"\n',
    "nin": "3 2\n2\n2\n1\n2\n1\n",
    "mk": "2 3\n2\n2\n#\n1\n2\n1\n",
    "cwd": "2\n3\n2\n2\n\n1\n2\n1\n",
    "g": "comment\n: rows\n2\n2\n: columns\n1\n2\n1\n: end\n",
    "lp": (
        "#const w = 3.\n#const h = 2.\n% rows\nrow_hint(1, 1, 2).\nrow_hint(2, 1, 2).\n"
        "col_hint(1, 1, 1). col_hint(2, 1, 2).\ncol_hint(3, 1, 1).\n"
    ),
    "toml": '[clues]\ncolumns = """\n  1, 2,\n  1   # last\n"""\nrows = "2, 2"\n',
    "pynogram": "# c\n[clues]\ncolumns =\n    1\n    2  ; two\n\n    1\nrows = 2, '2'\n",
    "rows_blank_cols": "2 \n2 \n\n1 \n2 \n1 \n",
    "spoj": "1\n2 3\n2 0\n2 0\n1 0\n2 0\n1 0\n",
}


@pytest.mark.parametrize("fmt", sorted(EXAMPLES))
def test_hand_written_examples(fmt):
    (p,) = parse_text(EXAMPLES[fmt], fmt, f"x.{fmt}")
    assert (p.rows, p.cols) == (ROWS, COLS)
    if fmt == "non":
        assert p.solution == SOLUTION


def test_txt_sniffing():
    assert sniff_txt(EXAMPLES["pynogram"]) == "pynogram"
    assert sniff_txt(EXAMPLES["rows_blank_cols"]) == "rows_blank_cols"
    assert sniff_txt(EXAMPLES["spoj"]) == "spoj"
    assert sniff_txt("##.\n.##\n") == "grid"
    assert sniff_txt("$1\n1\t0\n0\t1\n") == "taai_solution"
    assert sniff_txt("$1\n1\n1\n1\n1\n") == "taai"


def test_empty_clues():
    # 0 and blank lines are empty clues where the format allows them
    p = parse_non("width 2\nheight 2\nrows\n0\n\ncolumns\n0\n0\n", "e.non")
    assert p.rows == ((), ()) and p.cols == ((), ())
    (q,) = parse_taai("$1\n1\n\n1\n\n", "e.txt", size=2)
    assert q.cols == ((1,), ()) and q.rows == ((1,), ())
    (s,) = parse_spoj("1\n1 2\n0\n0\n0\n", "s.txt")
    assert s.rows == ((),) and s.cols == ((), ())


def test_taai_columns_first_and_solutions():
    # 2x2 TAAI-style record (size 2): columns [1], [1, ] then rows [2], []
    (p,) = parse_taai("$7\n1\n1\n2\n\n", "q.txt", size=2)
    assert p.label == "q:7"
    assert p.cols == ((1,), (1,)) and p.rows == ((2,), ())
    sols = parse_taai_solutions("$7\n1\t1\n0\t0\n", "s.txt", size=2)
    (ps,) = attach_solutions([p], sols)
    assert ps.solution == ((1, 1), (0, 0))
    with pytest.raises(PuzzleError, match=r"solution \$7"):
        attach_solutions([p], {"7": ((0, 0), (1, 1))})
    with pytest.raises(KeyError):
        attach_solutions([p], {})


def test_crlf_and_bom():
    p = parse_nin("\ufeff3 2\r\n2\r\n2\r\n1\r\n2\r\n1\r\n", "crlf.nin")
    assert (p.rows, p.cols) == (ROWS, COLS)


@pytest.mark.parametrize(
    ("parser", "text", "pattern"),
    [
        (parse_nin, "3 2\n2\n2\nx\n2\n1\n", r"bad\.nin:4: expected a block length"),
        (parse_nin, "3 2\n2\n2\n", r"bad\.nin: expected 2 row and 3 column lines"),
        (parse_non, "width 3\nheight 2\nrows\n2\n", r"bad\.non:3: 'rows' needs 2 clue lines"),
        (parse_non, "rows\n", r"bad\.non:1: 'rows' comes before"),
        (parse_mk, "2 3\n2\n2\n1\n2\n1\n", r"bad\.mk: no '#' line"),
        (parse_lp, "#const w = 3.\nrow_hint(1,1,x).\n", r"bad\.lp:2: cannot read"),
        (parse_g, "#d\n r:r red\n:\n1r\n:\n1r\n", r"bad\.g:1: colour declarations"),
        (parse_g, "#t\n:\n1\n:\n1\n", r"bad\.g:1: triddlers"),
        (parse_pynogram, "[colors]\nr = (red) *\n", r"bad\.txt:2: colour"),
        (parse_taai, "$1\n1\n", r"bad\.txt:1: record \$1 has 1 clue lines, expected 50"),
        (parse_spoj, "1\n1 1\n1\n1 0\n", r"bad\.txt:3: clue line must end with the sentinel 0"),
        (parse_rows_blank_cols, "1\n1\n", r"bad\.txt: expected row clues, one blank line"),
        (parse_non, "width 2\nheight 1\nrows\n1,0\ncolumns\n1\n0\n", r"bad\.non:4: block length 0"),
        (parse_cwd, "2\n3\n2\n", r"bad\.txt: expected 2 row and 3 column lines, found 1"),
        (parse_toml, "[clues]\nrows = 5\ncolumns = '1'\n", r"bad\.txt: \[clues\] rows must be"),
        (parse_toml, "[clues\n", r"bad\.txt: not valid TOML"),
    ],
)
def test_format_errors_name_file_and_line(parser, text, pattern):
    name = "bad." + {parse_g: "g", parse_lp: "lp", parse_mk: "mk", parse_nin: "nin"}.get(
        parser, "non" if parser is parse_non else "txt"
    )
    with pytest.raises(FormatError, match=pattern):
        parser(text, name)


def test_inconsistent_clues_are_puzzle_errors():
    # rows fill 4 cells, columns 3
    with pytest.raises(PuzzleError, match=r"bad\.nin:1: .*row clues fill 4 cells"):
        parse_nin("2 2\n2\n2\n1\n2\n", "bad.nin")
    # goal contradicts the clues
    with pytest.raises(PuzzleError, match=r"bad\.non:\d+: .*does not match"):
        parse_non(EXAMPLES["non"].replace("110011", "111000"), "bad.non")


def test_read_puzzles_dispatch(tmp_path):
    for fmt, text in EXAMPLES.items():
        ext = {"pynogram": "txt", "rows_blank_cols": "txt", "spoj": "txt"}.get(fmt, fmt)
        f = tmp_path / f"ex_{fmt}.{ext}"
        f.write_text(text)
        (p,) = read_puzzles(f)
        assert (p.rows, p.cols) == (ROWS, COLS), fmt
        assert p.label in (f"ex_{fmt}", f"ex_{fmt}:1")
    with pytest.raises(FileNotFoundError):
        read_puzzles(tmp_path / "missing.non")
    (tmp_path / "x.weird").write_text("1")
    with pytest.raises(FormatError, match="unknown puzzle file extension"):
        read_puzzles(tmp_path / "x.weird")
    (tmp_path / "bin.nin").write_bytes(b"\xff\xfe")
    with pytest.raises(FormatError, match="not UTF-8"):
        read_puzzles(tmp_path / "bin.nin")
    assert {"non", "nin", "taai", "json"} <= set(FORMATS)


def test_nonpack_and_writers(tmp_path):
    p = Puzzle(ROWS, COLS, solution=SOLUTION, label="a")
    q = Puzzle.from_grid(((1, 0), (1, 1)), label="b")
    write_puzzles([p, q], tmp_path / "two.nonpack")
    got = read_puzzles(tmp_path / "two.nonpack")
    assert got == [p, q] and [g.label for g in got] == ["two:1", "two:2"]
    assert [g.solution for g in got] == [p.solution, q.solution]
    with pytest.raises(ValueError):
        write_puzzles([p, q], tmp_path / "two.non")
    write_puzzles([p], tmp_path / "one.nin")
    assert read_puzzles(tmp_path / "one.nin") == [p]
    assert parse_nonpack("====\n" + to_non(p) + "====\n====\n", "x.nonpack") == [p]


def test_dimacs_writer():
    p = Puzzle(ROWS, COLS)
    text = to_dimacs(p)
    lines = text.splitlines()
    header = next(ln for ln in lines if ln.startswith("p cnf"))
    _, _, nv, nc = header.split()
    body = [ln for ln in lines if ln and ln[0] not in "cp"]
    assert int(nc) == len(body)
    assert all(ln.endswith(" 0") for ln in body)
    assert max(abs(int(x)) for ln in body for x in ln.split()) == int(nv)


grids = st.integers(1, 7).flatmap(
    lambda h: st.integers(1, 7).flatmap(
        lambda w: st.lists(
            st.lists(st.integers(0, 1), min_size=w, max_size=w), min_size=h, max_size=h
        )
    )
)


@settings(max_examples=100, deadline=None)
@given(grid=grids)
def test_round_trip_non_nin(grid):
    p = Puzzle.from_grid(grid, label="r")
    back = parse_non(to_non(p), "r.non")
    assert back == p and back.solution == p.solution and back.hash == p.hash
    assert parse_nin(to_nin(p), "r.nin") == p


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 8), seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3))
def test_round_trip_taai(n, seed, k):
    rng = np.random.default_rng(seed)
    ps = [Puzzle.from_grid(rng.integers(0, 2, (n, n))) for _ in range(k)]
    back = parse_taai(to_taai(ps), "t.txt", size=n)
    assert back == ps
    assert [b.label for b in back] == [f"t:{i}" for i in range(1, k + 1)]


def test_grid_text():
    assert parse_grid("#.\n.#\n") == ((1, 0), (0, 1))
    with pytest.raises(FormatError, match="different lengths"):
        parse_grid("#.\n#\n", "g.txt")


# ---- the benchmark copies: the same puzzle in several formats must hash the same


@pytest.fixture(scope="module")
def bench(bench_dir):
    def h(rel):
        return read_puzzles(bench_dir / rel)

    return h


GC = "danioellay+gramcracker/nonograms/"
FNS = "hyouv+FastNonogramSolver/puzzles/survey/"
DB = "mikix+nonogram-db/db/webpbn/"


@pytest.mark.parametrize(
    "files",
    [
        (GC + "survey_by_numbers_dataset/knot16.txt", FNS + "webpbn-00016.nin", DB + "16.non"),
        (GC + "survey_by_numbers_dataset/cat6.txt", FNS + "webpbn-00006.nin", DB + "6.non"),
        (GC + "survey_by_numbers_dataset/swing529.txt", FNS + "webpbn-00529.nin", DB + "529.non"),
        (GC + "survey_by_numbers_dataset/edge23.txt", FNS + "webpbn-00023.nin"),
        (GC + "survey_by_numbers_dataset/bloop_bloop26167.txt", DB + "26167.non"),
        (FNS + "webpbn-00001.nin", DB + "1.non"),
        (FNS + "webpbn-00021.nin", DB + "21.non"),
        (GC + "example_01.lp", GC + "example_01.txt"),
        (GC + "example_02.lp", GC + "example_02.txt"),
        (GC + "example_04.lp", GC + "example_04.txt"),
        (GC + "example_03c.lp", GC + "example_03.txt"),
        ("tsionyx+nonogrid/examples/MLP.toml", "tsionyx+pynogram/pynogram/examples/MLP.txt"),
        ("tsionyx+nonogrid/examples/hello.toml", "tsionyx+pynogram/pynogram/examples/hello.txt"),
        (FNS + "knotty.nin", "hyouv+FastNonogramSolver/solutions/knotty-1.txt"),
        (FNS + "knotty.nin", "hyouv+FastNonogramSolver/solutions/knotty-2.txt"),
        (FNS + "faase.nin", "hyouv+FastNonogramSolver/solutions/faase-1.txt"),
    ],
)
def test_benchmark_copies_agree(bench, files):
    hashes = {bench(f)[0].hash for f in files}
    assert len(hashes) == 1


def test_benchmark_sizes(bench):
    # sizes stated in benchmarks/README.md (width x height)
    def wh(rel):
        p = bench(rel)[0]
        return p.width, p.height

    assert wh(FNS + "webpbn-00001.nin") == (5, 10)
    assert wh(FNS + "faase.nin") == (80, 95)
    assert wh(GC + "survey_by_numbers_dataset/gettys.txt") == (99, 59)
    assert wh("avi-levy+pbnsolve/examples/levikral.mk") == (150, 50)
    assert wh("avi-levy+pbnsolve/examples/hl2celybig.mk") == (100, 125)
    assert wh("tsionyx+pynogram/pynogram/examples/smile.txt") == (5, 4)
    faase = bench(FNS + "faase.nin")[0]
    frans = bench("tsionyx+pynogram/pynogram/examples/frans_faase.txt")[0]
    assert (faase.rows, faase.cols) == (frans.cols, frans.rows)  # transposed copy
    spoj = bench("tsionyx+nonogrid/examples/spoj/puzzles.txt")
    assert [p.label for p in spoj] == ["puzzles:1", "puzzles:2", "puzzles:3"]


def test_benchmark_non_goals_and_refusals(bench_dir):
    non = sorted((bench_dir / "mikix+nonogram-db/db").rglob("*.non"))
    assert len(non) == 39
    for f in non:
        (p,) = read_puzzles(f)  # the constructor checks each goal against its clues
        assert p.solution is not None
    ex = bench_dir / "avi-levy+pbnsolve/examples"
    for name in ("creature.g", "tkocka.g", "vcely.g"):
        with pytest.raises(FormatError, match="triddlers"):
            read_puzzles(ex / name)
    with pytest.raises(FormatError, match="colour"):
        read_puzzles(ex / "acorn.g")
    assert len(read_puzzles(ex / "veze.g")) == 1


def test_taai_year_with_solutions(bench_dir):
    rec = bench_dir / "zxkyjimmy+NonogramRecord"
    qs = read_puzzles(rec / "question/taai2011.txt")
    assert len(qs) == 1000 and all((p.height, p.width) == (25, 25) for p in qs)
    assert qs[0].label == "taai2011:1" and qs[-1].label == "taai2011:1000"
    sols = read_taai_solutions(rec / "solution/taai2011.txt")
    assert len(attach_solutions(qs, sols)) == 1000
    # a solution file read as puzzles gives the same clues
    assert [p.hash for p in read_puzzles(rec / "solution/taai2011.txt")[:50]] == [
        p.hash for p in qs[:50]
    ]
