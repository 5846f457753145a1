"""Every image README.md shows is a file committed in the repository (so it shows in a fresh
clone), never a path under results/ that only a run creates."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_readme_images_are_committed_files():
    images = IMAGE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert images, "README.md shows no figure"
    tracked = set(
        subprocess.run(
            ["git", "ls-files", *images], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.split()
    )
    for image in images:
        assert not image.startswith(("results/", "http")), image
        path = ROOT / image
        assert path.is_file() and path.stat().st_size > 1000, image
        if (ROOT / ".git").exists():
            assert image in tracked, f"{image} is not committed"
