"""Deterministic table output with provenance sidecars.

Every table nonolab writes goes through :func:`write_table`: CSV with fixed float formatting
(byte-identical for identical inputs), optionally Markdown and LaTeX (booktabs), and a sidecar
``<name>.provenance.json`` recording input file hashes, package versions, parameters and seeds.
Nothing time- or host-dependent is written into a table or its sidecar, so reruns are
byte-identical.

The core layer imports no table library: a table is any object with the pandas ``DataFrame``
interface used here (``to_csv``, ``to_parquet``, ``columns``, ``itertuples``, ``dtype`` of a
column), so the writers serve every layer above.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from nonolab.core.hashing import input_hashes

FLOAT_FORMAT = "%.10g"
PACKAGES = (
    "nonolab",
    "numpy",
    "pandas",
    "scipy",
    "scikit-learn",
    "statsmodels",
    "choix",
    "python-sat",
    "matplotlib",
    "snakemake",
)


class Table(Protocol):
    """The part of the pandas ``DataFrame`` interface the writers use."""

    columns: Any

    def __len__(self) -> int: ...

    def __getitem__(self, key: Any) -> Any: ...

    def to_csv(self, *args: Any, **kwargs: Any) -> Any: ...

    def to_parquet(self, *args: Any, **kwargs: Any) -> Any: ...

    def itertuples(self, *args: Any, **kwargs: Any) -> Any: ...


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str]:
    """Return ``{package: version}`` for the installed packages among ``names``."""
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def provenance(
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a provenance record: input sha256s, package versions, parameters and seeds."""
    return {
        "inputs": input_hashes(inputs),
        "versions": package_versions(),
        "params": dict(params or {}),
        "seeds": dict(seeds or {}),
    }


class OutputError(OSError):
    """A file or folder could not be written; the message names it (``path``, the reason in
    ``why``)."""

    def __init__(self, code: int, path: Path, why: str) -> None:
        super().__init__(code, f"cannot write {path}: {why}")
        self.path, self.why = Path(path), why


def _output_error(exc: OSError, path: Path) -> OutputError:
    why = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        why = "no space left on the device"
    return OutputError(exc.errno or 0, path, why)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder (same suffix, so writers that go by the
    suffix work) and rename it to ``path`` when the block ends without an exception.

    The rename is atomic on POSIX: ``path`` holds either its previous content or the complete
    new one, never a part (a killed process leaves at most a hidden ``.<name>.tmp-*`` file,
    which no reader looks at). On any exception the temporary file is removed; an ``OSError``
    (disk full, permissions) is raised again as :class:`OutputError` naming ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{path.name}.tmp-", suffix=path.suffix, dir=path.parent
        )
        os.close(fd)
    except OutputError:
        raise
    except OSError as exc:
        raise _output_error(exc, path) from exc
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise _output_error(exc, path) from exc
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` on a temporary path next to ``path`` and rename it into place
    (:func:`atomic_path`); e.g. ``write_atomic(p, lambda t: fig.savefig(t))``."""
    with atomic_path(path) as tmp:
        write(tmp)


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_path`), ``\\n`` line ends as
    given."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding=encoding, newline="") as fh:
        fh.write(text)


