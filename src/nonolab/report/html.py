"""The study report: one self-contained HTML page per results folder.

:func:`build_report` writes ``report.html`` for the results of one study: the study (name,
folder, preset, counts, exclusions), headline results in sentences computed from the tables
(:mod:`nonolab.report.headline`), the errata summary for a study with a published analysis,
then every table (an HTML table; sortable, and filterable and paged when it is long) and every
figure (embedded PNG, caption under it) of :data:`nonolab.report.catalogue.ENTRIES`, with a
table of contents, and a provenance appendix from the tables' sidecars.

The page works offline: the interactive tables use the DataTables bundle that the ``itables``
package ships (embedded in the page; no network), and the tables are plain HTML first, so the
page reads without JavaScript too.

Escaping: every string from the study or its results (paths, preset name, ids, table cells,
captions, provenance) reaches the page through :func:`text` (HTML text and attribute values)
or :func:`script_json` (JSON inside ``<script>``); captions are reStructuredText rendered by
docutils with raw HTML and file inclusion disabled. Nothing user-controlled is written into
JavaScript code.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nonolab.core.tables import write_text
from nonolab.report import headline
from nonolab.report.catalogue import ENTRIES, SECTIONS, Entry
from nonolab.report.consistency import BANNER_SLOT, banner_html, check_results

#: tables with more rows than this get a search box and pages
INTERACTIVE_ROWS = 20
#: text cells longer than this are clipped on screen (whole text in the cell and its title)
CLIP_CHARS = 40
#: a table shows at most this many rows (the file has them all)
MAX_ROWS = 5000
#: rows per page of a paged table
PAGE_LENGTH = 25


# ---------------------------------------------------------------- escaping


def text(value: Any) -> str:
    """Return ``value`` as HTML text, safe in element content and in quoted attribute values
    (``& < > " '`` escaped)."""
    return html.escape(str(value), quote=True)


_SCRIPT_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def script_json(obj: Any) -> str:
    """Return ``obj`` as JSON safe inside a ``<script>`` element: ``<``, ``>``, ``&``, U+2028
    and U+2029 are written as ``\\uXXXX`` escapes (so no ``</script>``, ``<!--`` or line
    separator can end or change the script), keys sorted."""
    raw = json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_ESCAPES[m.group(0)], raw)


def rst_to_html(source: str) -> str:
    """Return the HTML body of reStructuredText ``source`` (docutils' html5 writer) with raw
    HTML, file inclusion and error messages disabled: text is escaped by docutils, markup
    becomes elements."""
    from docutils.core import publish_parts
    from docutils.writers.html5_polyglot import Writer

    parts = publish_parts(
        source=source,
        writer=Writer(),
        settings_overrides={
            "raw_enabled": False,
            "file_insertion_enabled": False,
            "report_level": 5,
            "halt_level": 5,
            "traceback": True,
            "doctitle_xform": False,
            "_disable_config": True,
            "input_encoding": "unicode",
            "output_encoding": "unicode",
            "syntax_highlight": "none",
        },
    )
    return parts["body"]


# ---------------------------------------------------------------- cells and tables

_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_HASH = re.compile(r"^[0-9a-f]{64}$")


def format_cell(value: str) -> tuple[str, str | None]:
    """Return ``(shown, order)`` for a table cell given as text: a number with a decimal point
    or exponent is shown with 4 significant digits and sorted by its full value (``order``); a
    64-hex content hash is shown by its first 12 characters; anything else as it is (order
    None: sorted as shown)."""
    if _HASH.match(value):
        return value[:12] + "\u2026", value
    if _FLOAT.match(value) and any(c in value for c in ".eE"):
        x = float(value)
        if x == 0 or 1e-3 <= abs(x) < 1e6:
            shown = f"{x:.4g}"
            if "e" in shown:
                shown = f"{x:.1f}"
        else:
            shown = f"{x:.3e}"
        return shown, repr(x)
    return value, None


