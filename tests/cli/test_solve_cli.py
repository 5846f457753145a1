"""``nonolab solve``: the webpbn #1 acceptance case, JSON Lines, multi-puzzle files, --jobs."""

from __future__ import annotations

import json
import random

import pytest

from nonolab.cli import main
from nonolab.sat.formats import to_non, to_taai
from nonolab.sat.puzzles import Puzzle, grid_to_strings, satisfies


def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr().out
    return code, out


def test_webpbn_1_text_and_json(bench_dir, capsys):
    path = bench_dir / "mikix+nonogram-db/db/webpbn/1.non"
    code, out = _run(capsys, ["solve", str(path)])
    assert code == 0
    # the goal shipped in the file (Dancer, 5 wide x 10 high)
    goal = "01100011010010101110101001010000110010100101111000"
    expect = ["".join("#" if goal[r * 5 + c] == "1" else "." for c in range(5)) for r in range(10)]
    lines = out.splitlines()
    assert "status: unique" in lines[1]
    assert lines[2:12] == expect
    code, out = _run(capsys, ["solve", "--json", str(path)])
    (rec,) = [json.loads(x) for x in out.splitlines()]
    assert rec["status"] == "unique" and rec["grid"] == expect
    assert rec["label"] == "1" and len(rec["puzzle_hash"]) == 64
    for k in ("time_s", "propagate_s", "probe_s", "encode_s", "solve_s", "uniqueness_s"):
        assert rec[k] >= 0
    # independent check against the clues of the file
    from nonolab.sat.formats import read_puzzles

    (p,) = read_puzzles(path)
    assert satisfies(p, [[int(ch == "#") for ch in row] for row in rec["grid"]])


def _taai_file(tmp_path, n=6, seed=11):
    rng = random.Random(seed)
    puzzles = []
    for i in range(n):
        g = [[int(rng.random() < 0.55) for _ in range(25)] for _ in range(25)]
        puzzles.append(Puzzle.from_grid(g, label=str(i + 1)))
    path = tmp_path / "set.txt"
    path.write_text(to_taai(puzzles), encoding="utf-8")
    return path, puzzles


def test_multi_puzzle_file_json_lines_in_order(tmp_path, capsys):
    path, puzzles = _taai_file(tmp_path)
    code, out = _run(capsys, ["solve", "--json", "--timeout", "60", str(path)])
    recs = [json.loads(x) for x in out.splitlines()]
    assert len(recs) == len(puzzles)
    assert [r["puzzle_hash"] for r in recs] == [p.hash for p in puzzles]
    for r, p in zip(recs, puzzles, strict=True):
        assert r["status"] in ("unique", "multiple")
        grid = [[int(ch == "#") for ch in row] for row in r["grid"]]
        assert satisfies(p, grid)
        if r["status"] == "unique":
            assert r["grid"] == grid_to_strings(p.solution)
        else:
            assert r["second_grid"] != r["grid"]
    assert code == 0


def test_jobs_and_plain_method_agree(tmp_path, capsys):
    path, _ = _taai_file(tmp_path, n=4, seed=5)
    _, out1 = _run(capsys, ["solve", "--json", str(path)])
    _, out2 = _run(capsys, ["solve", "--json", "--jobs", "2", str(path)])
    _, out3 = _run(capsys, ["solve", "--json", "--method", "plain", str(path)])
    r1, r2, r3 = ([json.loads(x) for x in o.splitlines()] for o in (out1, out2, out3))
    assert [(r["puzzle_hash"], r["status"]) for r in r1] == [
        (r["puzzle_hash"], r["status"]) for r in r2
    ]
    assert [r["status"] for r in r1] == [r["status"] for r in r3]
    assert all(r["method"] == "plain" and r["encoding"] == "block_start" for r in r3)
    assert all(r["solver"] == "cadical195" for r in r3)


def test_default_solver_is_auto_and_reported(tmp_path, capsys):
    """Hybrid defaults to ``auto``: the record names the solver that ran (MiniSat 2.2 on a
    25x25 random puzzle left to SAT; ``auto`` when propagation alone decided)."""
    path, puzzles = _taai_file(tmp_path, n=3, seed=5)
    _, out = _run(capsys, ["solve", "--json", str(path)])
    recs = [json.loads(x) for x in out.splitlines()]
    for r in recs:
        if r["cells_by_propagation"] + r["cells_by_probing"] < r["n_cells"]:
            assert r["solver"] == "minisat22"
        else:
            assert r["solver"] == "auto"
    assert any(r["solver"] == "minisat22" for r in recs)
    _, out = _run(capsys, ["solve", "--json", "--solver", "cadical195", str(path)])
    assert {json.loads(x)["solver"] for x in out.splitlines()} <= {"cadical195"}


