"""Atomic outputs and spreadsheet-safe CSV cells (nonolab.core.tables, the ingest folder swap).

* every writer renames a complete temporary file into place; an ``OSError`` (disk full) names
  the file and leaves the previous file, never a part;
* the ingest replaces its whole folder: a SIGKILL at a random moment leaves the previous run's
  complete folder, the new one, or none, never a mix (20 tries); ``nonolab features`` refuses a
  mixed folder;
* text cells that start with ``= + - @`` (tab, CR, quote) are neutralised with a leading quote;
  numbers are not; :func:`nonolab.study.schemas.read_csv` gives back exactly what was written,
  ``NA``/``null``/``nan``/``None``/empty ids included.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nonolab.cli import main
from nonolab.core.tables import (
    OutputError,
    atomic_folder,
    neutralise_cell,
    restore_cell,
    write_json,
    write_table,
)
from nonolab.study.ingest import check_ingest_folder
from nonolab.study.presets import StudyError
from nonolab.study.schemas import read_csv, read_table

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"


# --- CSV cells for spreadsheets ----------------------------------------------------------------


def test_formula_ids_are_neutralised_and_numbers_are_not(tmp_path):
    df = pd.DataFrame(
        {
            "participant_id": ['=HYPERLINK("http://x","y")', "+1", "-2", "@SUM(A1)", "\tx", "ok"],
            "puzzle_id": ["NA", "null", "nan", "None", "", "'=quoted"],
            "value": [-1.5, -2.0, 3.0, -0.25, 0.0, 1e-12],
            "count": [-1, -2, 3, 4, 5, 6],
        }
    )
    write_table(df, tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_text(encoding="utf-8")
    for line in text.splitlines()[1:]:
        assert not line.startswith(("=", "+", "-", "@", "\t", '"=', '"+', '"-', '"@'))
    assert "'=HYPERLINK" in text and "'+1" in text and "'-2" in text and "'@SUM" in text
    assert ",-1.5,-1\n" in text  # a negative number is written as a number
    back = read_csv(tmp_path / "t.csv")
    pd.testing.assert_frame_equal(back, df)


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12),
        min_size=1,
        max_size=8,
    )
)
def test_ids_round_trip_through_write_and_read(tmp_path_factory, ids):
    path = tmp_path_factory.mktemp("ids") / "t.csv"
    df = pd.DataFrame({"participant_id": ids, "order": range(len(ids))})
    write_table(df, path)
    back = read_csv(path)
    assert back["participant_id"].tolist() == ids
    assert back["order"].tolist() == list(range(len(ids)))


@given(st.text(st.characters(exclude_categories=("Cs",))))
def test_neutralise_restore_is_exact(s):
    assert restore_cell(neutralise_cell(s)) == s
    assert not neutralise_cell(s).startswith(("=", "+", "-", "@", "\t", "\r"))


def test_schema_reader_keeps_na_like_string_ids(tmp_path):
    from nonolab.study.schemas import write_checked_table

    rows = [
        {
            "puzzle_hash": f"h{i}",
            "puzzle_id": pid,
            "encoding": "direct",
            "solver": "minisat22",
            "variables": 10,
            "clauses": 20,
            "decisions": 3,
            "propagations": 40,
            "conflicts": 1,
            "restarts": 0,
            "status": "SAT",
        }
        for i, pid in enumerate(["NA", "null", "nan", "None", "-1", "=1+1"])
    ]
    df = pd.DataFrame(rows)
    write_checked_table(df, tmp_path / "m.csv", "sat_metrics")
    back = read_table(tmp_path / "m.csv", "sat_metrics")
    assert back["puzzle_id"].tolist() == ["NA", "null", "nan", "None", "-1", "=1+1"]


# --- atomic files ------------------------------------------------------------------------------


class _DiskFull:
    """A table whose CSV writer writes some bytes, then fails as a full disk does."""

    columns = ["a"]

    def __len__(self) -> int:
        return 1

    def __getitem__(self, key):
        return pd.Series([1])

    def to_csv(self, path, **kw):
        Path(path).write_text("a\npartial", encoding="utf-8")
        raise OSError(errno.ENOSPC, "No space left on device")


def test_disk_full_names_the_file_and_keeps_the_previous_one(tmp_path):
    path = tmp_path / "table.csv"
    write_table(pd.DataFrame({"a": [1, 2]}), path)
    before = path.read_bytes()
    with pytest.raises(OutputError, match=r"cannot write .*table\.csv: no space left"):
        write_table(_DiskFull(), path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.csv", "table.provenance.json"]


def test_json_write_error_names_the_file(tmp_path):
    (tmp_path / "ro").mkdir()
    os.chmod(tmp_path / "ro", 0o500)
    try:
        if os.access(tmp_path / "ro", os.W_OK):
            pytest.skip("running as a user who may write a read-only folder (root)")
        with pytest.raises(OutputError, match=r"ro/x\.json"):
            write_json({"a": 1}, tmp_path / "ro" / "x.json")
    finally:
        os.chmod(tmp_path / "ro", 0o700)


def test_folder_swap_keeps_the_previous_folder_on_error(tmp_path):
    out = tmp_path / "out"
    with atomic_folder(out) as tmp:
        (tmp / "a.txt").write_text("one")
    with pytest.raises(RuntimeError), atomic_folder(out) as tmp:
        (tmp / "a.txt").write_text("two")
        raise RuntimeError("killed")
    assert (out / "a.txt").read_text() == "one"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_disk_full_ingest_on_a_small_filesystem(tmp_path):
    """A real full disk (a 200 kB tmpfs): the error names a file, nothing partial is left."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        r = subprocess.run(
            [sys.executable, "-m", "nonolab", "ingest", str(EXAMPLE), str(mnt / "out")],
            capture_output=True,
            text=True,
            env=os.environ | {"PYTHONPATH": str(REPO / "src")},
        )
        assert r.returncode != 0
        assert "no space left on the device" in r.stderr
        assert str(mnt / "out") in r.stderr
        assert list(mnt.iterdir()) == []  # no partial folder, no temporary file
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


