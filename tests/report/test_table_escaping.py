"""Every table writer escapes for its target: generated strings (pipes, line ends, HTML, LaTeX
specials, Markdown syntax, control characters, any Unicode) written as ids and column names,
each output parsed back by an independent reader, and every cell checked to hold its value.

Readers: markdown-it-py (CommonMark + GFM tables) for Markdown; Python's ``html.parser`` for
the report's HTML tables; a small tokeniser of the LaTeX tabular that accepts only the escapes
a cell may hold; the CSV module and ``nonolab.study.schemas.read_csv`` for CSV."""

from __future__ import annotations

import csv
import os
import re
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from nonolab.core.tables import SPREADSHEET_TRIGGERS, to_latex, to_markdown, write_table
from nonolab.report.html import format_cell, html_table
from nonolab.study.schemas import read_csv

#: characters that have a meaning in one of the targets, mixed with any other text
SPECIAL = list("|\\`*_[]~<>&#$%^{}!()\"'=+-@:;/") + [
    "\n", "\r", "\r\n", "\t", "\x00", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85",
    "\u2028", "\u2029", "\u200b", "\ufeff", "<br>", "<script>", "</td>", "&amp;", "&#x41;",
    "\\|", "\\\\", "**", "__", "~~", "[x](javascript:alert(1))", "![i](x)", "`c`", "\\textbf{",
    "\\\\", "\\end{tabular}", "$x$", "<!--", "-->", "\ud7ff", "é", "\u0301", "а",
]  # fmt: skip
TEXT = st.lists(
    st.one_of(
        st.sampled_from(SPECIAL),
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=4),
    ),
    min_size=0,
    max_size=8,
).map("".join)

MD = MarkdownIt("commonmark", {"html": True}).enable("table")


def _md_expected(text: str) -> str:
    text = re.sub(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]", "\n", text)
    return _ws(text.replace("\x00", "\ufffd"))


def _ws(text: str) -> str:
    """Whitespace-insensitive form: each line's runs of white space as one space, stripped
    (Markdown and LaTeX do not keep leading, trailing or repeated spaces)."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n")).strip()


def _markdown_cells(md: str) -> list[list[str]]:
    """Return the rows (header first) of the one table in ``md``, each cell's text, failing on
    any inline markup other than text and the ``<br>`` of a line end."""
    tokens = MD.parse(md)
    assert sum(t.type == "table_open" for t in tokens) == 1, md
    rows: list[list[str]] = []
    for t in tokens:
        if t.type == "tr_open":
            rows.append([])
        elif t.type == "inline" and rows and any(x.type == "tr_open" for x in tokens):
            parts = []
            for child in t.children or []:
                if child.type == "text":
                    parts.append(child.content)
                elif child.type == "html_inline" and child.content == "<br>":
                    parts.append("\n")
                elif child.type == "softbreak":
                    parts.append("\n")
                else:
                    raise AssertionError(f"live markup {child.type} {child.content!r} in {md}")
            rows[-1].append("".join(parts))
    return rows


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()
        self.cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


#: what may follow a backslash in a LaTeX cell, and the text it stands for
_TEX_ESCAPES = {
    "textbackslash ": "\\",
    "textasciitilde ": "~",
    "textasciicircum ": "^",
    "space ": " ",
    **{c: c for c in "&%$#_{}"},
}


def _tex_cell(cell: str) -> str:
    """Return the text of one LaTeX cell, failing on anything that is not plain text or one of
    the escapes :data:`_TEX_ESCAPES` (a control sequence, a brace, a math shift, ...)."""
    out = []
    i = 0
    while i < len(cell):
        ch = cell[i]
        if ch == "\\":
            for seq, rep in _TEX_ESCAPES.items():
                if cell.startswith(seq, i + 1):
                    out.append(rep)
                    i += 1 + len(seq)
                    break
            else:
                raise AssertionError(f"live control sequence at {cell[i : i + 20]!r}")
            continue
        assert ch not in "{}$&#^_~%", f"unescaped {ch!r} in {cell!r}"
        assert ch >= " " and ch not in "\x7f\x85\u2028\u2029", f"control {ch!r} in {cell!r}"
        out.append(ch)
        i += 1
    return "".join(out)


def _latex_rows(tex: str) -> list[list[str]]:
    head = tex.split("\\toprule\n", 1)[1].split("\\midrule\n", 1)
    body = head[1].split("\\bottomrule\n", 1)[0]
    lines = [head[0], *body.splitlines(keepends=True)] if body else [head[0]]
    rows = []
    for line in lines:
        assert line.endswith(" \\\\\n"), line
        rows.append([_tex_cell(c) for c in re.split(r"(?<!\\)&", line[: -len(" \\\\\n")])])
    return rows


def _frame(ids: list[str], name: str) -> pd.DataFrame:
    return pd.DataFrame({"participant_id": ids, name: ids, "n": range(len(ids))})


@settings(
    max_examples=int(os.environ.get("NONOLAB_TABLE_EXAMPLES", 40)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(TEXT, min_size=1, max_size=5), TEXT)
@example(["a|b", "x\ny", "<script>alert(1)</script>", "\\end{tabular}"], "c\r\nd|e")
@example(["_x_ *y* a_b", "\x00", "&lt;", "~~s~~"], "$")
def test_every_writer_keeps_each_cell_whole(ids, name) -> None:
    name = "col " + name  # unlike the other column names
    df = _frame(ids, name)
    columns = list(df.columns)
    expected_rows = [[str(c) for c in columns]] + [
        [str(v) for v in row] for row in df.itertuples(index=False)
    ]

    md_rows = _markdown_cells(to_markdown(df, caption="Table " + name))
    assert len(md_rows) == len(df) + 1
    for got, want in zip(md_rows, expected_rows, strict=True):
        assert [_ws(g) for g in got] == [_md_expected(w) for w in want]

    tex_rows = _latex_rows(to_latex(df, caption=name))
    assert len(tex_rows) == len(df) + 1
    for got, want in zip(tex_rows, expected_rows, strict=True):
        assert [_ws(g) for g in got] == [_ws(re.sub(r"[\x00-\x1f\x7f\x85\u2028\u2029]", " ", w))
                                         for w in want]  # fmt: skip

    page = _Html()
    page.feed(html_table(columns, [[str(v) for v in r] for r in df.itertuples(index=False)], "t"))
    page.close()
    assert page.tags <= {"div", "table", "thead", "tbody", "tr", "th", "td"}, page.tags
    assert page.rows[0] == columns
    assert page.rows[1:] == [[format_cell(v)[0] for v in row] for row in expected_rows[1:]]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        write_table(df, path, formats=("csv", "md", "tex"), caption=name)
        with open(path, newline="", encoding="utf-8") as fh:
            raw = list(csv.reader(fh))
        assert len(raw) == len(df) + 1 and all(len(r) == len(columns) for r in raw)
        # the formula guard: a text cell a spreadsheet would read as a formula starts with '
        formula = tuple(t for t in SPREADSHEET_TRIGGERS if t != "'")
        assert not any(c.startswith(formula) for r in raw[1:] for c in r[:2])
        back = read_csv(path, text=[name])
        assert back["participant_id"].tolist() == ids and back[name].tolist() == ids
        assert (Path(tmp) / "t.md").read_text(encoding="utf-8") == to_markdown(df, name)
