"""The SAT toolkit commands: nonolab stats / generate / encode."""

from __future__ import annotations

import json

import pytest

from nonolab.cli import main
from nonolab.sat.formats import read_puzzles
from nonolab.sat.puzzles import Puzzle, load_study_puzzles
from nonolab.sat.solvers import RECORD_COLUMNS, uniqueness


def _write_nin(path, p: Puzzle) -> None:
    from nonolab.sat.formats import to_nin

    path.write_text(to_nin(p))


def test_stats_json_records(tmp_path, capsys):
    p = Puzzle.from_grid(((1, 1, 0), (0, 1, 1), (1, 0, 1)))
    f = tmp_path / "p.nin"
    _write_nin(f, p)
    assert main(["stats", str(f), "--json", "--solver", "m22", "--solver", "cd19"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert all(tuple(r) == RECORD_COLUMNS for r in recs)
    assert {r["solver"] for r in recs} == {"minisat22", "cadical195"}
    assert {r["puzzle_hash"] for r in recs} == {p.hash}
    assert "block_start" in {r["encoding"] for r in recs}


def test_stats_multi_puzzle_file(tmp_path, capsys):
    f = tmp_path / "two.nonpack"
    assert main(["generate", "--height", "4", "--width", "4", "--filled", "8", "--count", "2",
                 "--seed", "3", "--out", str(f)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["stats", str(f), "--json", "--solver", "g42", "--encoding", "block_start"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["puzzle_id"] for r in recs] == ["two:1", "two:2"]


@pytest.mark.study
def test_stats_study_file(study_dir, capsys):
    f = study_dir / "nonograms_6.json"
    assert (
        main(["stats", str(f), "--json", "--solver", "minisat22", "--encoding", "block_start"]) == 0
    )
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["conflicts"] for r in recs] == [0, 0, 4, 15, 15, 4]
    assert [r["variables"] for r in recs] == [312, 306, 333, 319, 333, 305]


def test_generate_json_seeded(tmp_path, capsys):
    args = ["generate", "--height", "5", "--width", "5", "--filled", "12", "--count", "3"]
    assert main([*args, "--seed", "9", "--out", str(tmp_path / "a.json")]) == 0
    assert main([*args, "--seed", "9", "--out", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    ps = load_study_puzzles(tmp_path / "a.json")
    assert [p.label for p in ps] == ["0", "1", "2"]
    for p in ps:
        assert sum(map(sum, p.solution)) == 12
        assert uniqueness(p).status == "unique"


def test_generate_impossible(capsys):
    # seed 1 first draws the anti-diagonal 2x2 grid (two solutions); one attempt only => error
    rc = main(["generate", "--height", "2", "--width", "2", "--filled", "2", "--seed", "1",
               "--max-attempts", "1"])  # fmt: skip
    assert rc == 2
    assert "no unique 2x2 puzzle" in capsys.readouterr().err


def test_encode_dimacs(tmp_path, capsys):
    p = Puzzle.from_grid(((1, 0), (1, 1)), label="x")
    f = tmp_path / "x.non"
    f.write_text("width 2\nheight 2\nrows\n1\n2\ncolumns\n2\n1\n")
    assert main(["encode", str(f), "--encoding", "block_start", "--dimacs"]) == 0
    out = capsys.readouterr().out
    assert f"puzzle_hash={p.hash}" in out.splitlines()[0]
    from nonolab.sat.encodings import get_encoding

    enc = get_encoding("block_start")(read_puzzles(f)[0])
    assert out.splitlines()[1] == f"p cnf {enc.nvars} {len(enc.clauses)}"
    with pytest.raises(SystemExit) as exc:  # a usage error listing the encodings
        main(["encode", str(f), "--encoding", "nope"])
    assert exc.value.code == 2
    from nonolab.sat.encodings import ENCODINGS

    names = ", ".join(sorted(ENCODINGS))  # every registered encoding, e.g. block_start, order
    assert {"block_start", "order"} <= set(ENCODINGS)
    assert f"invalid choice: 'nope' (choose from {names})" in capsys.readouterr().err


def test_bad_file_is_clean_error(tmp_path, capsys):
    f = tmp_path / "bad.nin"
    f.write_text("2 2\n1\nx\n1\n1\n")
    assert main(["stats", str(f)]) == 2
    assert "bad.nin:3" in capsys.readouterr().err