# --- the ingest folder as a whole --------------------------------------------------------------


def _study_subset(dst: Path, keep: int) -> Path:
    """A copy of the example study with only its first ``keep`` log files (by name)."""
    shutil.copytree(EXAMPLE, dst)
    logs = sorted((dst / "backend" / "logs").iterdir())
    for f in logs[keep:]:
        f.unlink()
    return dst


def test_features_refuses_a_mixed_ingest_folder(tmp_path, capsys):
    a = _study_subset(tmp_path / "a", 30)
    b = _study_subset(tmp_path / "b", 12)
    assert main(["ingest", str(a), str(tmp_path / "A")]) == 0
    assert main(["ingest", str(b), str(tmp_path / "B")]) == 0
    check_ingest_folder(tmp_path / "A")
    shutil.copy(tmp_path / "B" / "attempts.parquet", tmp_path / "A" / "attempts.parquet")
    capsys.readouterr()
    code = main(["features", str(tmp_path / "A"), str(tmp_path / "f.csv"), "--threshold", "2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "attempts.parquet" in err and "inconsistent" in err
    assert not (tmp_path / "f.csv").exists()


def test_ingest_refuses_to_replace_a_folder_of_other_files(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert main(["ingest", str(EXAMPLE), str(out)]) == 2
    assert "not an ingest output" in capsys.readouterr().err
    assert (out / "thesis.tex").read_text() == "precious"


def test_ingest_replaces_its_own_folder_whatever_of_it_is_left(tmp_path):
    """What Snakemake leaves of an ingest folder before running the job again (it removes the
    declared outputs, manifest and summary among them, and keeps the provenance sidecars), or
    any other part of the files an ingest writes, is replaced; one file of another kind among
    them stops the ingest and is kept. Random subsets, seeded."""
    from nonolab.study.ingest import ingest_file_names, ingest_study, write_ingest
    from nonolab.study.presets import resolve_preset

    study = _study_subset(tmp_path / "s", 4)
    result = ingest_study(study, resolve_preset(study))
    extra = {"study.json": {"study": "s"}}
    out = tmp_path / "out"
    write_ingest(result, out, extra_json=extra)
    written = sorted(f.name for f in out.iterdir())
    assert set(written) <= ingest_file_names(extra) and "manifest.json" in written
    rng = random.Random(20261205)
    for case in range(12):
        keep = [n for n in written if n not in ("manifest.json", "summary.json")]
        keep = rng.sample(keep, rng.randint(1, len(keep)))
        for f in out.iterdir():
            if f.name not in keep:
                f.unlink()
        stray = case % 3 == 0
        if stray:
            (out / rng.choice(["notes.txt", "attempts.xlsx", "README"])).write_text("mine")
            with pytest.raises(StudyError, match="not an ingest output"):
                write_ingest(result, out, extra_json=extra)
            assert sum(f.read_text() == "mine" for f in out.iterdir() if f.suffix != ".parquet")
            for f in out.iterdir():
                if f.name not in written:
                    f.unlink()
        write_ingest(result, out, extra_json=extra)
        assert sorted(f.name for f in out.iterdir()) == written
        check_ingest_folder(out)


@pytest.mark.slow
def test_killed_ingest_never_leaves_a_mix(tmp_path):
    """SIGKILL `nonolab ingest` of study B over study A's output at 20 random moments: the
    folder is then A's complete output, B's, or absent; never files of both."""
    a = _study_subset(tmp_path / "a", 30)
    b = _study_subset(tmp_path / "b", 12)
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "nonolab", "ingest"]
    runs = {}
    for name, study in (("A", a), ("B", b)):
        t0 = time.monotonic()
        subprocess.run(
            [*cmd, str(study), str(tmp_path / name)], check=True, env=env, capture_output=True
        )
        runs[name] = (check_ingest_folder(tmp_path / name), time.monotonic() - t0)
    duration = runs["B"][1]
    rng = random.Random(25)
    seen = set()
    out = tmp_path / "out"
    for _ in range(20):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(tmp_path / "A", out)
        proc = subprocess.Popen(
            [*cmd, str(b), str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.3, 1.1) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not out.exists():
            seen.add("none")
            continue
        run_id = check_ingest_folder(out)  # raises on a mix
        assert run_id in (runs["A"][0], runs["B"][0])
        seen.add("A" if run_id == runs["A"][0] else "B")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["participants"] == len(pd.read_parquet(out / "participants.parquet"))
    assert "A" in seen  # the kills did land before the swap at least once
