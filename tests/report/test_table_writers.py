"""Table renderings written next to every CSV: Markdown (pandas/tabulate) and LaTeX booktabs
(pandas Styler), with the same cell text."""

from __future__ import annotations

import pandas as pd

from nonolab.core.tables import to_latex, to_markdown, write_table

DF = pd.DataFrame(
    {
        "metric_name": ["a_b", "c%"],
        "rho": [0.42857142, float("nan")],
        "p": [3.5e-7, 1.0],
        "n": [6, 6],
    }
)


def test_markdown_has_caption_header_and_formatted_cells():
    md = to_markdown(DF, "Table 1.").splitlines()
    assert md[0] == "Table 1." and md[1] == ""
    header, rule, first, second = md[2:]
    assert [c.strip() for c in header.strip("|").split("|")] == list(DF.columns)
    assert set(rule) <= set("|-: ")
    assert [c.strip() for c in first.strip("|").split("|")] == ["a_b", "0.429", "3.5e-07", "6"]
    assert [c.strip() for c in second.strip("|").split("|")] == ["c%", "", "1", "6"]


def test_latex_is_booktabs_escaped_and_right_aligns_numbers():
    tex = to_latex(DF, "rho_s at 5%")
    assert "\\caption{rho\\_s at 5\\%}" in tex
    assert "\\begin{tabular}{lrrr}" in tex
    assert tex.index("\\toprule") < tex.index("\\midrule") < tex.index("\\bottomrule")
    assert "metric\\_name & rho & p & n \\\\" in tex
    assert "a\\_b & 0.429 & 3.5e-07 & 6 \\\\" in tex
    assert "c\\% &  & 1 & 6 \\\\" in tex


def test_write_table_is_byte_identical_on_rerun(tmp_path):
    out = []
    for run in ("a", "b"):
        write_table(DF, tmp_path / run / "t.csv", formats=("csv", "md", "tex"), caption="c")
        out.append([(tmp_path / run / f"t.{ext}").read_bytes() for ext in ("csv", "md", "tex")])
    assert out[0] == out[1]
