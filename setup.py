"""Build hook: copy the workflow into the built package as ``nonolab/_workflow``.

The repository keeps the Snakemake workflow at its top level (``Snakefile``, ``workflow/``,
``scripts/``, ``config/``, ``envs/``, ``data/example-study/``); a regular install (wheel) carries
a copy of them inside the package, found at run time by :func:`nonolab.core.paths.workflow_root`.
Editable installs skip the copy: they run the checkout's own files. Everything else about the
package is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: top-level files and folders copied into nonolab/_workflow (same relative layout)
WORKFLOW_FILES = ("Snakefile",)
WORKFLOW_DIRS = (
    "workflow",
    "scripts",
    "config",
    "envs",
    "data/example-study",
)
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".snakemake")


class BuildPyWithWorkflow(build_py):
    """``build_py`` that also copies the workflow files into ``<build_lib>/nonolab/_workflow``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "nonolab" / "_workflow"
        if dest.exists():
            shutil.rmtree(dest)  # no stale files from an earlier build
        dest.mkdir(parents=True)
        for name in WORKFLOW_FILES:
            shutil.copy2(HERE / name, dest / name)
        for name in WORKFLOW_DIRS:
            shutil.copytree(HERE / name, dest / name, ignore=IGNORE)


setup(cmdclass={"build_py": BuildPyWithWorkflow})