def html_table(columns: list[str], rows: Iterable[Iterable[str]], table_id: str) -> str:
    """Return an HTML ``<table>`` of text cells (every cell escaped; numbers formatted by
    :func:`format_cell`, the full value in the cell's title and sort key). Tables with more
    than :data:`INTERACTIVE_ROWS` rows are marked to get a search box and pages."""
    body = []
    n = 0
    for row in rows:
        n += 1
        cells = []
        for value in row:
            value = str(value)
            shown, order = format_cell(value)
            if order is None:
                if len(shown) > CLIP_CHARS:  # clipped on screen, whole in the title (hover)
                    cells.append(f'<td class="clip" title="{text(shown)}">{text(shown)}</td>')
                else:
                    cells.append(f"<td>{text(shown)}</td>")
            else:
                cells.append(
                    f'<td data-order="{text(order)}" title="{text(value)}">{text(shown)}</td>'
                )
        body.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{text(c)}</th>" for c in columns)
    kind = "long" if n > INTERACTIVE_ROWS else "short"
    return (
        f'<div class="table-wrap"><table id="{text(table_id)}" class="nl-table display compact" '
        f'data-kind="{kind}" data-rows="{n}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _flatten(obj: Any, prefix: str = "", depth: int = 0) -> Iterable[tuple[str, str]]:
    """Yield ``(dotted key, text)`` for a JSON record: nested mappings flattened to 3 levels,
    lists of numbers or strings joined, anything deeper as compact JSON."""
    if isinstance(obj, dict) and depth < 3:
        for k, v in obj.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k), depth + 1)
    elif isinstance(obj, list) and all(isinstance(v, (int, float, str)) for v in obj):
        shown = []
        for v in obj:
            s, _ = format_cell(repr(v) if isinstance(v, float) else str(v))
            shown.append(s)
        yield prefix, ", ".join(shown)
    elif isinstance(obj, (dict, list)):
        yield prefix, json.dumps(obj, sort_keys=True)
    elif isinstance(obj, float):
        yield prefix, repr(obj) if math.isfinite(obj) else str(obj)
    else:
        yield prefix, "" if obj is None else str(obj)


# ---------------------------------------------------------------- JSON records, readable

#: JSON strings longer than this are shown as a sentence under the facts, not in a table cell
SENTENCE_CHARS = 60


def humanise(key: str) -> str:
    """Return a JSON key in words: underscores as spaces, a unit suffix in brackets
    (``threshold_used_s`` -> ``threshold used (s)``)."""
    words = str(key).split("_")
    unit = ""
    if len(words) > 1 and words[-1] in ("s", "ms", "pct"):
        unit = f" ({words.pop()})"
    return " ".join(words) + unit


