"""Report captions are computed from the study: every caption renders with the workflow's config
(as Snakemake's report does, with Jinja2), names the study's number of puzzles, and mentions the
published row-position alignment only for studies whose preset has one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CAPTIONS = sorted((REPO / "workflow/report").glob("*.rst"))
# Figures drawn once per alignment the study has: their text must follow the study.
PER_ALIGNMENT = (
    "fig_bt_rank_vs_metrics",
    "fig_moderation_simple_slopes",
    "fig_threshold_sensitivity",
)


def render(path: Path, *, published: bool, puzzles: int, behaviours: int = 4) -> str:
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["models"]["behaviours"] = config["models"]["behaviours"][:behaviours]
    config["published_alignment"] = published
    config["results_study"] = {"puzzles": puzzles, "path": "/studies/b", "preset": "default"}
    snake = SimpleNamespace(config=config, wildcards={}, params={}, input={}, output={})
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    return env.from_string(path.read_text()).render(snakemake=snake)


@pytest.mark.parametrize("path", CAPTIONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("published", [True, False])
def test_caption_renders(path, published):
    text = render(path, published=published, puzzles=8)
    assert text.strip() and "{{" not in text and "{%" not in text


@pytest.mark.parametrize("stem", PER_ALIGNMENT)
def test_figure_captions_follow_the_study(stem):
    path = REPO / "workflow/report" / f"{stem}.rst"
    own = render(path, published=False, puzzles=8)
    assert "row-position" not in own and "(b, c)" not in own
    paper = render(path, published=True, puzzles=6)
    assert "row-position" in paper


def test_no_caption_hard_codes_the_paper_design():
    for path in CAPTIONS:
        text = render(path, published=False, puzzles=8, behaviours=2).lower()
        for phrase in ("six puzzles", "only six", "12 tests", "2.36 s"):
            if phrase == "2.36 s" and path.stem == "pauses_threshold":
                continue  # explains the he2026 preset's published threshold
            assert phrase not in text, (path.name, phrase)
