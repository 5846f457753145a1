"""``nonolab measures``: which measures track difficulty, pooled over several studies.

``nonolab measures --results A --results B [--out DIR]`` reads, from each results folder (what
``nonolab run --results`` wrote), the attempts (``results/features/attempts.csv``) and the
registered measures of its served puzzles (``results/measures/served.csv``,
``results/measures/registry.csv``), pools them (participants kept apart per study, a puzzle
served in several studies is one puzzle) and fits every measure's crossed mixed model with the
study as a random effect (:func:`nonolab.stats.measure_evaluation.pooled_evaluation`). Writes
``measures_pooled.csv`` (and its provenance) to ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NEEDED = ("features/attempts.csv", "measures/served.csv", "measures/registry.csv")


def _measures(args: argparse.Namespace) -> int:
    import pandas as pd

    from nonolab.core.tables import write_table
    from nonolab.report.html import results_root
    from nonolab.stats.measure_evaluation import POOLED_FAMILY, pooled_evaluation

    if len(args.results) < 2:
        raise SystemExit("nonolab measures: give at least two --results folders to pool")
    studies, registries, inputs = {}, [], []
    for i, folder in enumerate(args.results):
        root = results_root(folder)
        missing = [f for f in NEEDED if not (root / f).is_file()]
        if missing:
            raise SystemExit(
                f"nonolab measures: {folder} lacks {', '.join('results/' + m for m in missing)} "
                "(run the workflow on that study first: `nonolab run`)"
            )
        name = root.resolve().parent.name or f"study{i + 1}"
        while name in studies:
            name = f"{name}_{i + 1}"
        ids = {"participant_id": str, "puzzle_id": str, "puzzle_hash": str}
        att = pd.read_csv(root / NEEDED[0], dtype=ids)
        meas = pd.read_csv(root / NEEDED[1], dtype={"puzzle_id": str, "puzzle_hash": str})
        studies[name] = (att, meas)
        registries.append(pd.read_csv(root / NEEDED[2]))
        inputs += [root / f for f in NEEDED]
    names = set.intersection(*(set(r["name"]) for r in registries))
    registry = registries[0][registries[0]["name"].isin(names)]
    table = pooled_evaluation(studies, registry)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "measures_pooled.csv"
    write_table(
        table,
        path,
        inputs=inputs,
        params={"studies": list(studies), "family": POOLED_FAMILY},
        caption="Every measure pooled over the studies (study as a random effect).",
    )
    ok = table[table["status"] == "ok"]
    print(
        f"pooled {len(studies)} studies ({', '.join(studies)}): {ok['measure'].nunique()} of "
        f"{table['measure'].nunique()} measures tested on {table['outcome'].nunique()} outcomes; "
        f"{path}"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``measures`` to the CLI."""
    p = sub.add_parser(
        "measures",
        help="which measures track difficulty, pooled over results folders (study as a random "
        "effect)",
        description="Pool the attempts and puzzle measures of several results folders and fit "
        "every registered measure's crossed mixed model with the study as a random effect "
        "(Satterthwaite t, one Benjamini-Hochberg family).",
    )
    p.add_argument(
        "--results",
        metavar="DIR",
        action="append",
        required=True,
        help="a results folder (the folder given to `nonolab run --results`, or its results/); "
        "give it once per study, at least twice",
    )
    p.add_argument(
        "--out", metavar="DIR", default=".", help="where to write measures_pooled.csv (default: .)"
    )
    p.set_defaults(func=_measures)
