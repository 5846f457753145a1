"""The command line behaves like a Unix tool: clear usage errors instead of tracebacks, one
record per input, documented exit statuses, a quiet end on a closed pipe, no silent
overwrites, and a progress line only on a terminal."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys

import pytest

from nonolab.cli import EXIT_BROKEN_PIPE, main
from nonolab.cli.commands.solve import solve_record
from nonolab.core.progress import Progress
from nonolab.sat.formats import to_non, write_puzzles
from nonolab.sat.puzzles import Puzzle

#: a 3x3 puzzle line propagation solves alone (a plus sign)
PLUS = Puzzle.from_grid(((0, 1, 0), (1, 1, 1), (0, 1, 0)), label="plus")


def _usage_error(capsys, argv: list[str]) -> str:
    """Run ``argv``, expect an argparse usage error (exit 2), return stderr."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.fixture
def plus_file(tmp_path):
    path = tmp_path / "plus.non"
    path.write_text(to_non(PLUS), encoding="utf-8")
    return path


# ------------------------------------------------------------ 1. folders and bad names


@pytest.mark.parametrize("cmd", ["solve", "stats", "encode"])
def test_a_folder_is_a_clear_error(cmd, tmp_path, capsys):
    folder = tmp_path / "puzzles"
    folder.mkdir()
    assert main([cmd, str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"nonolab: error: {folder}: Is a directory" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["solve", "--solver", "bogus"], ["auto", "minisat22", "cadical195"]),
        (["solve", "--encoding", "bogus"], ["block_start", "order"]),
        (["stats", "--solver", "bogus"], ["minisat22", "glucose42"]),
        (["stats", "--encoding", "bogus"], ["block_start", "order"]),
        (["generate", "--seed", "1", "--solver", "bogus"], ["minisat22"]),
        (["generate", "--seed", "1", "--encoding", "bogus"], ["block_start"]),
    ],
)
def test_unknown_solver_or_encoding_is_a_usage_error(argv, names, plus_file, capsys):
    files = [] if argv[0] == "generate" else [str(plus_file)]
    err = _usage_error(capsys, [*argv, *files])
    assert "invalid choice: 'bogus' (choose from" in err
    for name in names:
        assert name in err


def test_record_names_no_unknown_solver(plus_file, capsys):
    """Propagation alone solves PLUS, so no SAT solver is ever made: an unknown name used to
    end in the record as the solver. Now it is refused, and an alias is reported by its
    canonical name."""
    with pytest.raises(ValueError, match="unknown solver 'bogus'"):
        solve_record(PLUS, solver="bogus")
    assert main(["solve", "--json", "--solver", "g42", str(plus_file)]) == 0
    (rec,) = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rec["cells_by_propagation"] == rec["n_cells"]
    assert rec["solver"] == "glucose42"


def test_plain_method_refuses_auto(plus_file, capsys):
    assert main(["solve", "--method", "plain", "--solver", "auto", str(plus_file)]) == 2
    assert "--solver auto" in capsys.readouterr().err


# ------------------------------------------------------------ 2. one record per input


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_batch_prints_a_record_for_every_input_in_order(jobs, plus_file, tmp_path, capsys):
    garbage = tmp_path / "garbage.non"
    garbage.write_text("this is not a puzzle\n", encoding="utf-8")
    missing = tmp_path / "missing.non"
    files = [str(plus_file), str(garbage), str(missing), str(plus_file)]
    assert main(["solve", "--json", "--jobs", jobs, *files]) == 2
    captured = capsys.readouterr()
    recs = [json.loads(x) for x in captured.out.splitlines()]
    assert [r["file"] for r in recs] == files
    assert [r["status"] for r in recs] == ["unique", "error", "error", "unique"]
    assert str(garbage) in recs[1]["error"]
    assert str(missing) in recs[2]["error"]
    assert recs[0]["grid"] == [".#.", "###", ".#."]
    # the messages also go to stderr, once per bad input
    assert captured.err.count("nonolab: error: ") == 2


def test_text_output_has_an_error_block(plus_file, tmp_path, capsys):
    garbage = tmp_path / "garbage.non"
    garbage.write_text("nope\n", encoding="utf-8")
    assert main(["solve", str(garbage), str(plus_file)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"== {garbage}\nstatus: error\nerror: ")
    assert "status: unique" in out


def test_exit_status_is_documented(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 every puzzle solved" in out
    assert "1 some puzzle unsat or undecided" in out
    assert "2 some input could not be read" in out


def test_unsat_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.nin"
    bad.write_text("2 2\n2\n0\n0\n1\n", encoding="utf-8")  # rows 2,0 / columns 0,1: no grid
    code = main(["solve", "--json", str(bad)])
    out = capsys.readouterr().out
    if code == 2:  # the reader already refuses clues no grid satisfies
        assert json.loads(out)["status"] == "error"
    else:
        assert code == 1 and json.loads(out)["status"] == "unsat"


# ------------------------------------------------------------ 3. numbers and generate


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "soon"])
def test_timeout_must_be_positive_and_finite(value, plus_file, capsys):
    err = _usage_error(capsys, ["solve", "--timeout", value, str(plus_file)])
    assert "--timeout" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--count", "-1"],
        ["--count", "0"],
        ["--height", "0"],
        ["--filled", "-3"],
        ["--max-attempts", "0"],
        ["--timeout", "nan"],
    ],
)
def test_generate_rejects_bad_numbers(argv, capsys):
    _usage_error(capsys, ["generate", "--seed", "1", *argv])


