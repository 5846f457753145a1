"""``nonolab ingest`` and ``nonolab features``: the ingest and features stages without Snakemake."""

from __future__ import annotations

import argparse
from pathlib import Path


def _ingest(args: argparse.Namespace) -> int:
    from nonolab.study.ingest import ingest_study, write_ingest
    from nonolab.study.presets import resolve_preset

    study, out = Path(args.study), Path(args.out)
    if study.exists() and not study.is_dir():
        raise ValueError(f"study {study} is a file, not a study folder")
    if out.exists() and not out.is_dir():
        raise ValueError(f"output {out} exists and is not a folder")
    preset = resolve_preset(args.study, args.preset)
    result = ingest_study(args.study, preset)
    write_ingest(result, args.out, params={"preset": preset.name})
    s = result.summary
    print(
        f"preset {preset.name}: {s['log_files']} log files, {s['participants']} participants, "
        f"{s['attempts']} attempts, {s['final_ratings']} final ratings, "
        f"{s['ledger_rows']} ledger rows -> {args.out}"
    )
    return 0


def _features(args: argparse.Namespace) -> int:
    from nonolab.core.tables import write_table
    from nonolab.study.features import attempt_features, read_pause_model
    from nonolab.study.ingest import read_ingest

    if args.threshold_json:  # one of the two is required (a usage error otherwise)
        threshold = read_pause_model(args.threshold_json).threshold_used_s
    else:
        threshold = args.threshold
    tables = read_ingest(args.ingest_dir)
    feats = attempt_features(tables, threshold, args.keep_initial_rating_sentinel)
    out = Path(args.out)
    write_table(
        feats,
        out,
        inputs=[Path(args.ingest_dir)],
        params={
            "threshold_used_s": threshold,
            "keep_initial_rating_sentinel": args.keep_initial_rating_sentinel,
        },
        formats=("csv", "parquet"),
    )
    print(f"{len(feats)} attempts (pause threshold {threshold:g} s) -> {out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``ingest`` and ``features`` to the CLI."""
    p = sub.add_parser(
        "ingest",
        help="read a study's logs into tidy tables and a ledger",
        description="Read a study folder's puzzle file and interaction logs (the files its "
        "preset names) into tidy tables (events, attempts, participants, ratings, survey "
        "texts, puzzles; Parquet, some also CSV) and an exclusion ledger (ledger.csv: every "
        "file, line or participant left out, with the reason), as the workflow's ingest stage "
        "does. `nonolab validate` checks a study the same way without writing anything.",
    )
    p.add_argument("study", help="study folder (public-study layout, docs/data-format.md)")
    p.add_argument("out", help="output folder (e.g. results/ingest)")
    p.add_argument(
        "--preset",
        default="auto",
        help="preset name (config/studies/) or file; auto = the preset whose fingerprint "
        "matches the study's puzzle file, else default (docs/presets.md)",
    )
    p.set_defaults(func=_ingest)

    f = sub.add_parser(
        "features",
        help="per-attempt behavioural features from ingest tables",
        description="One row per attempt: time to solve (s), pauses longer than the pause "
        "threshold, errors, hints, initial and final ratings, order in the session, as the "
        "workflow's features stage computes them. Give the threshold in seconds or the "
        "pauses stage's threshold.json (its threshold_used_s).",
    )
    f.add_argument("ingest_dir", help="folder written by `nonolab ingest`")
    f.add_argument("out", help="output CSV path (a .parquet is written next to it)")
    g = f.add_mutually_exclusive_group(required=True)
    g.add_argument("--threshold", type=float, metavar="SECONDS", help="pause threshold (s)")
    g.add_argument(
        "--threshold-json",
        metavar="FILE",
        help="the pauses stage's output (results/pauses/threshold.json): its threshold_used_s",
    )
    f.add_argument(
        "--keep-initial-rating-sentinel",
        action="store_true",
        help="keep the logged initial rating -1 of skipped puzzles (as published)",
    )
    f.set_defaults(func=_features)
