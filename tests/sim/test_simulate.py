"""Tests of the study simulator (nonolab.sim) and ``nonolab simulate``."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from nonolab.cli import main
from nonolab.sim.events import pre_survey, simulate_study
from nonolab.sim.model import (
    FAULTS,
    GapMixture,
    SimParams,
    cut_rating,
    expected_rating,
    generate_unique_puzzles,
    ordered_triples,
    rating_scale_slope,
)
from nonolab.sim.writer import CODED_FILE, GROUND_TRUTH, LOG_DIR, PUZZLE_FILE, write_study

SMALL = SimParams(n_participants=5, n_puzzles=3, height=6, width=6, filled=18)


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "study"
    write_study(simulate_study(SMALL, seed=7), out)
    return out


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- gap mixture and its threshold


def test_threshold_hand_case_equal_components_is_midpoint():
    # equal weights and SDs for components 2 and 3: posteriors are equal halfway in log space
    g = GapMixture(
        medians_s=(0.01, 1.0, math.e**2), log_sds=(0.5, 0.7, 0.7), weights=(0.2, 0.4, 0.4)
    )
    assert g.threshold_log() == pytest.approx(1.0, abs=1e-9)
    assert g.threshold_s() == pytest.approx(math.e, rel=1e-9)


def test_default_threshold_matches_published_crossing():
    # published threshold exp(0.857) = 2.36 s (METHODS 5); defaults = published means/weights
    assert GapMixture().threshold_s() == pytest.approx(2.36, rel=0.01)


@settings(max_examples=60, deadline=None)
@given(
    m=st.lists(st.floats(-5, 3), min_size=3, max_size=3, unique=True).map(sorted),
    s=st.lists(st.floats(0.2, 1.5), min_size=3, max_size=3),
    w=st.lists(st.floats(0.05, 1.0), min_size=3, max_size=3),
)
def test_threshold_is_posterior_crossing(m, s, w):
    if m[2] - m[1] < 0.3 or m[1] - m[0] < 0.1:
        return
    w = [x / sum(w) for x in w]
    g = GapMixture(tuple(math.exp(x) for x in m), tuple(s), tuple(w))
    dens = [w[k] * stats.norm.pdf(m, m[k], s[k]) for k in range(3)]  # noqa: F841 (shape check)
    try:
        x = g.threshold_log()
    except ValueError:  # no sign change between the means: legitimately no crossing
        return
    assert m[1] <= x <= m[2]
    a = w[1] * stats.norm.pdf(x, m[1], s[1])
    b = w[2] * stats.norm.pdf(x, m[2], s[2])
    assert a == pytest.approx(b, rel=1e-6, abs=1e-12)


def test_gap_sample_follows_mixture():
    g = GapMixture()
    x = np.log(g.sample(np.random.default_rng(3), 20000))
    mu, sd, w = np.log(g.medians_s), np.array(g.log_sds), np.array(g.weights)

    def cdf(v):
        return sum(w[k] * stats.norm.cdf(v, mu[k], sd[k]) for k in range(3))

    assert stats.kstest(x, cdf).pvalue > 1e-3


# ---------------------------------------------------------------- ratings and truth


def test_cut_rating_hand_cases():
    assert [cut_rating(v) for v in (-3, 1.49, 1.5, 2.2, 3.5, 4.49, 4.5, 9)] == [
        1,
        1,
        2,
        2,
        4,
        4,
        5,
        5,
    ]


def test_expected_rating_matches_monte_carlo():
    rng = np.random.default_rng(1)
    for mean, sd in ((3.4, 1.0), (1.2, 0.5), (4.8, 1.3)):
        y = rng.normal(mean, sd, 200_000)
        mc = np.mean([cut_rating(v) for v in y[:50_000]])
        assert float(expected_rating(mean, sd)) == pytest.approx(mc, abs=0.02)


def test_rating_scale_slope_matches_simulated_regression():
    p = SimParams()
    truth = rating_scale_slope(p, final=True)
    assert 0 < truth < p.difficulty_sd * p.metric_strength  # attenuated by rounding and clipping
    rng = np.random.default_rng(2)
    n = 100_000
    z = rng.standard_normal(n)
    s = p.metric_strength
    y = (
        p.rating_mean
        + p.difficulty_sd * (s * z + math.sqrt(1 - s * s) * rng.standard_normal(n))
        + p.expertise_effect * rng.standard_normal(n)
        + rng.normal(0, p.participant_sd, n)
        + rng.normal(0, p.noise_sd, n)
        + rng.normal(0, p.final_noise_sd, n)
    )
    r = np.clip(np.floor(y + 0.5), 1, 5)
    assert np.polyfit(z, r, 1)[0] == pytest.approx(truth, abs=0.01)
    assert rating_scale_slope(SimParams(metric_strength=0.0)) == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(n_puzzles=st.integers(3, 30), n_sessions=st.integers(1, 120), seed=st.integers(0, 10**6))
def test_ordered_triples_distinct_and_balanced(n_puzzles, n_sessions, seed):
    triples = ordered_triples(n_puzzles, n_sessions, np.random.default_rng(seed))
    assert len(triples) == n_sessions
    assert all(len(set(t)) == 3 and all(0 <= x < n_puzzles for x in t) for t in triples)
    counts = Counter(x for t in triples for x in t)
    served = [counts.get(k, 0) for k in range(n_puzzles)]
    assert max(served) - min(served) <= 1


def test_pre_survey_tracks_expertise():
    rng = np.random.default_rng(5)
    e = rng.standard_normal(400)
    answers = [pre_survey(float(x), rng) for x in e]
    skill = [a["skill_nonogram"] for a in answers]
    assert stats.spearmanr(e, skill).statistic > 0.7
    assert all(1 <= a["skill_nonogram"] <= 10 and 1 <= a["skill_puzzles"] <= 10 for a in answers)
    never = [a for a in answers if a["played_before"] == "never"]
    assert never and all(a["nonogram_size_experience"] == ["N/A"] for a in never)


def test_params_are_validated():
    with pytest.raises(ValueError, match="unknown fault"):
        SimParams(faults=("gremlins",))
    with pytest.raises(ValueError, match="3 puzzles"):
        SimParams(n_puzzles=2)
    with pytest.raises(ValueError, match="unknown codes"):
        SimParams(theme_effects={"NOPE": 1.0})


def test_puzzles_are_the_sat_generators_draws():
    from nonolab.sat.generate import random_unique_puzzles

    got = generate_unique_puzzles(4, 6, 6, 18, np.random.default_rng(5))
    ref = list(random_unique_puzzles(4, 6, 6, 18, np.random.default_rng(5)))
    assert [p.hash for p in got] == [p.hash for p in ref]
    assert [p.label for p in got] == ["0", "1", "2", "3"]


def test_puzzles_are_distinct_and_the_budget_is_finite():
    # a 2x2 grid with one filled cell: 4 puzzles, all unique; a fifth distinct one does not exist
    got = generate_unique_puzzles(4, 2, 2, 1, np.random.default_rng(0))
    assert len({p.hash for p in got}) == 4
    with pytest.raises(ValueError, match="distinct unique"):
        generate_unique_puzzles(5, 2, 2, 1, np.random.default_rng(0), max_tries=50)


# ---------------------------------------------------------------- the written study


def test_byte_identical_for_a_seed(tmp_path, small_study):
    write_study(simulate_study(SMALL, seed=7), tmp_path / "again")
    assert _tree(tmp_path / "again") == _tree(small_study)
    write_study(simulate_study(SMALL, seed=8), tmp_path / "other")
    assert _tree(tmp_path / "other") != _tree(small_study)


def test_more_participants_keep_the_earlier_ones(small_study):
    bigger = simulate_study(
        SimParams(n_participants=7, n_puzzles=3, height=6, width=6, filled=18), 7
    )
    small = simulate_study(SMALL, 7)
    for pid, lines in small.logs.items():
        assert bigger.logs[pid][:2] == lines[:2]  # same session start and pre-survey
        assert bigger.logs[pid][2:] == lines[2:]


def test_layout_and_puzzles(small_study):
    from nonolab.sat.puzzles import load_study_puzzles
    from nonolab.sat.solvers import uniqueness

    puzzles = load_study_puzzles(small_study / PUZZLE_FILE)
    truth = json.loads((small_study / GROUND_TRUTH).read_text())
    assert [p.hash for p in puzzles] == [t["puzzle_hash"] for t in truth["puzzles"]]
    assert all(uniqueness(p).status == "unique" for p in puzzles)
    assert all(sum(map(sum, p.solution)) == 18 for p in puzzles)
    assert sorted(t["difficulty_rank"] for t in truth["puzzles"]) == [1, 2, 3]
    logs = sorted((small_study / LOG_DIR).glob("*.ndjson"))
    assert [p.stem for p in logs] == sorted(f"Sim-p{i}" for i in range(1, 6))
    assert (small_study / "assignment_schedule_3puzzles_3perms.json").exists()


def _replay(events: list[dict], shape: tuple[int, int]) -> tuple[np.ndarray, list]:
    """Replay one attempt: return the final board and ``(check event, board then)`` pairs."""
    board = np.zeros(shape, dtype=int)
    history: list[list[tuple[int, int, int]]] = []
    at_checks = []
    for e in events:
        if e["type"] == "check_bank":
            at_checks.append((e, board.copy()))
        elif e["type"] == "move":
            history.append([(e["r"], e["c"], int(board[e["r"], e["c"]]))])
            board[e["r"], e["c"]] = e["value"]
        elif e["type"] == "drag":
            a, b = e["normalized_start"], e["normalized_end"]
            v = 1 if e["mode"] == "flip" else -1
            cells = [(r, c) for r in range(a["r"], b["r"] + 1) for c in range(a["c"], b["c"] + 1)]
            assert e["changed_cells"] == len(cells)
            history.append([(r, c, int(board[r, c])) for r, c in cells])
            for r, c in cells:
                assert board[r, c] == 0  # simulated drags only cover empty cells (unambiguous)
                board[r, c] = v
        elif e["type"] == "undo":
            for r, c, old in history.pop():
                board[r, c] = old
        elif e["type"] == "reset":
            board[:] = 0
            history.clear()
    return board, at_checks


def test_logs_replay_to_the_truth(small_study):
    _check_replay(small_study)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(4, 8),
    density=st.floats(0.3, 0.7),
    n=st.integers(1, 3),
)
def test_any_simulated_study_replays_to_its_truth(tmp_path_factory, seed, size, density, n):
    filled = max(1, min(size * size - 1, round(density * size * size)))
    p = SimParams(n_participants=n, n_puzzles=3, height=size, width=size, filled=filled)
    out = tmp_path_factory.mktemp("hyp") / "s"
    try:
        study = simulate_study(p, seed)
    except ValueError as exc:  # too few unique puzzles of this size/density
        assert "unique" in str(exc)
        return
    write_study(study, out)
    _check_replay(out)


def _check_replay(small_study: Path) -> None:
    truth = json.loads((small_study / GROUND_TRUTH).read_text())
    puzzles = json.loads((small_study / PUZZLE_FILE).read_text())
    sol = {p["id"]: np.array(p["solution"]) for p in puzzles}
    for part in truth["participants"]:
        events = _events(small_study / LOG_DIR / f"{part['participant_id']}.ndjson")
        start = events[0]
        assert start["type"] == "session_start_three"
        queue = start["queue"]
        assert queue == [a["puzzle_id"] for a in part["attempts"]]
        # split into puzzle windows at the per-puzzle surveys
        windows, cur = [], []
        for e in events[2:]:
            if e["type"] == "survey_submit" and e["survey_type"].startswith("puzzle_"):
                windows.append((cur, e))
                cur = []
            else:
                cur.append(e)
        assert len(windows) == 3
        post = next(e for e in events if e.get("survey_type") == "post")["answers"]
        for k, ((evs, survey), att) in enumerate(zip(windows, part["attempts"], strict=True)):
            board, at_checks = _replay(evs, sol[att["puzzle_id"]].shape)
            checks = [e for e in evs if e["type"] == "check_bank"]
            if att["solved"]:
                assert checks and checks[-1]["solved"] is True
                assert np.array_equal(board == 1, sol[att["puzzle_id"]] == 1)
                assert post[f"puzzle_{k + 1}_rate_again"] == att["final_rating"]
            else:
                assert not any(c["solved"] for c in checks)
                assert f"puzzle_{k + 1}_rate_again" not in post
            assert survey["answers"]["difficulty"] == att["initial_rating"]
            for c, then in at_checks:  # mismatches = cells whose filled state is wrong
                bad = np.argwhere((then == 1) != (sol[att["puzzle_id"]] == 1)).tolist()
                assert c["mismatches"] == bad and c["solved"] == (not bad)
            fills_on_empty = sum(
                1
                for e in evs
                if e["type"] == "move"
                and e["value"] == 1
                and sol[att["puzzle_id"]][e["r"], e["c"]] == 0
            )
            assert fills_on_empty == att["errors"]
            assert sum(e["type"] == "hint" for e in evs) == att["hints"]
        assert events[-1]["type"] == "session_end"


def test_gaps_in_written_logs_follow_the_mixture(tmp_path):
    from datetime import datetime

    study = simulate_study(
        SimParams(n_participants=40, n_puzzles=3, height=6, width=6, filled=18), 11
    )
    interaction = {"move", "drag", "hint", "check_bank", "reset", "undo"}
    gaps = []
    for lines in study.logs.values():
        prev = None
        for ev in map(json.loads, lines):
            if ev["type"] not in interaction:
                prev = None
                continue
            t = datetime.fromisoformat(ev["t"]).timestamp()
            if prev is not None:
                gaps.append(t - prev)
            prev = t
    g = GapMixture()
    mu, sd, w = np.log(g.medians_s), np.array(g.log_sds), np.array(g.weights)
    x = np.log(np.array(gaps))
    assert len(x) > 3000

    def cdf(v):
        return sum(w[k] * stats.norm.cdf(v, mu[k], sd[k]) for k in range(3))

    assert stats.kstest(x, cdf).pvalue > 1e-3


def test_coded_responses_consistent_with_logs(small_study):
    coded = pd.read_csv(small_study / CODED_FILE)
    assert len(coded) == 5 * 6
    truth = json.loads((small_study / GROUND_TRUTH).read_text())
    rr = coded[coded.response_kind == "rating_reason"]
    for part in truth["participants"]:
        rows = rr[rr.source_file == f"{part['participant_id']}.ndjson"].sort_values("order")
        finals = [-1.0 if a["skipped"] else float(a["final_rating"]) for a in part["attempts"]]
        assert rows.final_difficulty.tolist() == finals
    codes = coded.filter(like="code_")
    assert (codes.sum(axis=1) == coded.n_codes).all()
    assert (
        coded.codes_str.fillna("").str.split("|").map(lambda x: len([c for c in x if c]))
        == coded.n_codes
    ).all()


def test_theme_effects_show_in_large_study():
    p = SimParams(n_participants=120, n_puzzles=3, height=6, width=6, filled=18)
    study = simulate_study(p, 3)
    df = pd.DataFrame(study.coded)
    rr = df[(df.response_kind == "rating_reason") & (df.final_difficulty > 0)]
    # AMBIG (effect +0.7 per rating point): mentioned with harder ratings; FOOT (-0.7): easier
    amb = (
        rr[rr.code_AMBIG == 1].final_difficulty.mean()
        - rr[rr.code_AMBIG == 0].final_difficulty.mean()
    )
    foot = (
        rr[rr.code_FOOT == 1].final_difficulty.mean()
        - rr[rr.code_FOOT == 0].final_difficulty.mean()
    )
    assert amb > 0.2 and foot < -0.2


# ---------------------------------------------------------------- faults and the parser


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_lands_where_ground_truth_says(tmp_path, fault):
    logs_mod = pytest.importorskip("nonolab.study.logs")
    p = SimParams(n_participants=3, n_puzzles=3, height=6, width=6, filled=18, faults=(fault,))
    out = tmp_path / "s"
    write_study(simulate_study(p, 1), out)
    (rec,) = json.loads((out / GROUND_TRUTH).read_text())["faults"]
    assert rec["fault"] == fault
    path = out / LOG_DIR / f"{rec['participant_id']}.ndjson"
    events, errors, _ = logs_mod.read_log_lines(str(path), path.name)
    if fault == "move_outside_grid":  # well-formed: the grid check is ingest's job
        lines = path.read_text().split("\n")
        ev = json.loads(lines[rec["line"] - 1])
        assert ev["type"] == "move" and ev["r"] >= p.height
        assert not errors
        return
    assert len(errors) == 1
    assert errors[0].source.endswith(f":{rec['line']}")
    if fault == "truncated_last_line":
        assert "truncated" in errors[0].reason


def test_clean_logs_parse_without_errors(small_study):
    logs_mod = pytest.importorskip("nonolab.study.logs")
    for path in sorted((small_study / LOG_DIR).glob("*.ndjson")):
        _, errors, n = logs_mod.read_log_lines(str(path), path.name)
        assert not errors and n > 50


# ---------------------------------------------------------------- format fidelity to the public study


@pytest.mark.study
def test_format_matches_public_study(study_dir, small_study):
    def key_sets(folder: Path) -> tuple[dict, dict]:
        ev_keys: dict[str, set] = {}
        survey_keys: dict[str, set] = {}
        for f in sorted((folder / LOG_DIR).iterdir()):
            for line in f.read_text(encoding="utf-8").splitlines():
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:
                    continue
                ev_keys.setdefault(e["type"], set()).add(tuple(sorted(e)))
                if e["type"] == "survey_submit":
                    kind = e["survey_type"]
                    survey_keys.setdefault(kind, set()).update(e["answers"])
        return ev_keys, survey_keys

    real_ev, real_survey = key_sets(study_dir)
    sim_ev, sim_survey = key_sets(small_study)
    for typ, keys in sim_ev.items():
        assert typ in real_ev, f"simulated event type {typ} not in the public study"
        assert keys <= real_ev[typ], f"{typ}: simulated keys {keys - real_ev[typ]}"
    for kind, keys in sim_survey.items():
        assert keys <= real_survey[kind], f"survey {kind}: {keys - real_survey[kind]}"
    assert set(sim_ev) >= {"move", "hint", "undo", "check_bank", "survey_submit"}
    real_cols = pd.read_csv(study_dir / CODED_FILE, nrows=1).columns.tolist()
    assert pd.read_csv(small_study / CODED_FILE, nrows=1).columns.tolist() == real_cols
    real_p = json.loads((study_dir / PUZZLE_FILE).read_text())[0]
    sim_p = json.loads((small_study / PUZZLE_FILE).read_text())[0]
    assert list(sim_p) == list(real_p) and list(sim_p["clues"]) == list(real_p["clues"])
    # timestamps in the same ISO-8601 form (microseconds, +00:00)
    real_t = json.loads((study_dir / LOG_DIR / "Bing-p1.ndjson").read_text().splitlines()[0])["t"]
    sim_t = _events(next((small_study / LOG_DIR).glob("*.ndjson")))[0]["t"]
    assert len(real_t) == len(sim_t) and real_t[-6:] == sim_t[-6:] == "+00:00"


# ---------------------------------------------------------------- command line


def test_cli_writes_study_and_refuses_foreign_folder(tmp_path, capsys):
    out = tmp_path / "cli"
    argv = ["simulate", "--participants", "3", "--puzzles", "3", "--size", "6x6", "--seed", "4"]
    assert main([*argv, str(out)]) == 0
    assert "true pause threshold" in capsys.readouterr().out
    truth = json.loads((out / GROUND_TRUTH).read_text())
    assert truth["seed"] == 4 and truth["params"]["filled"] == 18
    assert main([*argv, str(out)]) == 2  # a non-empty folder is refused without --force
    assert main([*argv, "--force", str(out)]) == 0  # rewriting a simulated study is allowed
    foreign = tmp_path / "real"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("x")
    assert main([*argv, str(foreign)]) == 2
    assert "refusing" in capsys.readouterr().err


def test_every_fault_is_ledgered_by_ingest_at_its_line(tmp_path):
    ingest = pytest.importorskip("nonolab.study.ingest")
    from nonolab.study.presets import resolve_preset

    out = tmp_path / "faulty"
    assert main(["simulate", "--participants", "8", "--puzzles", "3", "--size", "6x6",
                 "--seed", "2", "--faults", "all", str(out)]) == 0  # fmt: skip
    faults = json.loads((out / GROUND_TRUTH).read_text())["faults"]
    assert sorted(f["fault"] for f in faults) == sorted(FAULTS)
    ledger = ingest.ingest_study(out, resolve_preset(out, "default")).tables["ledger"]
    excluded = set(ledger.loc[ledger["action"] == "excluded", "source"])
    for f in faults:
        assert f"{LOG_DIR}/{f['participant_id']}.ndjson:{f['line']}" in excluded, f


def test_cli_rejects_unknown_fault(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--faults", "gremlins", "x"])
    assert "unknown fault classes" in capsys.readouterr().err


def test_line_solver_metric_drives_difficulty():
    p = SimParams(
        n_participants=2, n_puzzles=6, metric="propagation_line_solves", metric_strength=1.0
    )
    truth = simulate_study(p, 4).truth
    x = [t["propagation_line_solves"] for t in truth["puzzles"]]
    z = [t["metric_z"] for t in truth["puzzles"]]
    d = [t["difficulty"] for t in truth["puzzles"]]
    lz = np.log1p(x)
    assert np.allclose(z, (lz - lz.mean()) / lz.std())
    assert np.allclose(d, np.array(z) * p.difficulty_sd)  # strength 1: difficulty = scale * z