def test_generate_refuses_more_puzzles_than_exist(capsys):
    """A 1x1 grid with half its cells (0) filled exists once: two distinct puzzles cannot."""
    assert main(["generate", "--height", "1", "--width", "1", "--count", "2", "--seed", "0"]) == 2
    err = capsys.readouterr().err
    assert "only 1 distinct 1x1 grid with 0 filled cells exist" in err
    assert main(["generate", "--height", "2", "--width", "2", "--filled", "5", "--seed", "0"]) == 2
    assert "does not fit a 2x2 grid" in capsys.readouterr().err


def test_generate_gives_distinct_puzzles(capsys):
    """3x3 with 4 filled cells: few unique puzzles, so repeats would be likely without the
    check."""
    argv = ["generate", "--height", "3", "--width", "3", "--filled", "4", "--count", "6"]
    assert main([*argv, "--seed", "2"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 6
    assert len({json.dumps(r["solution"]) for r in recs}) == 6
    assert [r["id"] for r in recs] == list(range(6))


def test_generate_default_filled_scales_with_the_grid(capsys):
    """15x15, 5 puzzles: the default is half the cells (112), found in well under a minute."""
    argv = ["generate", "--height", "15", "--width", "15", "--count", "5", "--seed", "0"]
    assert main([*argv, "--timeout", "120"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 5
    assert all(sum(map(sum, r["solution"])) == 112 for r in recs)


def test_generate_timeout(capsys):
    argv = ["generate", "--height", "15", "--width", "15", "--count", "5", "--seed", "0"]
    assert main([*argv, "--timeout", "1e-9"]) == 2
    assert "timed out after 1e-09 s with 0 of 5" in capsys.readouterr().err


def test_default_generate_output_is_unchanged(capsys):
    """10x10 keeps its former default of 50 filled cells: same puzzle for the same seed."""
    assert main(["generate", "--seed", "7"]) == 0
    default = capsys.readouterr().out
    assert main(["generate", "--seed", "7", "--filled", "50"]) == 0
    assert capsys.readouterr().out == default


# ------------------------------------------------------------ 4. a closed pipe


def test_closed_pipe_ends_quietly(tmp_path):
    """``nonolab solve ... | head -1``: the reader goes away after one line; the solver stops
    with the status a signal-ended program gets (141), no traceback."""
    rng = random.Random(0)
    puzzles = [
        Puzzle.from_grid([[int(rng.random() < 0.5) for _ in range(6)] for _ in range(6)])
        for _ in range(300)
    ]
    path = tmp_path / "many.nonpack"
    write_puzzles(puzzles, path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nonolab", "solve", "--json", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)
    assert json.loads(first)["status"] in ("unique", "multiple")
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert code == EXIT_BROKEN_PIPE


# ------------------------------------------------------------ 5. no silent overwrite


def test_simulate_refuses_a_non_empty_folder(tmp_path, capsys):
    out = tmp_path / "sim"
    argv = ["simulate", "--participants", "2", "--puzzles", "3", "--size", "5x5", "--seed", "1"]
    assert main([*argv, str(out)]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main([*argv, "--seed", "2", str(out)]) == 2
    assert "is not empty" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert main([*argv, "--force", str(out)]) == 0  # a simulated study may be rewritten
    foreign = tmp_path / "data"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main([*argv, "--force", str(foreign)]) == 2  # never a folder of other data
    assert (foreign / "notes.txt").read_text() == "keep me"
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main([*argv, str(a_file)]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_ingest_refuses_a_file_as_output(tmp_path, capsys):
    out = tmp_path / "existing.csv"
    out.write_text("keep me")
    assert main(["ingest", str(tmp_path), str(out)]) == 2
    err = capsys.readouterr().err
    assert f"output {out} exists and is not a folder" in err
    assert out.read_text() == "keep me"


# ------------------------------------------------------------ 6. progress on stderr


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_off_a_terminal():
    stream = io.StringIO()
    with Progress(3, "work", stream=stream) as bar:
        for _ in range(3):
            bar.update()
    assert stream.getvalue() == ""


def test_progress_draws_on_a_terminal_and_clears_its_line():
    stream = _Tty()
    with Progress(4, "work", stream=stream, min_interval_s=0.0) as bar:
        bar.update(2, note="2 grids tried")
        assert bar.line().startswith("work: 2/4 [############------------]")
        assert bar.line().endswith("2 grids tried")
        bar.update(2)
    text = stream.getvalue()
    assert "\rwork: 4/4 [########################]" in text
    assert text.endswith("\r\x1b[K")  # the line is gone when the work is done


def test_generate_progress_stays_off_captured_stderr(capsys):
    assert main(["generate", "--height", "4", "--width", "4", "--count", "3", "--seed", "1"]) == 0
    assert capsys.readouterr().err == ""


def test_stats_shows_progress_per_puzzle_on_a_terminal(tmp_path, monkeypatch, capsys):
    """``nonolab stats`` over a pool of puzzles moves a progress line on a terminal."""
    out = tmp_path / "pool.json"
    assert (
        main(
            [
                "generate",
                "--height",
                "4",
                "--width",
                "4",
                "--count",
                "3",
                "--seed",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["stats", str(out), "--solver", "minisat22", "--encoding", "block_start"]) == 0
    assert "\rstats: 3/3 [" in tty.getvalue()
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 3
