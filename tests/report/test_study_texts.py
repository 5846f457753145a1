"""Texts come from the study, not from the paper or another study.

Three studies (a 4-puzzle, 8-participant study serving 4 puzzles per session with no drag
events and 8x8 grids; a simulated 8-puzzle, 20-participant study of 3 per session; the example
study), each ingested into its own results folder. For each: every caption template renders
(:func:`nonolab.report.captions.render_caption`), and the figure texts (titles, axis labels,
legends, tick labels) and table columns are drawn for that study; then the texts are searched
for any number of puzzles, participants or attempts that is not the study's own, for drags
when the study logged none, and for the published analysis when its preset has none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from nonolab.cli import main
from nonolab.core.tables import write_json
from nonolab.report.captions import render_caption, study_facts
from nonolab.report.figures.pauses import plot_gap_distribution
from nonolab.report.figures.power import power_figure
from nonolab.sim.power import power_table
from nonolab.stats.correlations import aligned_metrics, raw_mean_rating, table1
from nonolab.stats.pauses import pause_threshold
from nonolab.stats.ranking import (
    bootstrap_log_strengths,
    pairwise_comparisons,
    strengths_table,
)
from nonolab.study.identity import study_identity
from nonolab.study.ingest import ingest_study, write_ingest
from nonolab.study.presets import resolve_preset

REPO = Path(__file__).resolve().parents[2]
CAPTIONS = sorted(p.stem for p in (REPO / "workflow/report").glob("*.rst"))
#: the public study's design, which no other study's text may carry
PAPER = {"puzzles": 6, "participants": 67, "attempts": 201}
#: phrases about a published analysis (a study whose preset has none must not show them)
PUBLISHED_PHRASES = (
    "published analysis",
    "published intervals",
    "published_semantics",
    "the published",
    "as published",
    "row-position",
    "he2026",
    "k²",
    "k squared",
    "2.36 s",
    "the paper",
    "paper's",
    "he et al",
)


def _ingest(study: Path, results: Path) -> None:
    preset = resolve_preset(study, "auto")
    res = ingest_study(study, preset)
    write_ingest(res, results / "ingest", params={"preset": preset.name})
    counts = {
        "participants": res.summary["participants"],
        "attempts": res.summary["attempts"],
        "puzzles": len(res.summary["attempts_per_puzzle"]),
        "published": bool(preset.data.get("published")),
    }
    write_json(study_identity(study, preset) | counts, results / "ingest" / "study.json")


def _small_study(results: Path) -> None:
    """Ingest tables of a 4-puzzle 8x8 study: 8 participants, each served all 4 puzzles in one
    session, no drag events (the simulator serves at most 3 per session and draws drags, so
    this study is written at the table level: what the facts and texts read)."""
    ing = results / "ingest"
    ing.mkdir(parents=True)
    hashes = [f"{i:064x}" for i in range(1, 5)]
    pd.DataFrame(
        {
            "participant_id": [f"p{k}" for k in range(8) for _ in range(4)],
            "puzzle_id": [str(i) for _ in range(8) for i in range(4)],
            "puzzle_hash": [hashes[i] for _ in range(8) for i in range(4)],
        }
    ).to_parquet(ing / "attempts.parquet")
    pd.DataFrame({"puzzle_hash": hashes, "height": 8, "width": 8}).to_parquet(
        ing / "puzzles.parquet"
    )
    pd.DataFrame({"type": ["move", "check", "hint", "move"] * 50}).to_parquet(
        ing / "events.parquet"
    )
    record = {"study_dir": "/studies/lab-eight", "preset": "lab-eight", "published": False}
    record |= {"participants": 8, "attempts": 32, "puzzles": 4}
    (ing / "study.json").write_text(json.dumps(record))


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("texts")
    out = {}
    out["small"] = root / "small" / "results"
    _small_study(out["small"])
    sim = root / "sim_study"
    args = ["--participants", "20", "--puzzles", "8", "--size", "9x9", "--seed", "21"]
    assert main(["simulate", str(sim), *args]) == 0
    out["eight"] = root / "eight" / "results"
    _ingest(sim, out["eight"])
    out["example"] = root / "example" / "results"
    _ingest(REPO / "data" / "example-study", out["example"])
    return out


def test_facts_are_the_studys(studies):
    small = study_facts(studies["small"])
    assert (small["puzzles"], small["participants"], small["attempts"]) == (4, 8, 32)
    assert small["puzzles_per_session"] == [4] and small["puzzle_sizes"] == ["8x8"]
    assert small["drags"] is False and small["published"] is False
    eight = study_facts(studies["eight"])
    assert (eight["puzzles"], eight["participants"]) == (8, 20)
    assert eight["puzzles_per_session"] == [3] and eight["puzzle_sizes"] == ["9x9"]
    example = study_facts(studies["example"])
    assert (example["puzzles"], example["participants"], example["attempts"]) == (6, 30, 90)
    assert example["name"] == "example-study" and example["published"] is False
    for facts in (small, eight, example):
        att = pd.read_parquet(
            studies[next(k for k in studies if study_facts(studies[k]) == facts)]
            / "ingest/attempts.parquet"
        )
        assert facts["attempts"] == len(att)


def _figure_texts(fig) -> str:
    """Every text a figure shows: titles, axis labels, tick labels, legends, free texts."""
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        out += [ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        out += [t.get_text() for t in ax.texts]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close(fig)
    return "\n".join(out)


def _pause_record(drags: bool) -> tuple[np.ndarray, dict]:
    rng = np.random.default_rng(3)
    parts = [np.exp(rng.normal(np.log(0.8), 0.6, 260)), np.exp(rng.normal(np.log(6), 0.5, 140))]
    if drags:
        parts.append(np.exp(rng.normal(np.log(0.012), 0.9, 40)))
    gaps = np.concatenate(parts)
    return gaps, pause_threshold(gaps, threshold="fitted", converged={"random_state_checks": 0})


def _study_texts(results: Path) -> str:
    """Every caption, figure text and table column the report of this study shows."""
    facts = study_facts(results)
    parts = [render_caption(stem, results) for stem in CAPTIONS]
    # power figure: a small grid and the study's own design cell
    per = max(facts["puzzles_per_session"])
    grid = [
        power_table(n, m, [0.6], 3, 1, per_session=min(per, n)).assign(design="grid")
        for n in (max(per, 4), 12)
        for m in (10, 40)
    ]
    own = power_table(facts["puzzles"], facts["participants"], [0.6], 3, 1, per_session=per)
    parts.append(_figure_texts(power_figure(pd.concat([*grid, own.assign(design="study")]))))
    gaps, record = _pause_record(facts["drags"])
    parts.append(_figure_texts(plot_gap_distribution(gaps, record, drags=facts["drags"])))
    # bt_strengths and Table 1 columns, with the published parts only for a published preset
    att = pd.read_parquet(results / "ingest" / "attempts.parquet")
    items = sorted(att["puzzle_id"].unique(), key=lambda s: (len(s), s))
    rng = np.random.default_rng(0)
    ratings = att.assign(final_difficulty=rng.integers(1, 6, len(att)))
    comp = pairwise_comparisons(ratings)
    boot = bootstrap_log_strengths(comp, items, 5, 1)
    k2 = bootstrap_log_strengths(comp, items, 5, 1, weighting="k2") if facts["published"] else None
    bt = strengths_table(comp, items, boot, published=k2)
    parts.append(" ".join(bt.columns))
    metrics = pd.DataFrame(
        {
            "puzzle_hash": sorted(att["puzzle_hash"].unique()),
            "solver": "minisat22",
            "encoding": "block_start",
        }
    )
    for k, m in enumerate(("decisions", "propagations", "conflicts")):
        metrics[m] = rng.permutation(len(metrics)) + k
    served = att[["puzzle_id", "puzzle_hash"]].drop_duplicates()
    t1 = table1(bt, raw_mean_rating(ratings), {"corrected": aligned_metrics(metrics, served)})
    parts.append(" ".join(t1.columns) + " " + " ".join(t1["p_method"].unique()))
    return "\n".join(parts)


def _numbers_before(text: str, noun: str) -> set[int]:
    return {int(n.replace(",", "")) for n in re.findall(rf"\b([\d,]+) {noun}\b", text)}


@pytest.mark.parametrize("name", ["small", "eight", "example"])
def test_texts_name_only_this_study(studies, name):
    results = studies[name]
    facts = study_facts(results)
    text = _study_texts(results)
    low = text.lower()
    others = [study_facts(studies[o]) for o in studies if o != name] + [PAPER]
    # every "N puzzles" is the study's number, its puzzles per session, or a grid of the power
    # figure; never another study's
    own_puzzles = {facts["puzzles"], *facts["puzzles_per_session"]}
    for o in others:
        for noun, key in (("puzzles", "puzzles"), ("participants", "participants")):
            theirs = o[key]
            if theirs != facts[key] and theirs not in own_puzzles:
                assert theirs not in _numbers_before(text, noun), (name, noun, theirs)
        if o["attempts"] != facts["attempts"]:
            assert o["attempts"] not in _numbers_before(text, "attempts"), (name, o["attempts"])
    assert f"this study ({facts['puzzles']} puzzles, {facts['participants']} participants)" in text
    per = max(facts["puzzles_per_session"])
    assert f"each participant rates {per})" in text
    if per != 3:
        assert "rates 3" not in low and "rate 3" not in low
    if not facts["drags"]:
        assert "drag" not in low, [ln for ln in text.splitlines() if "drag" in ln.lower()]
    else:  # described as the log format defines a drag: one event per gesture
        assert "one event per cell" not in low and "fast (drag)" not in low
    # no citations to documents the reader of the report does not have
    cites = re.findall(r"METHODS \d|ARCHITECTURE|\bdocs/[\w.-]+", text)
    assert not cites, cites
    if not facts["published"]:
        hits = [p for p in PUBLISHED_PHRASES if p in low]
        lines = [ln for ln in text.splitlines() if any(p in ln.lower() for p in hits)]
        assert not hits, (hits, lines[:10])
    if facts["puzzles"] <= 9:
        assert "exact permutation" in low and "p = 0" not in low


def test_published_texts_appear_for_a_published_preset(studies, tmp_path):
    """The same templates name the published analysis when the preset has one."""
    results = tmp_path / "results"
    (results / "ingest").mkdir(parents=True)
    for f in (studies["example"] / "ingest").iterdir():
        (results / "ingest" / f.name).write_bytes(f.read_bytes())
    rec = json.loads((results / "ingest/study.json").read_text()) | {"published": True}
    (results / "ingest/study.json").write_text(json.dumps(rec))
    text = render_caption("bt_strengths", results)
    assert "published_semantics" in text
    assert "published" not in render_caption("bt_strengths", studies["example"])


@pytest.mark.parametrize("name", ["small", "eight", "example"])
def test_every_caption_is_valid_restructuredtext(studies, name):
    """Snakemake's report turns each caption into HTML with docutils: no error or warning."""
    import io

    from docutils.core import publish_parts

    for stem in CAPTIONS:
        err = io.StringIO()
        publish_parts(
            render_caption(stem, studies[name]),
            writer="html",
            settings_overrides={"warning_stream": err, "report_level": 2},
        )
        assert not err.getvalue(), (stem, err.getvalue())
