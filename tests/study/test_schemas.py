"""Table schemas (nonolab.study.schemas): declared once, used for reading and writing."""

from __future__ import annotations

import pandas as pd
import pytest

from nonolab.study.schemas import TableSchemaError, read_table, write_checked_table


def _metrics(**over) -> pd.DataFrame:
    row = {
        "puzzle_hash": "h1",
        "puzzle_id": "007",
        "encoding": "block_start",
        "solver": "cadical195",
        "variables": 10,
        "clauses": 20,
        "decisions": 3,
        "propagations": 40,
        "conflicts": 1,
        "restarts": 0,
        "status": "SAT",
    }
    return pd.DataFrame([row | over])


def test_round_trip_keeps_declared_dtypes(tmp_path):
    path = tmp_path / "metrics.csv"
    write_checked_table(_metrics(), path, "sat_metrics")
    back = read_table(path, "sat_metrics")
    assert back.loc[0, "puzzle_id"] == "007"  # a string id is not read as the number 7
    assert str(back["conflicts"].dtype) == "int64"
    assert (tmp_path / "metrics.provenance.json").exists()


@pytest.mark.parametrize(
    "bad, match",
    [
        (_metrics(conflicts=-1), "conflicts"),
        (_metrics().drop(columns="status"), "columns"),
        (pd.concat([_metrics(), _metrics()]), "duplicate rows for key"),
        (_metrics(puzzle_hash=None), "missing values"),
    ],
)
def test_bad_tables_are_refused_on_write_and_on_read(tmp_path, bad, match):
    with pytest.raises(TableSchemaError, match=match):
        write_checked_table(bad, tmp_path / "w.csv", "sat_metrics")
    assert not (tmp_path / "w.csv").exists()
    bad.to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(TableSchemaError, match=match):
        read_table(tmp_path / "r.csv", "sat_metrics")


def test_nullable_integers_are_read_as_pandas_reads_them(tmp_path):
    """A nullable integer column with a gap stays float64 (what the analyses always saw); a
    fractional value in it is refused."""
    cols = ["participant_id", "order", "puzzle_id", "puzzle_hash", "initial_difficulty"]
    rows = [["a", 1, "0", "h", 3], ["a", 2, "1", "g", None]]
    extra = [
        "initial_difficulty_raw",
        "initial_guesses",
        "final_difficulty",
        "final_difficulty_raw",
    ]
    df = pd.DataFrame(rows, columns=cols).assign(**{c: None for c in extra}, final_guesses=None)
    df.to_csv(tmp_path / "r.csv", index=False)
    back = read_table(tmp_path / "r.csv", "ratings")
    assert str(back["initial_difficulty"].dtype) == "float64"
    df.loc[0, "initial_difficulty"] = 2.5
    df.to_csv(tmp_path / "r.csv", index=False)
    with pytest.raises(TableSchemaError, match="whole numbers"):
        read_table(tmp_path / "r.csv", "ratings")
