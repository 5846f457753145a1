"""``nonolab report``: build the study report of a results folder.

``nonolab report [--results DIR] [--out FILE]`` writes one self-contained HTML page
(:func:`nonolab.report.html.build_report`) for the results of ``nonolab run --results DIR``:
the study, headline results, every table and figure with its caption, the errata summary and
the provenance of every table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _report(args: argparse.Namespace) -> int:
    from nonolab.report.html import build_report, results_root

    root = results_root(args.results)
    if not (root / "ingest").is_dir():
        raise FileNotFoundError(
            f"{args.results} holds no results (no results/ingest/): run "
            f"`nonolab run --study STUDY --results {args.results}` first"
        )
    from nonolab.report.consistency import check_results

    found = check_results(root)
    out = build_report(Path(args.results), Path(args.out) if args.out else None)
    print(f"report: {out}")
    print(found.summary(), flush=True)
    if not found.ok:
        print(
            "nonolab report: these results are out of date or mixed (the page says so at the top):",
            file=sys.stderr,
        )
        for problem in found.problems:
            print(f"  - {problem}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``report`` to the CLI."""
    p = sub.add_parser(
        "report",
        help="build the study report (one self-contained HTML page) of a results folder",
        description="Build the study report of a results folder: one HTML page that works "
        "offline, with the study, headline results, every table (sortable) and figure (with "
        "its caption), the errata summary and the provenance of every table.",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        default=".",
        help="the folder given to `nonolab run --results` (holding results/), or the results "
        "folder itself (default: .)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        default=None,
        help="where to write the page (default: DIR/results/report.html)",
    )
    p.set_defaults(func=_report)
