"""``nonolab simulate``: write a simulated study in the public study's folder layout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nonolab.cli.options import grid_size, non_negative_int, positive_int
from nonolab.core.progress import Progress
from nonolab.sim.design import SURVEYS, StudyDesign, design_preset, reshape_study
from nonolab.sim.events import simulate_study
from nonolab.sim.model import FAULTS, METRICS, SimParams, params_from_mapping
from nonolab.sim.writer import write_study


def _faults(text: str) -> tuple[str, ...]:
    names = (
        FAULTS if text.strip() == "all" else tuple(x.strip() for x in text.split(",") if x.strip())
    )
    bad = [x for x in names if x not in FAULTS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown fault classes {bad}; known: {', '.join(FAULTS)}")
    return names


def _run(args: argparse.Namespace) -> int:
    overrides: dict = {}
    if args.params:
        overrides.update(json.loads(Path(args.params).read_text(encoding="utf-8")))
    h, w = args.size
    overrides.update(
        n_participants=args.participants,
        n_puzzles=args.puzzles,
        height=h,
        width=w,
        filled=args.filled if args.filled is not None else (h * w) // 2,
        faults=tuple(args.faults),
    )
    if args.metric is not None:
        overrides["metric"] = args.metric
    if args.strength is not None:
        overrides["metric_strength"] = args.strength
    params = params_from_mapping(SimParams(), overrides)
    design = StudyDesign(
        per_session=args.per_session, missing=args.missing_ratings, surveys=args.surveys
    )
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise ValueError(
            f"{out} is not empty: refusing to write a study into it (--force rewrites a "
            "simulated study)"
        )
    with Progress(params.n_participants, "simulate") as bar:
        bar.set_note("drawing puzzles")
        study = simulate_study(params, args.seed, progress=lambda: bar.update(note=""))
        study = reshape_study(study, design, args.seed)
        bar.set_note("writing files")
        files = write_study(study, out)
    if design.per_session < 3:
        (out / "preset.yaml").write_text(design_preset(design), encoding="utf-8")
        files.append(out / "preset.yaml")
    truth = study.truth
    print(
        f"wrote {len(files)} files to {args.out}: {params.n_participants} participants, "
        f"{params.n_puzzles} puzzles; true pause threshold {truth['pause_threshold_s']:.4f} s, "
        f"true final-rating slope {truth['slope_final_rating']:.4f}"
    )
    if design.per_session < 3:
        print(f"run it with the preset {out / 'preset.yaml'} (config preset=...)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``simulate`` to the CLI."""
    p = sub.add_parser(
        "simulate",
        help="write a simulated study (public-study layout plus ground_truth.json)",
        description="Simulate a Nonogram study: unique puzzles, participants with latent "
        "expertise, NDJSON interaction logs, surveys, coded themes, and ground_truth.json. "
        "Deterministic for a seed. Refuses a non-empty output folder unless --force. Progress "
        "goes to stderr when it is a terminal.",
    )
    p.add_argument("out", help="output folder (created; must not exist or be empty)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty folder that holds a simulated study (ground_truth.json), "
        "replacing it; a folder without one is never written into",
    )
    p.add_argument("--participants", type=positive_int, default=30)
    p.add_argument("--puzzles", type=positive_int, default=6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=grid_size, default=(10, 10), help="HxW (default 10x10)")
    p.add_argument(
        "--filled", type=non_negative_int, default=None, help="filled cells (default: half)"
    )
    p.add_argument("--metric", choices=METRICS, default=None, help="metric driving difficulty")
    p.add_argument("--strength", type=float, default=None, help="puzzle-level correlation")
    p.add_argument(
        "--faults",
        type=_faults,
        default=(),
        help="comma-separated bad-input classes to inject, one instance each, or 'all' "
        f"({', '.join(FAULTS)}); listed in ground_truth.json",
    )
    p.add_argument("--params", help="JSON file of further SimParams overrides")
    p.add_argument(
        "--per-session",
        type=positive_int,
        default=3,
        help="puzzles each session serves, 1-3 (default 3); below 3 the study gets a "
        "preset.yaml to pass as the workflow's preset",
    )
    p.add_argument(
        "--missing-ratings",
        type=float,
        default=0.0,
        help="probability that each initial and each final rating is left out (default 0)",
    )
    p.add_argument(
        "--surveys",
        choices=SURVEYS,
        default="all",
        help="all surveys answered (default), no post-survey, an empty pre-survey, or neither",
    )
    p.set_defaults(func=_run)
