"""Mixed models on the public study data: the published alignment of metrics to puzzles, the
expertise composite used by the moderation models, and the table layout on the real sample."""

from __future__ import annotations

import numpy as np
import pytest
from public_study import OWN, PUBLISHED_SOURCE, covariates, study_tables  # noqa: F401

from nonolab.stats import mixed_models as mm

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def tables(study_dir):
    return study_tables(study_dir)


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
        np.testing.assert_allclose(t["p_fdr"], mm._p_fdr(t["p"]))
        # Six puzzles carry the metric: Satterthwaite df for its slope is about 6 - 2.
        assert t["df_satt"].between(3.0, 5.0).all()
        assert (t["p_satt"] > t["p"]).all()
        out[alignment] = t
    # Same null model under both alignments, different covariates: different slopes.
    assert not np.allclose(out["corrected"]["coef"], out["published"]["coef"])
    np.testing.assert_allclose(out["corrected"]["n"].to_numpy(), out["published"]["n"].to_numpy())
