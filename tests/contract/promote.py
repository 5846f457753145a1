"""Promote the contract fuzzer's found cases into regression cases (``make fuzz-promote``).

The fuzzer (tests/contract/test_fuzzer.py) saves each failing case in its found-cases folder
(``$NONOLAB_FUZZ_FOUND``, by default ``<temporary folder>/nonolab-fuzz-found``), never into the
source tree. This command moves them into tests/contract/regressions/, where
test_regressions.py replays them: a case saved ``open`` is a strict expected failure until the
hole is closed and the case marked ``fixed``. A case already there (same base and operations)
is not copied twice.

Usage: ``python tests/contract/promote.py [--found DIR] [--status open|fixed] [--dry-run]``.
Prints one line per case and returns 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


def default_found() -> Path:
    """The fuzzer's found-cases folder (the same rule as ``test_fuzzer.FOUND``)."""
    env = os.environ.get("NONOLAB_FUZZ_FOUND")
    return Path(env) if env else Path(tempfile.gettempdir()) / "nonolab-fuzz-found"


def _key(record: dict) -> str:
    return json.dumps([record["base"], record["case"]], sort_keys=True)


def promote(
    found: Path, dest: Path = REGRESSIONS, status: str = "open", dry_run: bool = False
) -> list[tuple[Path, str]]:
    """Move every ``*.json`` case of ``found`` into ``dest`` with ``status``; return
    ``[(case file, what happened)]`` ("promoted", "already a regression case", "not a case")."""
    known = {_key(json.loads(p.read_text(encoding="utf-8"))) for p in dest.glob("*.json")}
    out = []
    for path in sorted(found.glob("*.json")) if found.is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            key = _key(record)
        except (ValueError, KeyError, TypeError):
            out.append((path, "not a case"))
            continue
        if key in known:
            out.append((path, "already a regression case"))
        else:
            record["status"] = status
            if not dry_run:
                text = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
                (dest / path.name).write_text(text, encoding="utf-8")
            known.add(key)
            out.append((path, "promoted"))
        if not dry_run:
            path.unlink()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--found", type=Path, default=default_found())
    ap.add_argument("--status", choices=("open", "fixed"), default="open")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    done = promote(args.found, status=args.status, dry_run=args.dry_run)
    if not done:
        print(f"no found cases in {args.found}")
    for path, what in done:
        print(f"{path.name}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
