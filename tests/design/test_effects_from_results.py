"""Effect sizes from a study's fitted models (nonolab.design.effects, ``--effects-from``).

* hand-made results tables (written with nonolab.core.tables, as the workflow writes them)
  with known values give the exactly computed overrides, and an incomplete folder is an error
  naming the missing file;
* the conversion inverts the simulator: responses simulated from a known rating model and
  behaviour model by the design's own simulator (nonolab.design.power), refitted, give back
  the model's parameters (Gaussian scale) or values attenuated towards 0 (the 1-5 rating
  scale, documented in nonolab.design.effects);
* end to end on the embedded example study (simulated with the parameters in
  data/example-study/ground_truth.json): the workflow's tables give effects near the known
  ones, and ``nonolab design --effects-from`` runs with them and records their sources.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from nonolab.cli import main
from nonolab.core.tables import write_json, write_table
from nonolab.design.effects import (
    BEHAVIOUR,
    MODERATION,
    REQUIRED,
    SAT,
    SIDECARS,
    STUDY,
    TABLE1,
    ResultsError,
    behaviour_from_fit,
    effects_from_results,
    merge_effects,
    rating_from_moderation,
    source_text,
    to_pool_scale,
)
from nonolab.design.plan import load_plan
from nonolab.design.power import BehaviourModel, Design, RatingModel, _lmm_chunk
from nonolab.design.schedule import balanced_schedule
from nonolab.design.selection import Constraints, eligible, load_pool
from nonolab.stats.lmm import reml_fit_batch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
FIT = {"solver": "minisat22", "encoding": "block_start", "metric_transform": "log1p_z"}


def _moderation_rows(alignment: str, metric: str, values: dict[str, float]) -> list[dict]:
    rows = []
    for term, coef in values.items():
        rows.append(
            {
                "alignment": alignment,
                "metric": metric,
                "term": term,
                "coef": coef,
                "se": float("nan") if term.startswith("var_") else 0.1,
                "n": 180,
                "converged": True,
                "warnings": "",
            }
        )
    return rows


def write_results(root: Path, *, slope: float = 0.3, var_puzzle: float = 0.16) -> dict:
    """Write a small results folder with known fitted values; return them."""
    known = {
        "Intercept": 3.2,
        "conflicts": slope,
        "expertise_composite": -0.2,
        "conflicts:expertise_composite": -0.12,
        "var_participant": 0.09,
        "var_puzzle": var_puzzle,
        "var_residual": 0.25,
    }
    decoy = {k: v + 1.0 for k, v in known.items()}  # other alignment / metric rows
    rows = (
        _moderation_rows("published", "conflicts", decoy)
        + _moderation_rows("corrected", "decisions", {k.replace("conflicts", "decisions"): v
                                                      for k, v in decoy.items()})
        + _moderation_rows("corrected", "conflicts", known)
    )  # fmt: skip
    t = root / "results" / "tables"
    params = FIT | {"outcome": "final_difficulty", "metrics": ["decisions", "conflicts"]}
    write_table(pd.DataFrame(rows), t / "moderation.csv", params=params)
    beh = []
    for alignment in ("published", "corrected"):
        for col, label in (("pause_count", "pauses"), ("error_count", "errors")):
            for metric in ("decisions", "conflicts"):
                ok = (alignment, col, metric) == ("corrected", "pause_count", "conflicts")
                beh.append(
                    {
                        "alignment": alignment,
                        "behaviour": label,
                        "outcome_column": col,
                        "metric": metric,
                        "coef": 2.0 if ok else 9.0,
                        "se": 1.0,
                        "var_participant": 1.0 if ok else 5.0,
                        "var_puzzle": 1.0,
                        "var_residual": 2.0,
                        "converged": True,
                    }
                )
    write_table(pd.DataFrame(beh), t / "behaviour_models.csv", params=FIT)
    t1 = [
        {"alignment": a, "solver": "minisat22", "encoding": e, "metric": m, "n": 6,
         "bt_rho": 0.4 if (a, e, m) == ("corrected", "block_start", "conflicts") else -0.9}
        for a in ("published", "corrected")
        for e in ("block_start", "order")
        for m in ("decisions", "conflicts")
    ]  # fmt: skip
    write_table(pd.DataFrame(t1), t / "table1_spearman.csv", params={"rating": "final"})
    # the study's two puzzles: conflicts 0 and 3, log1p 0 and ln 4: population SD ln 2; the
    # other solver's and encoding's rows must not count
    sat = [
        {"puzzle_hash": h, "puzzle_id": str(i), "encoding": enc, "solver": solver,
         "variables": 10, "clauses": 20, "decisions": 5, "propagations": 50,
         "conflicts": c if (solver, enc) == ("minisat22", "block_start") else 100 * i,
         "restarts": 1, "status": "sat"}
        for i, (h, c) in enumerate((("a" * 64, 0), ("b" * 64, 3)))
        for solver in ("minisat22", "cadical195")
        for enc in ("block_start", "order")
    ]  # fmt: skip
    write_table(pd.DataFrame(sat), root / SAT)
    write_json({"study_dir": "/studies/pilot", "preset": "pilot"}, root / STUDY)
    return known


def test_known_tables_give_the_exact_overrides(tmp_path) -> None:
    write_results(tmp_path)
    e = effects_from_results(tmp_path)
    r = e["rating"]
    # hand-computed: sd = sqrt(0.3^2 + 0.16) = 0.5, m = 0.3 / 0.5, residual sd 0.5 split
    # 0.7 : 0.35 (0.5 * 2/sqrt(5) and 0.5/sqrt(5))
    want = {
        "rating_mean": 3.2,
        "difficulty_sd": 0.5,
        "metric_strength": 0.6,
        "expertise_effect": -0.2,
        "participant_sd": 0.3,
        "noise_sd": 1 / math.sqrt(5),
        "final_noise_sd": 0.5 / math.sqrt(5),
        "interaction": -0.12,
    }
    assert r.keys() == want.keys()
    for k, v in want.items():
        assert r[k] == pytest.approx(v, rel=1e-12, abs=1e-12), k
    assert RatingModel(**r).residual_sd == pytest.approx(0.5)
    # behaviour: coef 2, variances 1, 1, 2 (total 4): slope 2/2, shares 1/4, 1/4, 1/2
    assert e["behaviour"] == pytest.approx(
        {"slope": 1.0, "var_participant": 0.25, "var_puzzle": 0.25, "var_residual": 0.5}
    )
    assert e["rho"] == 0.4
    assert e["study_metric_sd"] == pytest.approx(math.log(2), rel=1e-12)
    # what the sanity checks need: the number of puzzles the observed rho came from
    assert e["effect_study"]["n_puzzles"] == 6
    est = e["effect_study"]["estimates"]
    assert est["rating.metric_slope"] == [0.3, 0.1] and est["rating.interaction"] == [-0.12, 0.1]
    src = {s["field"]: s for s in e["effect_sources"]}
    fields = {f"rating.{k}" for k in want} | {f"behaviour.{k}" for k in e["behaviour"]}
    assert set(src) == fields | {"rho", "metric_sd"}
    assert src["metric_sd"]["file"] == SAT and len(src["metric_sd"]["lines"]) == 2
    # the lines point at the rows used: header is line 1, the corrected conflicts block is
    # the third block of seven rows
    inter = src["rating.interaction"]
    assert inter["file"] == MODERATION and inter["lines"] == [2 + 14 + 3]
    lines = (tmp_path / MODERATION).read_text().splitlines()
    assert lines[inter["lines"][0] - 1].startswith("corrected,conflicts,conflicts:expertise")
    rho = src["rho"]
    row = (tmp_path / TABLE1).read_text().splitlines()[rho["lines"][0] - 1]
    assert row.startswith("corrected,minisat22,block_start,conflicts,6,0.4")
    b = src["behaviour.slope"]
    row = (tmp_path / BEHAVIOUR).read_text().splitlines()[b["lines"][0] - 1]
    assert row.startswith("corrected,pauses,pause_count,conflicts,2")
    text = source_text(inter)
    assert f"results/tables/moderation.csv of {tmp_path} line 19" in text
    assert "fitted on study /studies/pilot (preset pilot)" in text
    # the behaviour by its table label, the results/ folder itself
    assert (
        effects_from_results(tmp_path / "results", behaviour="pauses")["behaviour"]
        == (e["behaviour"])
    )


@pytest.mark.parametrize("rel", [*REQUIRED, *SIDECARS])
def test_a_missing_file_is_named(tmp_path, rel) -> None:
    write_results(tmp_path)
    (tmp_path / rel).unlink()
    with pytest.raises(ResultsError, match=rel.replace(".", r"\.")):
        effects_from_results(tmp_path)
    assert main(["design", "--pool", "x", "--effects-from", str(tmp_path), "--out",
                 str(tmp_path / "o")]) == 2  # fmt: skip


def test_unusable_results_are_refused_naming_the_file(tmp_path) -> None:
    with pytest.raises(ResultsError, match="no such results folder"):
        effects_from_results(tmp_path / "nowhere")
    write_results(tmp_path)
    with pytest.raises(ResultsError, match=r"moderation\.csv: 0 rows with .*metric cadical"):
        effects_from_results(tmp_path, metric="cadical")
    with pytest.raises(ResultsError, match=r"moderation\.csv: fitted with solver"):
        effects_from_results(tmp_path, solver="glucose42")
    # a table fitted on another metric scale
    side = tmp_path / "results/tables/behaviour_models.provenance.json"
    rec = json.loads(side.read_text())
    rec["params"]["metric_transform"] = "raw"
    side.write_text(json.dumps(rec))
    with pytest.raises(ResultsError, match=r"behaviour_models\.csv: fitted with metric_transform"):
        effects_from_results(tmp_path)
    # a fit that did not converge
    write_results(tmp_path)
    p = tmp_path / MODERATION
    df = pd.read_csv(p)
    df.loc[df.index[-1], "converged"] = False
    df.to_csv(p, index=False)
    with pytest.raises(ResultsError, match=r"moderation\.csv line 22: the fit did not converge"):
        effects_from_results(tmp_path)


def test_fitted_slopes_move_to_the_pool_scale_user_values_do_not(tmp_path) -> None:
    write_results(tmp_path)
    e = merge_effects(effects_from_results(tmp_path), {"behaviour": {"slope": 0.7}}, "u.yaml")
    rating, beh = RatingModel(**e["rating"]), BehaviourModel(**e["behaviour"])
    # the pool's log1p SD twice the study's: slopes per pool SD are twice those per study SD
    r, b, src = to_pool_scale(rating, beh, e["effect_sources"], math.log(2), 2 * math.log(2))
    # metric slope 0.3 -> 0.6 with the puzzle variance beyond the metric (0.16) kept
    assert r.difficulty_sd * r.metric_strength == pytest.approx(0.6)
    assert r.difficulty_sd == pytest.approx(math.sqrt(0.36 + 0.16))
    assert r.interaction == pytest.approx(-0.24)
    assert (r.participant_sd, r.noise_sd, r.rating_mean) == (
        rating.participant_sd, rating.noise_sd, rating.rating_mean,
    )  # fmt: skip
    assert b.slope == 0.7 and b.var_puzzle == beh.var_puzzle  # the user's slope stays
    by = {s["field"]: s for s in src}
    assert by["rating.interaction"]["value"] == pytest.approx(-0.24)
    assert "on the pool's scale: x 2" in by["rating.interaction"]["formula"]
    assert by["behaviour.slope"]["value"] == 0.7


def test_user_values_replace_fitted_ones_and_their_sources(tmp_path) -> None:
    write_results(tmp_path)
    e = effects_from_results(tmp_path)
    m = merge_effects(e, {"rating": {"interaction": 0.2}}, "mine.yaml")
    assert m["rating"]["interaction"] == 0.2
    assert m["rating"]["participant_sd"] == e["rating"]["participant_sd"]
    assert m["rho"] == 0.4 and m["behaviour"] == e["behaviour"]
    src = [s for s in m["effect_sources"] if s["field"] == "rating.interaction"]
    assert len(src) == 1 and src[0]["file"] == "mine.yaml"
    assert "given in mine.yaml" in source_text(src[0])
    # without results: only the user's values, no sources (as before --effects-from)
    assert merge_effects(None, {"behaviour": {"slope": 0.2}}) == {"behaviour": {"slope": 0.2}}


def _simulated_fit(analysis: str, model: RatingModel, beh: BehaviourModel, reps: int):
    rng = np.random.default_rng(11)
    k, n = 24, 240
    metric = rng.integers(0, 200, k).astype(float)
    design = Design(balanced_schedule(k, 3, n, 0).sessions[:n], metric, missing=0.0)
    Y, X, codes, _, rel, _ = _lmm_chunk(analysis, design, model, beh, reps, rng)
    b, _, v, _, ok = reml_fit_batch(Y, X, codes, start=rel)
    assert ok.all()
    return b.mean(axis=0), v.mean(axis=0)


def _rating_round_trip(model: RatingModel) -> dict[str, float]:
    b, v = _simulated_fit("moderation_lmm", model, BehaviourModel(), 200)
    return rating_from_moderation(
        intercept=b[0], slope=b[1], expertise=b[2], interaction=b[3],
        var_participant=v[0], var_puzzle=v[1], var_residual=v[2],
    )  # fmt: skip


def test_conversion_inverts_the_simulator_on_the_gaussian_scale() -> None:
    # 200 simulated studies of 240 participants x 3 of 24 puzzles: Monte-Carlo SEs of the mean
    # estimates are below 0.008 (slope, intercept) and 0.003 (interaction, expertise); 0.03
    # is about 4 of the largest SE (and 0.1 for the metric strength, a ratio of a slope and a
    # 24-puzzle variance)
    model = RatingModel(interaction=0.15, scale="gaussian")
    got = _rating_round_trip(model)
    for k, v in got.items():
        tol = 0.1 if k == "metric_strength" else 0.03
        assert v == pytest.approx(getattr(model, k), abs=tol), k
    beh = BehaviourModel(slope=0.4, var_participant=0.2, var_puzzle=0.2, var_residual=0.6)
    b, v = _simulated_fit("behaviour_lmm", RatingModel(), beh, 200)
    got_b = behaviour_from_fit(b[1], *v)
    for k, val in got_b.items():
        assert val == pytest.approx(getattr(beh, k), abs=0.03), k


def test_conversion_on_the_rating_scale_is_attenuated_not_inflated() -> None:
    # the simulator rounds and clips its latent rating to 1-5; the fit of those ratings
    # returns effects closer to 0 (documented in nonolab.design.effects), never larger than
    # the latent ones beyond Monte-Carlo error, and the residual SD within 3%
    model = RatingModel(interaction=0.15)
    got = _rating_round_trip(model)
    slope = got["difficulty_sd"] * got["metric_strength"]
    true_slope = model.difficulty_sd * model.metric_strength
    assert 0.8 * true_slope < slope < true_slope + 0.02
    for k in ("interaction", "participant_sd"):
        assert 0.8 * getattr(model, k) < got[k] < getattr(model, k) + 0.01, k
    assert 0.8 * abs(model.expertise_effect) < abs(got["expertise_effect"]) < 0.16
    res = math.hypot(got["noise_sd"], got["final_noise_sd"])
    assert res == pytest.approx(model.residual_sd, rel=0.03)


# -- end to end on the example study -----------------------------------------------------------

TARGETS = [MODERATION, BEHAVIOUR, TABLE1]


@pytest.fixture(scope="module")
def example_results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("example-results")
    code = main(["run", "--study", str(EXAMPLE), "--results", str(out), "--cores", "1",
                 "--quiet", *TARGETS])  # fmt: skip
    assert code == 0
    return out


def test_example_study_effects_are_near_the_known_ones(example_results) -> None:
    truth = json.loads((EXAMPLE / "ground_truth.json").read_text())["params"]
    e = effects_from_results(example_results)
    r = e["rating"]
    mod = pd.read_csv(example_results / MODERATION)
    mod = mod[(mod.alignment == "corrected") & (mod.metric == "conflicts")].set_index("term")
    n_part, n_obs = truth["n_participants"], int(mod["n"].iloc[0])
    per = n_obs / n_part  # ratings per participant
    # fixed effects: within 3 of the fit's own SEs of the simulated values (the example study
    # has no metric x expertise interaction: 0). A fixed seed, so this cannot flake.
    fixed = {
        "Intercept": (r["rating_mean"], truth["rating_mean"]),
        "conflicts": (
            r["difficulty_sd"] * r["metric_strength"],
            truth["difficulty_sd"] * truth["metric_strength"],
        ),
        "expertise_composite": (r["expertise_effect"], truth["expertise_effect"]),
        "conflicts:expertise_composite": (r["interaction"], 0.0),
    }
    for term, (got, want) in fixed.items():
        assert abs(got - want) < 3 * mod.loc[term, "se"], term
    # variance components have no SE in the table; the large-sample SEs of REML variances in
    # a crossed design: residual s2 sqrt(2 / (n - p - N)), participant
    # sqrt(2 / (N - 1)) (s2_p + s2 / m) with m ratings per participant; within 3 of those.
    s2 = truth["noise_sd"] ** 2 + truth["final_noise_sd"] ** 2
    s2_p = truth["participant_sd"] ** 2
    res2 = r["noise_sd"] ** 2 + r["final_noise_sd"] ** 2
    assert abs(res2 - s2) < 3 * s2 * math.sqrt(2 / (n_obs - 4 - n_part))
    se_p = math.sqrt(2 / (n_part - 1)) * (s2_p + s2 / per)
    assert abs(r["participant_sd"] ** 2 - s2_p) < 3 * se_p
    # the observed rho of six puzzles is what Table 1 says (no model: reported as is)
    t1 = pd.read_csv(example_results / TABLE1)
    row = t1[(t1.alignment == "corrected") & (t1.solver == "minisat22")
             & (t1.encoding == "block_start") & (t1.metric == "conflicts")]  # fmt: skip
    assert e["rho"] == float(row["bt_rho"].iloc[0])
    assert all(str(EXAMPLE) in s["study"] for s in e["effect_sources"])


def _design(study_dir: Path, out: Path, *extra: str) -> int:
    """Run ``nonolab design`` on the public pool with tiny settings (6 puzzles, 24 sessions)."""
    return main(
        [
            "design",
            "--pool", str(study_dir / "nonograms10x10.txt"),
            "--pool-metrics", str(study_dir / "nonogram_solver_stats.csv"),
            "--puzzles", "6", "--participants", "24", "--k-curve", "6",
            "--replications", "40", "--lmm-replications", "20", "--random-selections", "20",
            *extra, "--no-figures", "--out", str(out),
        ]
    )  # fmt: skip


def test_design_runs_with_effects_from_the_example(example_results, study_dir, tmp_path) -> None:
    pool, pool_metrics = study_dir / "nonograms10x10.txt", study_dir / "nonogram_solver_stats.csv"
    effects = tmp_path / "mine.yaml"
    effects.write_text(yaml.safe_dump({"behaviour": {"slope": 0.25}}))
    out = tmp_path / "plan"
    code = _design(study_dir, out, "--effects-from", str(example_results), "--effects",
                   str(effects))  # fmt: skip
    assert code == 0
    e = effects_from_results(example_results)
    plan = load_plan(out / "plan.yaml")
    by = {a["name"]: a for a in plan.analyses}
    prim = by["spearman_bt"]["settings"]
    assert prim["rho"] == pytest.approx(e["rho"])
    assert {s["field"] for s in prim["effect_sources"]} >= {"rho", "rating.participant_sd"}
    # the fitted slopes on the pool's scale: x SD(log1p conflicts) over the eligible pool /
    # over the example's six puzzles
    el = eligible(load_pool(str(pool), str(pool_metrics)), Constraints())
    ratio = float(np.log1p(el["conflicts"].to_numpy(dtype=float)).std()) / e["study_metric_sd"]
    mod = by["moderation_lmm"]["settings"]
    assert mod["interaction"] == pytest.approx(e["rating"]["interaction"] * ratio)
    src = {s["field"]: s for s in mod["effect_sources"]}
    assert src["rating.interaction"]["file"] == MODERATION
    beh = by["behaviour_lmm"]["settings"]
    assert beh["slope"] == 0.25 and beh["var_puzzle"] == pytest.approx(e["behaviour"]["var_puzzle"])
    assert {s["file"] for s in beh["effect_sources"] if s["field"] == "behaviour.slope"} == {
        str(effects)
    }
    text = (out / "preregistration.md").read_text()
    assert "rating.interaction = " in text
    # user strings (paths) are escaped for Markdown
    from nonolab.design.prereg import _md

    assert _md(f"results/tables/moderation.csv of {example_results} line") in text
    assert _md(f"fitted on study {EXAMPLE}") in text
    assert _md(f"behaviour.slope = 0.25: given in {effects}") in text
    side = json.loads((out / "tables" / "design_power.provenance.json").read_text())
    assert str(example_results / MODERATION) in side["inputs"]
    assert str(example_results / TABLE1) in side["inputs"] and str(effects) in side["inputs"]
    power = pd.read_csv(out / "tables" / "design_power.csv")
    power = power[power["design"] == "planned"].set_index("analysis")
    assert power.loc["moderation_lmm", "effect"] == pytest.approx(mod["interaction"])
    assert power.loc["spearman_bt", "effect"] == pytest.approx(e["rho"])
    # --rho given on the command line wins over the observed rho
    code = _design(study_dir, tmp_path / "rho", "--effects-from", str(example_results), "--rho",
                   "0.5")  # fmt: skip
    assert code == 0
    prim = load_plan(tmp_path / "rho" / "plan.yaml").analyses[0]["settings"]
    assert prim["rho"] == 0.5 and "rho" not in {s["field"] for s in prim["effect_sources"]}


def test_workflow_design_takes_effects_from_its_own_results(example_results, study_dir) -> None:
    cfg = example_results / "design.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "design": {
                    "pool": str(study_dir / "nonograms10x10.txt"),
                    "pool_metrics": str(study_dir / "nonogram_solver_stats.csv"),
                    "puzzles": 6, "participants": [24], "k_curve": [6],
                    "replications": 40, "lmm_replications": 20, "random_selections": 20,
                    "effects_from_results": True,
                }
            }
        )
    )  # fmt: skip
    code = main(["run", "--study", str(EXAMPLE), "--results", str(example_results), "--cores",
                 "1", "--quiet", "design", "--", "--configfile", str(cfg)])  # fmt: skip
    assert code == 0
    plan = load_plan(example_results / "results" / "design" / "plan.yaml")
    prim = plan.analyses[0]["settings"]
    assert prim["rho"] == pytest.approx(effects_from_results(example_results)["rho"])
    assert {s["file"] for s in prim["effect_sources"]} >= {MODERATION, TABLE1}
