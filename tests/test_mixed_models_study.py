"""Mixed models on the public study data: the published alignment of metrics to puzzles, the
expertise composite used by the moderation models, and the table layout on the real sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nonolab import mixed_models as mm
from nonolab.correlations import published_alignment
from nonolab.puzzles import load_study_puzzles
from nonolab.solvers import parse_solver_statistics

pytestmark = pytest.mark.study

# METHODS 2: published MiniSat22 decisions/propagations/conflicts by served id.
OWN = {"0": (4, 313, 0), "1": (2, 307, 0), "2": (8, 417, 4), "3": (31, 1063, 15)}
OWN |= {"4": (40, 1133, 15), "5": (13, 453, 4)}
# The published tables used the statistics of served ids 5, 2, 3, 4 for served ids 2-5.
PUBLISHED_SOURCE = {"0": "0", "1": "1", "2": "5", "3": "2", "4": "3", "5": "4"}


def study_tables(study_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(attempts in the contract's column names, metrics table, pool-ordered table)."""
    hashes = {p.label: p.hash for p in load_study_puzzles(study_dir / "nonograms_6.json")}
    att = pd.read_csv(
        study_dir / "analyze-data/out_features/behavioral_features.csv", dtype={"puzzle_id": str}
    ).rename(columns={"time_to_solve_sec": "time_to_solve_s"})
    att["puzzle_hash"] = att["puzzle_id"].map(hashes)
    met = parse_solver_statistics(study_dir / "solver_statistics.txt")
    met["puzzle_hash"] = met["puzzle_id"].map(hashes)
    met["encoding"] = "block_start"
    pool = pd.read_csv(study_dir / "selected_six_nonogram_stats.csv")
    return att, met, pool


@pytest.fixture(scope="module")
def tables(study_dir):
    return study_tables(study_dir)


def covariates(tables, transform="log1p_z"):
    att, met, pool = tables
    served = att[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    mapping = published_alignment(pool, served, met[met["solver"] == "minisat22"])
    return mm.covariates_by_alignment(
        met,
        served,
        solver="minisat22",
        encoding="block_start",
        transform=transform,
        published_mapping=mapping,
    )


def test_published_alignment_moves_ids_2_to_5(tables):
    att = tables[0]
    hash_of = dict(zip(att["puzzle_id"], att["puzzle_hash"], strict=False))
    covs = covariates(tables, transform="raw")
    for alignment, source in (("corrected", {k: k for k in OWN}), ("published", PUBLISHED_SOURCE)):
        c = covs[alignment].set_index("puzzle_hash")
        for pid, src in source.items():
            got = tuple(int(v) for v in c.loc[hash_of[pid], list(mm.METRICS)])
            assert got == OWN[src], (alignment, pid)


def test_log1p_z_covariate_by_hand(tables):
    att = tables[0]
    hash_of = dict(zip(att["puzzle_id"], att["puzzle_hash"], strict=False))
    cov = covariates(tables)["published"].set_index("puzzle_hash")
    for j, m in enumerate(mm.METRICS):
        u = {pid: np.log1p(OWN[src][j]) for pid, src in PUBLISHED_SOURCE.items()}
        arr = np.array(list(u.values()))
        for pid, v in u.items():
            want = (v - arr.mean()) / arr.std()
            assert cov.loc[hash_of[pid], m] == pytest.approx(want, rel=1e-12)


def test_expertise_composite_matches_published_column(tables):
    att = tables[0]
    ours = mm.with_expertise(att.drop(columns="expertise_composite"))
    np.testing.assert_allclose(
        ours["expertise_composite"], att["expertise_composite"], rtol=0, atol=1e-12
    )


def test_behaviour_models_on_the_study(tables):
    att = tables[0]
    covs = covariates(tables)
    out = {}
    for alignment, cov in covs.items():
        t = mm.behaviour_models(att, cov, n_boot=0)
        assert len(t) == 12
        assert set(t["behaviour"]) == {"pauses", "time_to_solve", "errors", "hints"}
        n = t.set_index("behaviour")["n"].groupby(level=0).first()
        # 201 attempts; 197 with a solve time (METHODS 3).
        assert n["pauses"] == 201 and n["time_to_solve"] == 197
        assert t["converged"].all()
        np.testing.assert_allclose(t["p_fdr"], mm.bh_fdr(t["p"]))
        # Six puzzles carry the metric: Satterthwaite df for its slope is about 6 - 2.
        assert t["df_satt"].between(3.0, 5.0).all()
        assert (t["p_satt"] > t["p"]).all()
        out[alignment] = t
    # Same null model under both alignments, different covariates: different slopes.
    assert not np.allclose(out["corrected"]["coef"], out["published"]["coef"])
    np.testing.assert_allclose(out["corrected"]["n"].to_numpy(), out["published"]["n"].to_numpy())
