"""Where the workflow files are: the Snakefile, ``workflow/``, ``scripts/``, ``config/``.

In a checkout (or an editable install) they are the repository's own top-level folders. A
regular install carries a copy of them inside the package, as ``nonolab/_workflow/`` (made by
the ``build_py`` step of ``setup.py``), with the same layout, so that the Snakefile's relative
paths (``workflow/rules/...``, ``../../scripts/x.py``, ``config/config.yaml``) hold in both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

#: the package folder (``.../nonolab``)
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: name of the packaged copy of the workflow inside the package
PACKAGED_NAME = "_workflow"


def _is_workflow_root(path: Path) -> bool:
    return (path / "Snakefile").is_file() and (path / "workflow" / "rules").is_dir()


def checkout_root() -> Path | None:
    """Return the repository root when this package is imported from a checkout's ``src/``
    (a source tree or an editable install), else None."""
    root = PACKAGE_DIR.parents[1]
    if (root / "src" / "nonolab").resolve() == PACKAGE_DIR and _is_workflow_root(root):
        return root
    return None


@cache
def workflow_root() -> Path:
    """Return the folder holding ``Snakefile``, ``workflow/``, ``scripts/``, ``config/``,
    ``envs/`` and ``data/example-study``: the checkout root when running from a checkout,
    else the copy installed with the package (``nonolab/_workflow``).

    Raises FileNotFoundError when neither is there (a package built without its workflow)."""
    root = checkout_root()
    if root is not None:
        return root
    packaged = PACKAGE_DIR / PACKAGED_NAME
    if _is_workflow_root(packaged):
        return packaged
    raise FileNotFoundError(
        f"no workflow files found: {PACKAGE_DIR} is neither inside a nonolab checkout nor an "
        f"installed package with {PACKAGED_NAME}/ (reinstall nonolab with pip)"
    )
