"""The study report (nonolab report): one self-contained page per results folder that shows
the study it came from, and escapes every string from the study for its context (HTML text,
attributes, JSON inside <script>), whatever the string."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from report_study import HOSTILE, HOSTILE_IMG, Page, check_page, hostile_study, ingest_results

from nonolab.core.tables import write_json
from nonolab.report.catalogue import ENTRIES
from nonolab.report.html import (
    build_report,
    format_cell,
    html_table,
    render_report,
    rst_to_html,
    script_json,
)
from nonolab.stats.errata import ERRATA_COLUMNS

REPO = Path(__file__).resolve().parents[2]


def test_every_caption_template_has_a_report_entry():
    stems = {p.stem for p in (REPO / "workflow/report").glob("*.rst")} - {"workflow"}
    assert stems == {e.caption for e in ENTRIES}


def test_every_report_output_of_the_rules_has_an_entry():
    """Each `report(...)` output path of the rules is matched by the entry of its caption."""
    text = "\n".join(p.read_text() for p in (REPO / "workflow/rules").glob("*.smk"))
    found = re.findall(
        r'report\(\s*f?"results/([^"]+)",\s*caption=f?"../report/([^"]+)\.rst"', text
    )
    assert len(found) > 40
    by_caption = {e.caption: e for e in ENTRIES}
    for path, caption in found:
        if "{" in caption:  # fig_{name} / ingest_{t}: the entries of those stems
            prefix = caption.split("{")[0]
            assert any(c.startswith(prefix) for c in by_caption)
            continue
        pattern = by_caption[caption].pattern
        assert re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), path.replace("{pool}", "x"))


# ------------------------------------------------------------------ escaping, property-based

hostile_text = st.text(
    alphabet=st.sampled_from(list("<>&\"'/=` \n\t\u2028\u2029\\!-[]:;ab")) | st.characters(),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(
    value=st.recursive(
        hostile_text | st.integers() | st.booleans() | st.none(),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(hostile_text, c, max_size=3),
        max_leaves=8,
    )
)
def test_script_json_round_trips_and_cannot_leave_the_script(value):
    page = f'<script type="application/json">{script_json(value)}</script><p>after</p>'
    parsed = Page(page)
    assert len(parsed.scripts) == 1 and parsed.texts == ["after"]
    body = parsed.scripts[0][1]
    assert not set(body) & set("<>&\u2028\u2029")
    assert json.loads(body) == value


@settings(max_examples=200, deadline=None)
@given(
    cells=st.lists(st.lists(hostile_text, min_size=2, max_size=2), min_size=1, max_size=4),
    header=hostile_text,
)
def test_table_cells_and_headers_are_text(cells, header):
    page = html_table([header, "b"], cells, "t1")
    parsed = Page(page)
    assert [
        t for t, _ in parsed.tags if t not in ("div", "table", "thead", "tbody", "tr", "th", "td")
    ] == []
    # every cell reads back as its shown text
    shown = [format_cell(c)[0] for row in cells for c in row]
    assert "".join(parsed.texts) == header + "b" + "".join(shown)


@settings(max_examples=50, deadline=None)
@given(text=hostile_text)
def test_rst_caption_text_is_escaped(text):
    out = rst_to_html(f"A caption about ``{text}`` and {text}.\n")
    parsed = Page(out)
    assert not parsed.scripts
    assert all(
        t
        in (
            "p",
            "span",
            "code",
            "em",
            "strong",
            "cite",
            "div",
            "a",
            "blockquote",
            "dl",
            "dt",
            "dd",
            "ul",
            "ol",
            "li",
            "table",
            "tr",
            "td",
            "th",
            "tbody",
            "thead",
            "col",
            "colgroup",
            "pre",
            "h1",
            "h2",
            "h3",
            "section",
            "aside",
            "sup",
            "sub",
            "abbr",
            "hr",
            "br",
            "tt",
            "b",
            "i",
            "dfn",
            "s",
        )
        for t, _ in parsed.tags
    ), parsed.tags
    for _, attrs in parsed.tags:
        assert not any(k.startswith("on") for k in attrs)


def test_raw_html_and_includes_in_a_caption_are_refused():
    out = rst_to_html(".. raw:: html\n\n   <script>alert(1)</script>\n\n.. include:: /etc/passwd\n")
    assert "<script" not in out and "root:" not in out


def _minimal_results(root: Path, study_dir: str, preset: str, cell: str) -> Path:
    """A results folder with a study record, a summary and Table 1 and errata tables whose
    cells are ``cell``."""
    write_json(
        {
            "study_dir": study_dir,
            "preset": preset,
            "fingerprint": "0" * 64,
            "participants": 2,
            "attempts": 4,
            "puzzles": 2,
            "published": False,
        },
        root / "ingest" / "study.json",
    )
    write_json(
        {"participants": 2, "ledger_rows": 1, "ledger_by_level": {cell: 1}},
        root / "ingest" / "summary.json",
    )
    (root / "tables").mkdir(parents=True, exist_ok=True)

    def csv(path: str, rows: list[dict]) -> None:
        pd.DataFrame(rows).to_csv(root / path, index=False)

    csv("ingest/ledger.csv", [dict.fromkeys(["level", "source", "id", "reason", "action"], cell)])
    csv(
        "tables/table1_spearman.csv",
        [
            {
                "alignment": "corrected",
                "solver": cell,
                "encoding": cell,
                "metric": cell,
                "n": 2,
                "bt_rho": 1.0,
                "bt_p": 0.0,
                "perm_p": 0.5,
            }
        ],
    )
    csv(
        "tables/bt_strengths.csv",
        [
            {"puzzle_id": cell, "strength": 1.5, "ci_low": 1, "ci_high": 2},
            {"puzzle_id": "b", "strength": 0.5, "ci_low": 0.1, "ci_high": 1},
        ],
    )
    row = dict.fromkeys(ERRATA_COLUMNS, "")
    row.update(quantity=cell, cause=cell, evidence=cell, published="1", corrected="2")
    row.update(change_category="significance", cause_evidence="error", inference=cell)
    pd.DataFrame([row], columns=ERRATA_COLUMNS).to_csv(root / "tables" / "errata.csv", index=False)
    return root


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(s=hostile_text)
@example(s=HOSTILE)
@example(s='"')
@example(s="NA")
@example(s="x\r\ny\u2028")
def test_any_string_in_any_field_stays_text(tmp_path_factory, s):
    root = _minimal_results(tmp_path_factory.mktemp("r"), "/studies/" + s, s, s)
    page = render_report(root)
    parsed = check_page(page, [s, "/studies/" + s])
    texts = "".join(parsed.texts)
    # shown as text where it belongs: the folder, the preset, table cells
    assert ("/studies/" + s) in texts
    meta = json.loads(next(b for a, b in parsed.scripts if a.get("id") == "report-metadata"))
    assert meta["study"]["path"] == "/studies/" + s and meta["study"]["preset"] == s


# ------------------------------------------------------------------ a real ingest


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    study, preset = hostile_study(base)
    return study, ingest_results(study, preset, base / "out" / "results")


def test_hostile_study_folder_and_preset_name_are_escaped(hostile_results):
    study, root = hostile_results
    out = build_report(root.parent)
    assert out == root / "report.html"
    page = out.read_text(encoding="utf-8")
    parsed = check_page(page, [HOSTILE, HOSTILE_IMG, str(study)])
    texts = "".join(parsed.texts)
    assert str(study) in texts  # the folder is shown, as text
    assert HOSTILE + HOSTILE_IMG in texts  # the preset name too
    assert "example-study" not in texts  # never another study's name


def test_cli_report_writes_the_page_and_names_it(hostile_results, tmp_path):
    _, root = hostile_results
    out = tmp_path / "r.html"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "nonolab",
            "report",
            "--results",
            str(root.parent),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    assert str(out) in res.stdout and out.is_file()


def test_report_is_byte_identical_between_builds(hostile_results, tmp_path):
    _, root = hostile_results
    a = build_report(root, tmp_path / "a.html").read_bytes()
    b = build_report(root, tmp_path / "b.html").read_bytes()
    assert a == b


def test_cli_report_without_results_is_a_clear_error(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "nonolab", "report", "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 2 and "holds no results" in res.stderr


def test_a_long_table_shows_its_first_rows_and_says_so(tmp_path, monkeypatch):
    import nonolab.report.html as rh

    monkeypatch.setattr(rh, "MAX_ROWS", 7)
    root = _minimal_results(tmp_path, "/studies/x", "p", "c")
    pd.DataFrame({"id": [f"r{i}" for i in range(30)]}).to_csv(
        root / "ingest" / "ledger.csv", index=False
    )
    page = render_report(root)
    assert "The first 7 of 30 rows" in page
    assert "r6" in page and "r7<" not in page
