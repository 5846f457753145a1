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


def test_file_hash_is_read_once_and_follows_every_change(tmp_path, monkeypatch):
    """file_sha256 equals hashlib's digest of the bytes, reads an unchanged file once, and any
    write (even one keeping the size) gives the new content's digest."""
    import builtins
    import hashlib
    import os

    from nonolab.core.hashing import file_sha256

    f = tmp_path / "log.ndjson"
    f.write_bytes(b'{"type": "move"}\n')
    assert file_sha256(f) == hashlib.sha256(f.read_bytes()).hexdigest()
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(
        builtins, "open", lambda p, *a, **k: opened.append(p) or real_open(p, *a, **k)
    )
    for _ in range(3):
        assert file_sha256(f) == hashlib.sha256(f.read_bytes()).hexdigest()
    assert str(f.resolve()) not in [str(p) for p in opened]
    monkeypatch.setattr(builtins, "open", real_open)
    st = f.stat()
    f.write_bytes(b'{"type": "hint"}\n')  # same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))
    assert file_sha256(f) == hashlib.sha256(b'{"type": "hint"}\n').hexdigest()
