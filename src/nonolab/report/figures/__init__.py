"""Shared figure style: one look for every nonolab figure, deterministic PNG and PDF output.

Figures are sized for a paper column (:data:`COLUMN_WIDTH_IN`, about 3.4 in) with 8 pt text, an
Okabe-Ito colour-blind-safe palette, and are saved by :func:`save_figure` as PNG (200 dpi) and
PDF with fixed metadata, so the same input gives byte-identical files. Plotting functions in the
submodules take tables and return a :class:`matplotlib.figure.Figure`; they compute nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from nonolab.core.tables import atomic_path  # noqa: E402
from nonolab.core.undefined import NOT_DEFINED  # noqa: E402

COLUMN_WIDTH_IN = 3.4
DOUBLE_WIDTH_IN = 7.0
DPI = 200

#: Okabe-Ito palette (colour-blind safe), in the order used for series.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#D55E00",  # vermillion
    "#CC79A7",  # purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)
GREY = "#7f7f7f"

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.linewidth": 0.6,
    "xtick.major.width": 0.6,
    "ytick.major.width": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "axes.prop_cycle": matplotlib.cycler(color=list(PALETTE)),
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.02,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.hashsalt": "nonolab",
    "path.simplify": True,
}

#: Metadata written into every PDF/PNG: no dates, no version strings, so bytes are stable.
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": "nonolab"}
PNG_METADATA = {"Software": None}


@contextmanager
def style() -> Iterator[None]:
    """Context in which matplotlib uses the nonolab style (:data:`RC`)."""
    with matplotlib.rc_context(RC):
        yield


def new_figure(
    nrows: int = 1,
    ncols: int = 1,
    width_in: float = COLUMN_WIDTH_IN,
    height_in: float | None = None,
    **subplot_kw,
) -> tuple[Figure, object]:
    """Return ``(figure, axes)`` in the nonolab style; height defaults to 0.75 x width per row.

    Call inside :func:`style` so text sizes apply to the axes created here.
    """
    height_in = height_in if height_in is not None else 0.75 * width_in * nrows / max(ncols, 1)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(width_in, height_in), constrained_layout=True, **subplot_kw
    )
    return fig, axes


#: a missing number written by Python or numpy into a figure text
_UNDEFINED_WORD = re.compile(r"(?<![\w.])(nan|NaN|None|null|[-+]?inf)(?![\w.])")


def undefined_words(fig: Figure) -> list[str]:
    """Rewrite every text of ``fig`` (titles, axis labels, legend entries, annotations) in
    which a missing number was written as ``nan``, ``None``, ``null`` or ``inf`` so that it
    reads ``not defined`` (:data:`nonolab.core.undefined.NOT_DEFINED`); return the texts as
    they were. The figures write undefined statistics with their reason
    (:mod:`nonolab.core.undefined`); this is the last guard for a text that did not."""
    import matplotlib.text

    fixed = []
    for t in fig.findobj(matplotlib.text.Text):
        old = t.get_text()
        if old and _UNDEFINED_WORD.search(old):
            t.set_text(_UNDEFINED_WORD.sub(NOT_DEFINED, old))
            fixed.append(old)
    return fixed


def save_figure(
    fig: Figure, png_path: str | os.PathLike, pdf_path: str | os.PathLike | None = None
) -> None:
    """Save ``fig`` as PNG (200 dpi) and, when given, PDF with fixed metadata; closes ``fig``.
    A missing number written as ``nan``/``None`` in a text is shown as ``not defined``
    (:func:`undefined_words`)."""
    undefined_words(fig)
    with style():
        with atomic_path(png_path) as tmp:
            fig.savefig(tmp, dpi=DPI, format="png", metadata=PNG_METADATA)
        if pdf_path is not None:
            with atomic_path(pdf_path) as tmp:
                fig.savefig(tmp, format="pdf", metadata=PDF_METADATA)
    plt.close(fig)


def panel_label(ax, label: str) -> None:
    """Put a bold panel label (``a``, ``b``...) in the top-left corner outside ``ax``."""
    ax.text(-0.02, 1.02, label, transform=ax.transAxes, fontweight="bold", ha="right", va="bottom")
