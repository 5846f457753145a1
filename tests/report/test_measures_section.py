"""The report section "Which measures track difficulty": its content from a results folder,
and the section in a real browser (Debian's Chromium via Playwright, as in
test_report_browser.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
from report_study import HOSTILE, check_page, hostile_study, ingest_results
from test_report_browser import CHROMIUM, FLAGS, Visit, _missing

from nonolab.core.tables import write_table
from nonolab.report.html import build_report, render_report
from nonolab.report.measures_section import leaderboard_figure, measures_section
from nonolab.stats.measure_evaluation import evaluate_measures

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stats"))
from test_measure_evaluation import _study  # noqa: E402


def _add_evaluation(root: Path) -> pd.DataFrame:
    """Write a measure evaluation of a simulated six-puzzle study into the results folder
    ``root``; one measure has a hostile label and one is a rescaled copy of the driver."""
    att, bt, meas, reg = _study()
    meas["driver_twice"] = 2 * meas["driver"]
    reg = pd.concat(
        [
            reg,
            pd.DataFrame(
                [{"name": "driver_twice", "label": HOSTILE, "kind": "sat", "transform": "identity"}]
            ),
        ],
        ignore_index=True,
    )
    res = evaluate_measures(att, bt, meas, reg, outcomes={"final_difficulty": "final difficulty"})
    (root / "measures").mkdir(parents=True, exist_ok=True)
    write_table(meas, root / "measures" / "served.csv")
    for key, name in (("leaderboard", "measure_leaderboard"), ("tests", "measure_tests")):
        write_table(res[key], root / "tables" / f"{name}.csv")
    leaderboard_figure(res["leaderboard"], root / "figures" / "measure_leaderboard.png")
    return res["leaderboard"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    base = tmp_path_factory.mktemp("measures_report")
    study, preset = hostile_study(base)
    root = ingest_results(study, preset, base / "out" / "results")
    assert measures_section(root) is None  # no evaluation yet: no section
    assert 'id="measures"' not in render_report(root.parent)
    board = _add_evaluation(root)
    return root, board


def test_section_content(results):
    root, board = results
    anchor, title, body = measures_section(root)
    assert (anchor, title) == ("measures", "Which measures track difficulty")
    page = render_report(root.parent)
    check_page(page, [HOSTILE])  # the hostile label is text, nowhere markup
    assert 'href="#measures"' in page
    # what six puzzles can show, computed: the smallest exact p is 2/6! = 0.00278; driver,
    # noise and the driver's rescaled copy give two distinct rankings; the constant and the
    # partly undefined measures are named with their reasons
    assert "cannot fall below 0.00278" in body
    assert "The 3 measures that vary give only 2 distinct rankings" in body
    assert "Flat: constant over the 6 puzzles (0)" in body
    assert "Gappy: undefined for 1 of 6 puzzles" in body
    assert "Multiplicity family" in body and "Benjamini-Hochberg" in body
    assert body.count("<tr>") == len(board) + 1
    # an undefined statistic is an empty cell, never 0 or nan
    assert ">nan<" not in body.lower() and ">None<" not in body


def test_section_in_the_browser(results, tmp_path):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package (pip install playwright; dev extra)")
    if not CHROMIUM.is_file():
        _missing(f"Chromium at {CHROMIUM} (apt-get install chromium)")
    root, board = results
    report = build_report(root.parent, tmp_path / "report.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        v = Visit(browser, report)
        page = v.page
        page.click('nav.toc a[href="#measures"]')
        sec = page.locator("section#measures")
        assert sec.is_visible()
        assert sec.locator("h2").inner_text() == "Which measures track difficulty"
        table = sec.locator("table#measure-leaderboard")
        assert table.is_visible()
        assert table.locator("tbody tr").count() == len(board)
        labels = table.locator("tbody tr td:nth-child(1)").all_inner_texts()
        assert HOSTILE in labels and "Driver" in labels
        img = sec.locator("figure img")
        assert img.evaluate("i => i.complete && i.naturalWidth > 300")
        v.shot(tmp_path / "screenshots", "measures-section", "section#measures")
        img.scroll_into_view_if_needed()
        v.shot(tmp_path / "screenshots", "measures-figure")
        assert v.problems == []
        browser.close()
    print("screenshots:", tmp_path / "screenshots")