def test_bad_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.nin"
    bad.write_text("3 2\n1\nx\n", encoding="utf-8")
    code = main(["solve", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert "bad.nin" in err


def _through_the_fallback(tmp_path, monkeypatch, seed):
    """Write a random 36x36 puzzle file and give the first CDCL attempt one conflict, so that
    solving it goes through the fallback; return the file's path."""
    import nonolab.sat.fastsolve as fastsolve
    import nonolab.sat.remaining as remaining

    monkeypatch.setattr(fastsolve, "FALLBACK_AFTER_CONFLICTS", 1)
    monkeypatch.setattr(remaining, "AUTO_SMALL_MAX_UNKNOWN", 10)
    rng = random.Random(seed)
    g = [[int(rng.random() < 0.5) for _ in range(36)] for _ in range(36)]
    path = tmp_path / "p.non"
    path.write_text(to_non(Puzzle.from_grid(g, label="r36")), encoding="utf-8")
    return path


def test_hard_selects_the_fallback(tmp_path, capsys, monkeypatch):
    """``--hard``: with a one-conflict first attempt every puzzle left to SAT goes through the
    fallback, BP decimation by default and Kissat with ``--hard kissat``; same answers."""
    path = _through_the_fallback(tmp_path, monkeypatch, seed=0)
    runs = {}
    for hard in ("bp", "kissat"):
        _, out = _run(capsys, ["solve", "--json", "--hard", hard, str(path)])
        runs[hard] = [json.loads(x) for x in out.splitlines()]
    fb = [i for i, r in enumerate(runs["bp"]) if r.get("fallback")]
    assert fb, "no puzzle reached the fallback"
    for i in fb:
        assert runs["bp"][i]["solver"] == "cadical195+bp"
        assert runs["kissat"][i]["solver"] == "cadical195+kissat404"
    assert [r["status"] for r in runs["bp"]] == [r["status"] for r in runs["kissat"]]
    with pytest.raises(SystemExit) as exc:
        main(["solve", "--hard", "nope", str(path)])
    assert exc.value.code == 2 and "invalid choice: 'nope'" in capsys.readouterr().err


def test_bp_jobs_runs_the_fallback_on_several_cores(tmp_path, capsys, monkeypatch):
    """``--bp-jobs 2``: the BP fallback's restart slices run in two worker processes; the
    answer is the one-process answer, and the record says how many processes ran."""
    path = _through_the_fallback(tmp_path, monkeypatch, seed=1)
    recs = {}
    for jobs in ("1", "2"):
        _, out = _run(capsys, ["solve", "--json", "--bp-jobs", jobs, str(path)])
        (recs[jobs],) = [json.loads(x) for x in out.splitlines()]
    assert recs["1"]["bp_jobs"] == 1 and recs["2"]["bp_jobs"] == 2
    assert recs["2"]["solver"] == "cadical195+bp"
    assert recs["1"]["status"] == recs["2"]["status"] == "multiple"
    for bad in ("0", "x"):
        with pytest.raises(SystemExit) as exc:
            main(["solve", "--bp-jobs", bad, str(path)])
        assert exc.value.code == 2 and "--bp-jobs" in capsys.readouterr().err


def test_guide_option(tmp_path, capsys):
    """``--guide none`` turns the BP guidance off: same statuses, no BP time, and the record
    says which guidance ran; an unknown value is a usage error (exit 2)."""
    path, _ = _taai_file(tmp_path, n=4, seed=7)
    recs = {}
    for guide in ("bp", "none"):
        _, out = _run(capsys, ["solve", "--json", "--guide", guide, str(path)])
        recs[guide] = [json.loads(x) for x in out.splitlines()]
    assert [r["status"] for r in recs["bp"]] == [r["status"] for r in recs["none"]]
    assert all(r["guide"] == "none" and r["guide_s"] == 0.0 for r in recs["none"])
    assert all(r["guide"] == "bp" for r in recs["bp"])
    assert any(r["guide_s"] > 0.0 for r in recs["bp"])  # some puzzle was left to SAT
    _, text = _run(capsys, ["solve", str(path)])
    assert "guide " in text
    with pytest.raises(SystemExit) as exc:
        main(["solve", "--guide", "magic", str(path)])
    assert exc.value.code == 2 and "invalid choice: 'magic'" in capsys.readouterr().err
