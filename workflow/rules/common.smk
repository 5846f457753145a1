# Shared helpers: config validation, study/preset resolution, the list of final targets.
from pathlib import Path

from snakemake.utils import validate

validate(config, schema="../schemas/config.schema.yaml")

REPO = Path(workflow.basedir)


def repo_path(p):
    """Absolute path for a config path: relative paths are relative to the repository root."""
    p = Path(p)
    return str(p if p.is_absolute() else (REPO / p).resolve())


STUDY = repo_path(config["study_dir"])
ENV = str(REPO / "envs" / "nonolab.yaml")

# Final outputs; each stage's rules file appends its own.
ALL_TARGETS = []
# Figure outputs; each stage's rules file appends its own (`make figures` redraws only these).
FIGURES = []