def _scalar_text(value: Any) -> str:
    """Return a JSON scalar as table text: numbers by :func:`format_cell`'s input form, None and
    non-finite numbers as ``not defined``, booleans as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "not defined"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _compact(value: Any) -> str:
    """Return a nested JSON value as short text (``[1, 2]``, ``{key: value}``), scalars as
    :func:`_scalar_text` writes them (so a missing number reads ``not defined``, never
    ``NaN`` or ``null``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    return _scalar_text(value)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def json_record_html(record: dict[str, Any], table_id: str, depth: int = 0) -> str:
    """Return a JSON record (``threshold.json`` and the like) as readable HTML, whatever keys
    it holds: its scalars as one two-column table of facts (keys in words, units in brackets),
    long strings and lists of them as sentences, lists of numbers of one length as one table with a row per
    position, mappings of scalars that share their keys as one table with a row per key, lists
    of records as a table with a column per field, and each nested record as a sub-heading with
    the same treatment (below two levels: compact JSON in a cell). Every string escaped."""
    facts: list[tuple[str, str]] = []
    sentences: list[tuple[str, str]] = []
    prose: list[tuple[str, list[str]]] = []
    series: dict[int, dict[str, list[Any]]] = {}
    keyed: dict[tuple[str, ...], dict[str, dict[str, Any]]] = {}
    records: list[tuple[str, list[dict]]] = []
    nested: list[tuple[str, dict]] = []
    for key, value in record.items():
        if isinstance(value, str) and len(value) > SENTENCE_CHARS:
            sentences.append((key, value))
        elif _is_scalar(value):
            facts.append((humanise(key), _scalar_text(value)))
        elif isinstance(value, list) and not value:
            facts.append((humanise(key), "none"))
        elif (
            isinstance(value, list)
            and all(isinstance(v, str) for v in value)
            and any(len(v) > SENTENCE_CHARS for v in value)
        ):
            prose.append((key, value))
        elif isinstance(value, list) and all(_is_scalar(v) for v in value):
            series.setdefault(len(value), {})[key] = value
        elif isinstance(value, list) and all(isinstance(v, dict) for v in value):
            records.append((key, value))
        elif isinstance(value, dict) and value and all(_is_scalar(v) for v in value.values()):
            # mappings keyed by numbers (per number of components, ...) share one table
            group = ("#",) if all(str(k).isdigit() for k in value) else tuple(value)
            keyed.setdefault(group, {})[key] = value
        elif isinstance(value, dict) and depth < 2:
            nested.append((key, value))
        else:
            facts.append((humanise(key), _compact(value)))
    parts = []
    for key, value in sentences:
        parts.append(
            f'<p class="json-text"><strong>{text(humanise(key))}:</strong> {text(value)}</p>'
        )
    for key, values in prose:
        items = "".join(f"<li>{text(v)}</li>" for v in values)
        parts.append(
            f'<p class="json-text"><strong>{text(humanise(key))}:</strong></p>'
            f'<ul class="json-text">{items}</ul>'
        )
    if facts:
        parts.append(html_table(["quantity", "value"], facts, f"{table_id}-facts"))
    for n, cols in series.items():
        if len(cols) == 1 and n > 12:  # one long list: a line of values
            ((key, values),) = cols.items()
            shown = ", ".join(format_cell(_scalar_text(v))[0] for v in values)
            parts.append(
                f'<p class="json-text"><strong>{text(humanise(key))}:</strong> {text(shown)}</p>'
            )
            continue
        rows = [[str(i + 1), *(_scalar_text(c[i]) for c in cols.values())] for i in range(n)]
        parts.append(html_table(["#", *(humanise(k) for k in cols)], rows, f"{table_id}-list{n}"))
    for i, (group, cols) in enumerate(keyed.items()):
        keys = list(dict.fromkeys(k for c in cols.values() for k in c))
        if group == ("#",):
            keys.sort(key=int)
        rows = [
            [str(k), *(_scalar_text(c[k]) if k in c else "" for c in cols.values())] for k in keys
        ]
        parts.append(html_table(["", *(humanise(k) for k in cols)], rows, f"{table_id}-map{i}"))
    for i, (key, items) in enumerate(records):
        cols = list(dict.fromkeys(k for item in items for k in item))
        rows = [[_compact(item.get(c)) for c in cols] for item in items]
        parts.append(
            f'<p class="json-text"><strong>{text(humanise(key))}</strong></p>'
            + html_table([humanise(c) for c in cols], rows, f"{table_id}-rec{i}")
        )
    for i, (key, value) in enumerate(nested):
        inner = json_record_html(value, f"{table_id}-n{i}", depth + 1)
        level = 4 + min(depth, 2)
        parts.append(
            f'<div class="json-nested"><h{level}>{text(humanise(key))}</h{level}>{inner}</div>'
        )
    body = "".join(parts) or '<p class="json-text">(empty)</p>'
    return f'<div class="json-record">{body}</div>' if depth == 0 else body


# ---------------------------------------------------------------- the results folder


def results_root(results_dir: str | os.PathLike) -> Path:
    """Return the results folder of ``results_dir``: ``results_dir/results`` when there is one
    (a working directory of ``nonolab run``), else ``results_dir`` itself."""
    d = Path(results_dir)
    return d / "results" if (d / "results").is_dir() else d


def entry_files(root: Path, entry: Entry) -> list[Path]:
    """Return the files of ``entry`` in the results folder ``root`` (sorted; empty if none)."""
    return sorted(p for p in root.glob(entry.pattern) if p.is_file())


def _anchor(root: Path, path: Path) -> str:
    """Return the HTML id of a file's item: its path in the results folder, letters, digits,
    ``-`` and ``_`` only (file names come from the workflow, not from the study)."""
    rel = path.relative_to(root).with_suffix("").as_posix()
    return "f-" + re.sub(r"[^A-Za-z0-9_-]", "-", rel)


def _caption_html(stem: str, root: Path, config: dict[str, Any]) -> str:
    """Return caption template ``stem`` rendered for the study in ``root`` (with ``config``,
    :func:`caption_context`) as HTML."""
    from nonolab.report.captions import render_caption

    return rst_to_html(render_caption(stem, root, config))


def caption_context(root: Path) -> dict[str, Any]:
    """Return the config the captions are rendered with: the shipped config with the study's
    facts (:func:`nonolab.report.captions.caption_config`) on top of the results folder's study
    record (``ingest/study.json``: folder, preset, fingerprint), as the workflow gives them."""
    from nonolab.report.captions import caption_config
    from nonolab.study.identity import read_results_study

    config = caption_config(root)
    config["results_study"] = {**(read_results_study(root) or {}), **config["results_study"]}
    return config


def _empty_table(path: Path) -> bool:
    """Whether ``path`` is a CSV table with a header and no rows."""
    if path.suffix != ".csv":
        return False
    with open(path, encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip()) <= 1


#: the inference rule's columns of a mixed-model table, shown right after the estimate
INFERENCE_FIRST = ("df_satt", "p_satt", "p_satt_fdr")
#: how the page names the Wald columns of a table that has the inference rule's p beside them
WALD_NAMES = {"z": "z (Wald)", "p": "p (Wald z)", "p_fdr": "p_fdr (Wald z)"}


def display_columns(columns: list[str]) -> tuple[list[int], list[str]]:
    """Return (the order of ``columns`` on the page, their headers): in a model table with the
    Satterthwaite columns (``p_satt``), those columns come right after ``se`` (else ``coef``)
    and the Wald columns are headed as Wald, so the inference rule's df and p lead; other tables
    keep their order and names."""
    order = list(range(len(columns)))
    if "p_satt" not in columns:
        return order, list(columns)
    after = "se" if "se" in columns else "coef" if "coef" in columns else None
    first = [columns.index(c) for c in INFERENCE_FIRST if c in columns]
    rest = [i for i in order if i not in first]
    at = rest.index(columns.index(after)) + 1 if after else 0
    order = rest[:at] + first + rest[at:]
    return order, [WALD_NAMES.get(columns[i], columns[i]) for i in order]


def _item_html(root: Path, entry: Entry, path: Path, config: dict[str, Any]) -> str:
    """Return the HTML of one table or figure with its title and caption."""
    anchor = _anchor(root, path)
    title = entry.title
    extra = path.stem.removeprefix(Path(entry.pattern).stem.rstrip("*"))
    if "*" in entry.pattern and extra.strip("_"):
        title = f"{title} ({extra.strip('_').replace('_', ' ')})"
    caption = _caption_html(entry.caption, root, config)
    rel = path.relative_to(root).as_posix()
    source = f'<p class="source">File: <code>{text(rel)}</code></p>'
    if entry.kind == "figure":
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return (
            f'<section class="item figure" id="{anchor}"><h3>{text(title)}</h3><figure>'
            f'<img src="data:image/png;base64,{data}" alt="{text(title)}">'
            f'<figcaption class="caption">{caption}</figcaption></figure>{source}</section>'
        )
    if entry.kind == "json":
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict):
            record.pop("provenance", None)
            table = json_record_html(record, anchor + "-table")
        else:
            table = html_table(["quantity", "value"], _flatten(record), anchor + "-table")
    else:
        t = headline.read_table(path)
        order, heads = display_columns([str(c) for c in t.columns])
        t = t.iloc[:, order]
        table = html_table(heads, t.head(MAX_ROWS).itertuples(index=False), anchor + "-t")
        if len(t) > MAX_ROWS:
            table = (
                f'<p class="note">The first {MAX_ROWS:,} of {len(t):,} rows; the whole table '
                f"is the file below.</p>{table}"
            )
    return (
        f'<section class="item table" id="{anchor}"><h3>{text(title)}</h3>'
        f'<div class="caption">{caption}</div>{table}{source}</section>'
    )