def write_json(obj: Any, path: str | os.PathLike) -> None:
    """Write ``obj`` as sorted, indented JSON (byte-stable) to ``path``, atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"
    write_text(path, text)


@contextlib.contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a new empty sibling folder of ``path``; when the block ends without an exception
    it replaces ``path`` as a whole (the previous folder is renamed aside, the new one renamed
    into place, the previous one removed).

    A reader sees the previous complete folder, the new complete one, or (for an instant, or
    after a kill between the two renames) none: never a mix. On an exception the new folder is
    removed and ``path`` is left as it was. ``OSError`` is raised as :class:`OutputError`
    naming the folder.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    except OSError as exc:
        raise _output_error(exc, path) from exc
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_umask())
        old = None
        if path.exists() or path.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.replace(path, old / "previous")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OutputError) and exc.path.is_relative_to(tmp):
            # name the file where it was to go, not in the temporary folder
            raise OutputError(exc.errno or 0, path / exc.path.relative_to(tmp), exc.why) from exc
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise _output_error(exc, path) from exc
        raise


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return o.as_posix()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


#: a text cell that starts with one of these is neutralised for spreadsheets (the quote itself
#: too, so that reading back is exact): a leading ``=``, ``+``, ``-`` or ``@`` (or a tab or
#: carriage return) makes Excel, LibreOffice and Google Sheets read the cell as a formula
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "'")
#: the prefix that neutralises a cell (a single quote: a spreadsheet shows the rest as text)
SPREADSHEET_PREFIX = "'"
#: what pandas reads as missing by default; in text columns (:func:`csv_read_options`) none is
NA_STRINGS = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "<NA>",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "None",
    "n/a",
    "nan",
    "null",
)


def neutralise_cell(v: Any) -> Any:
    """Return text cell ``v`` prefixed with a single quote when it starts with a
    :data:`SPREADSHEET_TRIGGERS` character (``=HYPERLINK(..)`` -> ``'=HYPERLINK(..)``); any
    other value (numbers, missing values, other text) unchanged. :func:`restore_cell` undoes
    it."""
    if isinstance(v, str) and v.startswith(SPREADSHEET_TRIGGERS):
        return SPREADSHEET_PREFIX + v
    return v


def restore_cell(v: Any) -> Any:
    """Return text cell ``v`` as it was before :func:`neutralise_cell` (one leading quote
    removed when a trigger character follows it); any other value unchanged."""
    if (
        isinstance(v, str)
        and v.startswith(SPREADSHEET_PREFIX)
        and v[1:2]
        and v[1:].startswith(SPREADSHEET_TRIGGERS)
    ):
        return v[1:]
    return v


def _is_text(dtype: Any) -> bool:
    return getattr(dtype, "kind", "O") in "OSU" or str(dtype) in ("string", "str")


def spreadsheet_safe(df: Table) -> Table:
    """Return ``df`` with every text cell neutralised (:func:`neutralise_cell`); numeric,
    boolean and date columns are not touched (a negative number stays a number). ``df`` itself
    is returned when no cell needs it."""
    out = None
    for c in df.columns:
        col = df[c]
        if not _is_text(col.dtype):
            continue
        new = col.map(neutralise_cell)
        if not new.equals(col):
            if out is None:
                out = df.copy()
            out[c] = new
    return df if out is None else out


def _has_cr(df: Table) -> bool:
    """Return True when a text cell or a column name of ``df`` holds a carriage return."""
    if any("\r" in str(c) for c in df.columns):
        return True
    return any(
        any(isinstance(v, str) and "\r" in v for v in df[c])
        for c in df.columns
        if _is_text(df[c].dtype)
    )


def is_text_column(name: Any, text: Iterable[str] = ()) -> bool:
    """Return True for a column read as text whatever it holds: one named in ``text`` or an id
    column (``id`` or ending in ``_id``)."""
    name = str(name)
    return name in set(text) or name == "id" or name.endswith("_id")


def csv_read_options(columns: Iterable[Any], text: Iterable[str] = ()) -> dict[str, Any]:
    """Return the ``pandas.read_csv`` options for a table written by :func:`write_table` with
    the header ``columns``: text columns (:func:`is_text_column`) as ``str`` with no missing
    values at all (``NA``, ``null``, ``nan``, ``None`` and the empty cell stay text), the other
    columns with pandas' usual missing values (:data:`NA_STRINGS`). Apply
    :func:`restore_cells` to the frame read."""
    text = list(text)
    cols = list(columns)
    txt = [c for c in cols if is_text_column(c, text)]
    return {
        "dtype": dict.fromkeys(txt, str),
        "keep_default_na": False,
        "na_values": {c: ([] if c in txt else list(NA_STRINGS)) for c in cols},
    }


def restore_cells(df: Table) -> Table:
    """Return ``df`` (read back from CSV) with every neutralised text cell restored
    (:func:`restore_cell`), in place."""
    for c in df.columns:
        if _is_text(df[c].dtype):
            df[c] = df[c].map(restore_cell)
    return df


def table_record(
    df: Table,
    file_name: str,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the provenance sidecar record of table ``df`` written as ``file_name``:
    :func:`provenance` plus ``table`` (file name, row count, column names)."""
    rec = provenance(inputs, params, seeds)
    rec["table"] = {"file": file_name, "rows": int(len(df)), "columns": list(map(str, df.columns))}
    return rec


def write_table(
    df: Table,
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
    formats: Iterable[str] = ("csv",),
    caption: str | None = None,
) -> None:
    """Write ``df`` to ``path`` (a ``.csv`` path) and its provenance sidecar.

    ``formats`` may add ``"md"`` (Markdown) and ``"tex"`` (LaTeX booktabs) next to the CSV, and
    ``"parquet"``. The sidecar ``<stem>.provenance.json`` holds :func:`table_record`. Floats are
    written with ``%.10g`` so output is byte-identical across reruns.
    """
    path = Path(path)
    formats = set(formats) | {"csv"}
    cells = spreadsheet_safe(df)
    # a carriage return inside a cell is not quoted by the CSV writer under "\n" line ends
    # (readers would split the row there): such a table has every cell quoted
    quoting = csv.QUOTE_ALL if _has_cr(cells) else csv.QUOTE_MINIMAL
    with atomic_path(path) as tmp:
        cells.to_csv(
            tmp, index=False, float_format=FLOAT_FORMAT, lineterminator="\n", quoting=quoting
        )
    if "parquet" in formats:
        with atomic_path(path.with_suffix(".parquet")) as tmp:
            df.to_parquet(tmp, index=False)
    if "md" in formats:
        write_text(path.with_suffix(".md"), to_markdown(df, caption))
    if "tex" in formats:
        write_text(path.with_suffix(".tex"), to_latex(df, caption))
    rec = table_record(df, path.name, inputs=inputs, params=params, seeds=seeds)
    write_json(rec, path.with_name(path.stem + ".provenance.json"))


def write_parquet_table(
    df: Table,
    path: str | os.PathLike,
    *,
    inputs: Iterable[str | os.PathLike] = (),
    params: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
) -> None:
    """Write ``df`` as Parquet only to ``path`` (a ``.parquet`` path) and its provenance
    sidecar ``<stem>.provenance.json`` (:func:`table_record`)."""
    path = Path(path)
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    rec = table_record(df, path.name, inputs=inputs, params=params, seeds=seeds)
    write_json(rec, path.with_name(path.stem + ".provenance.json"))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v != v:  # NaN
            return ""
        return f"{v:.4g}" if abs(v) < 1e-3 and v != 0 else f"{v:.3f}".rstrip("0").rstrip(".")
    if v is None or (isinstance(v, float) and v != v):
        return ""
    return str(v)


#: characters a Markdown (CommonMark/GFM) table cell escapes with a backslash: the column
#: separator, the escape itself and every inline-syntax opener (code, emphasis, links,
#: strikethrough); ``_`` only where it could open or close emphasis (not inside a word)
_MD_BACKSLASHED = frozenset("\\|`*[]~")
#: HTML's special characters as entities: no cell carries live HTML or an entity of its own
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: line ends (CommonMark's, and what tabulate and str.splitlines split on), one ``<br>`` each
_LINE_END = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def markdown_cell(text: str) -> str:
    """Return ``text`` escaped for one cell of a GitHub Markdown table: ``\\ | ` * [ ] ~``
    and a ``_`` that is not inside a word backslash-escaped, ``& < >`` as entities, each line
    end as ``<br>`` (the one HTML a cell holds) and NUL as U+FFFD (as CommonMark reads it), so
    that no value can shift the columns, end the row, format text or carry live HTML. A
    Markdown reader gives back ``text`` (line ends as line breaks; leading and trailing spaces
    are not kept by Markdown)."""
    out = []
    n = len(text)
    for i, ch in enumerate(text):
        if ch in _MD_BACKSLASHED:
            out.append("\\" + ch)
        elif ch == "_":
            inside = 0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append("_" if inside else "\\_")
        elif ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch == "\x00":
            out.append("\ufffd")
        else:
            out.append(ch)
    return _LINE_END.sub("<br>", "".join(out))


def to_markdown(df: Table, caption: str | None = None) -> str:
    """Return ``df`` as a GitHub Markdown table (pandas ``DataFrame.to_markdown``, which uses
    tabulate), numbers as :func:`_fmt` writes them (3 decimals; 4 significant digits below
    0.001), every cell and column name escaped (:func:`markdown_cell`), with an optional
    caption line (escaped the same way)."""
    cells = df.astype(object).map(lambda v: markdown_cell(_fmt(v)))
    cells.columns = [markdown_cell(str(c)) for c in df.columns]
    text = cells.to_markdown(index=False, tablefmt="github", disable_numparse=True)
    return (f"{markdown_cell(caption)}\n\n" if caption else "") + text + "\n"


#: what LaTeX cannot take in a cell as it is: line ends (two make a paragraph break, which
#: ends a tabular with an error) and the other control characters (catcode "invalid")
_TEX_UNSAFE = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def latex_plain(text: str) -> str:
    """Return ``text`` with every line end and control character as one space (before it is
    escaped: :func:`_tex_escape`, or the Styler's ``escape="latex"``)."""
    return _TEX_UNSAFE.sub(" ", text)


#: LaTeX's special characters and what stands for each (as pandas' ``Styler`` escapes a cell)
_TEX_SPECIAL = {
    "\\": r"\textbackslash ",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde ",
    "^": r"\textasciicircum ",
}


def _tex_escape(s: str) -> str:
    r"""Return ``s`` escaped for LaTeX text as pandas' ``Styler`` escapes a cell (``\\ & % $
    # _ { } ~ ^``; a space after a control word kept as ``\space``), line ends and control
    characters as spaces (:func:`latex_plain`)."""
    out = []
    for ch in latex_plain(s):
        if out and out[-1].endswith(" ") and out[-1].startswith("\\text") and ch == " ":
            out.append(r"\space ")
        else:
            out.append(_TEX_SPECIAL.get(ch, ch))
    return "".join(out)


def _is_numeric(dtype: Any) -> bool:
    """Return True for boolean, integer, float and complex dtypes (numpy or pandas nullable),
    as ``pandas.api.types.is_numeric_dtype`` decides them."""
    return getattr(dtype, "kind", "O") in "biufc"


def to_latex(df: Table, caption: str | None = None) -> str:
    """Return ``df`` as a LaTeX booktabs ``tabular`` in a ``table`` float (pandas
    ``Styler.to_latex(hrules=True)``), numbers as :func:`_fmt` writes them, text (cells, column
    names, caption) escaped for LaTeX with line ends and control characters as spaces
    (:func:`latex_plain`); numeric columns right-aligned."""
    align = "".join("r" if _is_numeric(df[c].dtype) else "l" for c in df.columns)
    styler = (
        df.style.hide(axis="index")
        .format(lambda v: latex_plain(_fmt(v)), escape="latex")
        .format_index(lambda c: latex_plain(str(c)), escape="latex", axis=1)
    )
    return styler.to_latex(
        hrules=True,
        column_format=align,
        position="htbp",
        position_float="centering",
        caption=_tex_escape(caption) if caption else None,
    )