# ---------------------------------------------------------------- the page


def _study_html(root: Path, facts: dict[str, Any], ledger_anchor: str | None) -> str:
    """Return the study summary: name, folder, preset, counts and exclusions."""
    summary = {}
    summary_path = root / "ingest" / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    rows = [
        ("Study", facts.get("name")),
        ("Folder", facts.get("path")),
        ("Preset", facts.get("preset")),
        ("Participants", facts.get("participants")),
        ("Attempts", facts.get("attempts")),
        ("Puzzles", facts.get("puzzles")),
        ("Puzzles per session", facts.get("per_session_text")),
        ("Puzzle sizes", ", ".join(facts.get("puzzle_sizes") or []) or None),
    ]
    dl = "".join(
        f"<dt>{text(k)}</dt><dd>{text('unknown' if v is None else v)}</dd>" for k, v in rows
    )
    excl = []
    if summary:
        excl.append(
            f"{summary.get('participants_excluded', 0)} participants excluded, "
            f"{summary.get('files_excluded', 0)} log files excluded, "
            f"{summary.get('events_excluded', 0)} events excluded; "
            f"{summary.get('ledger_rows', 0)} ledger rows in all"
        )
        levels = summary.get("ledger_by_level") or {}
        if levels:
            excl.append(", ".join(f"{k}: {v}" for k, v in sorted(levels.items())))
    link = f' (<a href="#{ledger_anchor}">the exclusion ledger</a>)' if ledger_anchor else ""
    exclusions = (
        f"<p>Exclusions: {text('. '.join(excl))}{link}.</p>" if excl else "<p>No ingest.</p>"
    )
    return (
        f'<section id="study"><h2>The study</h2><dl class="study">{dl}</dl>{exclusions}</section>'
    )


def _sentences_html(title: str, anchor: str, groups: list[list[str]]) -> str:
    items = "".join(f"<li>{text(s)}</li>" for g in groups for s in g)
    if not items:
        items = "<li>No results yet.</li>"
    return (
        f'<section id="{anchor}"><h2>{text(title)}</h2><ul class="headline">{items}</ul></section>'
    )


def _provenance_html(root: Path, files: list[Path]) -> str:
    """Return the provenance appendix: package versions and, per table, its inputs (sha256),
    parameters and seeds, from the ``*.provenance.json`` sidecars."""
    rows = []
    versions: dict[str, str] = {}
    for f in files:
        side = f.with_suffix(".provenance.json")
        rec = None
        if side.is_file():
            rec = json.loads(side.read_text(encoding="utf-8"))
        elif f.suffix == ".json":
            rec = json.loads(f.read_text(encoding="utf-8")).get("provenance")
        if not isinstance(rec, dict):
            continue
        versions.update(rec.get("versions") or {})
        inputs = rec.get("inputs") or {}
        rows.append(
            (
                f.relative_to(root).as_posix(),
                "; ".join(f"{k} ({str(v)[:12]})" for k, v in sorted(inputs.items())),
                json.dumps(rec.get("params") or {}, sort_keys=True),
                json.dumps(rec.get("seeds") or {}, sort_keys=True),
            )
        )
    if not rows:
        return ""
    vers = html_table(["package", "version"], sorted(versions.items()), "provenance-versions")
    table = html_table(
        ["output", "inputs (sha256)", "parameters", "seeds"], rows, "provenance-outputs"
    )
    return (
        '<section id="provenance"><h2>Provenance</h2><p>Every table is written with a '
        "provenance sidecar: the sha256 of each input, the package versions, the parameters "
        "and the seeds. Same inputs and configuration give byte-identical tables.</p>"
        f"<h3>Package versions</h3>{vers}<h3>Inputs, parameters and seeds per output</h3>"
        f"{table}</section>"
    )


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1b1b;
line-height:1.45}
header{background:#17324d;color:#fff;padding:1.2em 2em}header h1{margin:0;font-size:1.6em}
header p{margin:.3em 0 0}
.layout{display:flex;align-items:flex-start}
nav.toc{position:sticky;top:0;max-height:100vh;overflow:auto;width:17em;flex:none;
padding:1em;border-right:1px solid #ddd;font-size:.85em;box-sizing:border-box}
nav.toc ul{padding-left:1em;margin:.2em 0}nav.toc a{color:#17324d;text-decoration:none}
main{padding:1em 2em;min-width:0;flex:1}
h2{border-bottom:2px solid #17324d;padding-bottom:.2em;margin-top:1.6em}
dl.study{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}
dl.study dt{font-weight:600}dl.study dd{margin:0;overflow-wrap:anywhere}
ul.headline li{margin:.35em 0}
.item{margin:1.5em 0 2.5em}.caption{font-size:.9em;color:#333;max-width:60em}
figure{margin:0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{margin-top:.4em}.source{font-size:.8em;color:#666}
.table-wrap{overflow-x:auto;max-width:100%}
table.nl-table{border-collapse:collapse;font-size:.85em}
table.nl-table th,table.nl-table td{border-bottom:1px solid #e2e2e2;padding:.2em .6em;
text-align:left;white-space:nowrap}
table.nl-table thead th{background:#f2f4f7}
table.nl-table td.clip{max-width:24em;overflow:hidden;text-overflow:ellipsis}
.json-nested{margin-left:1em;border-left:3px solid #e2e2e2;padding-left:.8em}
.json-text{font-size:.9em;max-width:60em}
.json-record table.nl-table{width:auto!important;min-width:22em;margin-left:0!important}
.stale-banner{background:#fff3cd;border-bottom:3px solid #b8860b;color:#3d2c00;
padding:.8em 2em}.stale-banner ul{margin:.3em 0 0}
"""

#: start-up of the interactive tables: import the embedded DataTables bundle (a module given
#: as base64 in the element #datatables-bundle), make every table sortable; long tables
#: (data-kind="long") also get a search box and pages. Static code: no study data in it.
INIT_JS = """
(async () => {
  const b64 = document.getElementById("datatables-bundle").textContent.trim();
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const url = URL.createObjectURL(new Blob([bytes], {type: "text/javascript"}));
  const {default: DataTable} = await import(url);
  URL.revokeObjectURL(url);
  const settings = JSON.parse(document.getElementById("report-settings").textContent);
  document.querySelectorAll("table.nl-table").forEach((table) => {
    const long = table.dataset.kind === "long";
    // DataTables puts its controls around the table: take the table out of its scrolling
    // box first, and put the box back around the table alone, so the controls stay in view.
    const box = table.parentElement;
    box.replaceWith(table);
    new DataTable(table, {
      order: [], paging: long, searching: long, info: long, lengthChange: long,
      pageLength: settings.page_length, autoWidth: false,
    });
    table.parentNode.insertBefore(box, table);
    box.appendChild(table);
  });
  document.body.dataset.tables = "ready";
})().catch((err) => { console.error("interactive tables:", err); });
"""


@functools.cache
def _datatables_assets() -> tuple[str, str]:
    """Return (CSS, base64 of the JavaScript module) of the DataTables bundle shipped with
    itables (``itables.options.dt_bundle``)."""
    from itables import options

    js = Path(options.dt_bundle)
    css = js.with_suffix(".css").read_text(encoding="utf-8")
    if "</" in css:
        css = css.replace("</", "<\\/")
    return css, base64.b64encode(js.read_bytes()).decode("ascii")


def render_report(results_dir: str | os.PathLike) -> str:
    """Return the report page (HTML text) for the results in ``results_dir`` (the folder
    holding ``results/``, or the results folder itself)."""
    from nonolab.report.captions import study_facts

    root = results_root(results_dir)
    facts = study_facts(root)
    config = caption_context(root)
    banner = banner_html(check_results(root))
    ranking = config.get("ranking", {})
    items: dict[str, list[str]] = {k: [] for k in SECTIONS}
    toc: dict[str, list[tuple[str, str]]] = {k: [] for k in SECTIONS}
    shown: list[Path] = []
    ledger_anchor = None
    for entry in ENTRIES:
        for path in entry_files(root, entry):
            if entry.section != "ingest" and _empty_table(path):
                continue  # a table without rows (errata of a study with nothing published)
            items[entry.section].append(_item_html(root, entry, path, config))
            anchor = _anchor(root, path)
            toc[entry.section].append((anchor, entry.title))
            shown.append(path)
            if entry.caption == "ingest_ledger":
                ledger_anchor = anchor
    headline_groups = [
        headline.table1_sentences(
            root, ranking.get("main_solver", ""), ranking.get("main_encoding", "")
        ),
        headline.ranking_sentences(root),
        headline.models_sentences(root),
        headline.pause_sentences(root),
    ]
    errata = headline.errata_sentences(root)
    name = facts.get("name") or "no study yet"
    parts = [_study_html(root, facts, ledger_anchor)]
    parts.append(_sentences_html("Headline results", "headline", headline_groups))
    top = [("study", "The study"), ("headline", "Headline results")]
    if errata:
        parts.append(_sentences_html("Errata summary", "errata-summary", [errata]))
        top.append(("errata-summary", "Errata summary"))
    parts.append(
        '<section id="about"><h2>About this analysis</h2>'
        f'<div class="caption">{_caption_html("workflow", root, config)}</div></section>'
    )
    top.append(("about", "About this analysis"))
    from nonolab.report.measures_section import measures_section

    if (measures := measures_section(root)) is not None:
        parts.append(measures[2])
        top.append(measures[:2])
    toc_html = "".join(f'<li><a href="#{a}">{text(t)}</a></li>' for a, t in top)
    for key, heading in SECTIONS.items():
        if not items[key]:
            continue
        parts.append(
            f'<section id="s-{key}"><h2>{text(heading)}</h2>{"".join(items[key])}</section>'
        )
        sub = "".join(f'<li><a href="#{a}">{text(t)}</a></li>' for a, t in toc[key])
        toc_html += f'<li><a href="#s-{key}">{text(heading)}</a><ul>{sub}</ul></li>'
    prov = _provenance_html(root, shown)
    if prov:
        parts.append(prov)
        toc_html += '<li><a href="#provenance">Provenance</a></li>'
    css, bundle = _datatables_assets()
    meta = {
        "study": {k: facts.get(k) for k in ("name", "path", "preset")},
        "generated_by": "nonolab report",
    }
    settings = {"page_length": PAGE_LENGTH}
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{text(name)}: nonolab report'
        "</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{css}</style><style>{_CSS}</style></head><body>{BANNER_SLOT}{banner}"
        f"<header><h1>{text(name)}</h1><p>Nonogram difficulty study report (nonolab), "
        f"preset {text(facts.get('preset') or 'unknown')}</p></header>"
        f'<div class="layout"><nav class="toc"><strong>Contents</strong><ul>{toc_html}</ul></nav>'
        f"<main>{''.join(parts)}</main></div>"
        f'<script type="application/json" id="report-metadata">{script_json(meta)}</script>'
        f'<script type="application/json" id="report-settings">{script_json(settings)}</script>'
        f'<script type="text/plain" id="datatables-bundle">{bundle}</script>'
        f'<script type="module">{INIT_JS}</script>'
        "</body></html>\n"
    )


def build_report(results_dir: Path, out: Path | None = None) -> Path:
    """Write the study report of ``results_dir`` (the folder holding ``results/``, or the
    results folder itself) to ``out`` (default: ``report.html`` in the results folder), via a
    temporary file renamed into place; return the path written."""
    root = results_root(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"results folder {results_dir} not found")
    out = Path(out) if out is not None else root / "report.html"
    page = render_report(results_dir)
    write_text(out, page)
    return out


__all__ = [
    "build_report",
    "entry_files",
    "format_cell",
    "html_table",
    "render_report",
    "results_root",
    "rst_to_html",
    "script_json",
    "text",
]
