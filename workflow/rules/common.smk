# Shared helpers: config validation, study/preset resolution, the list of final targets.
from pathlib import Path

from snakemake.utils import validate

from nonolab.study.config import coerce_config

# `--config key={...}` gives nested values as strings ("2"): read them as the schema's types.
coerce_config(config)
validate(config, schema="../schemas/config.schema.yaml")

# The contract, stricter than `validate`: exact integers (1.0 and true are not), every value
# within its bounds, and no config file naming a key twice. Fails the dry run, not a job.
from nonolab.study.config import check_config, check_config_file

for _configfile in workflow.configfiles:
    check_config_file(_configfile)
check_config(config)

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

# Study preset (config/studies/*.yaml; `preset: auto` matches the study's puzzle-file sha256).
from nonolab.study.presets import log_sources, resolve_preset, study_file

if not Path(STUDY).is_dir():
    raise ValueError(
        f"study folder {STUDY} does not exist (config study_dir={config['study_dir']!r})"
    )
_PRESET = resolve_preset(STUDY, config["preset"])
PRESET = _PRESET.data
PRESET_NAME = _PRESET.name
PRESET_FILE = str(_PRESET.path)

# Simulation extras part of `all` (config `extras`, else the preset's; default none). Each
# is a target of its own too (`power`, `pool`, `recovery`, `extras` for all three).
EXTRAS = config.get("extras")
if EXTRAS is None:
    EXTRAS = PRESET.get("extras", [])
EXTRAS = list(EXTRAS)

# The study the results folder already holds (results/ingest/study.json): another study stops
# the run here instead of mixing two studies' tables; the report's home page names this one.
from nonolab.study.identity import check_results_study

RESULTS_STUDY = check_results_study("results", STUDY, _PRESET) or {}
# The captions' facts of the study (numbers of puzzles, participants, puzzles per session, drag
# events, published analysis: nonolab.report.captions.study_facts), computed from the results.
from nonolab.report.captions import study_facts

config["results_study"] = RESULTS_STUDY | study_facts("results")
config["results_study"]["published"] = bool(_PRESET.data.get("published"))


def study_path(key, default=None):
    """Absolute path of a preset file entry; `key` may be dotted (e.g. `themes.coded_responses`).

    Returns `default` when the preset has no such entry. The path must lie inside the study
    folder (nonolab.study.presets.study_file: no absolute path, no `..`, no link outside it).
    """
    node = PRESET
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return str(study_file(STUDY, _PRESET, key))


# Coded themes are optional: without the preset's coded-responses file (or with no
# `themes.coded_responses` entry) the themes tables and figures are not targets.
CODED_RESPONSES = study_path("themes.coded_responses")
HAS_THEMES = CODED_RESPONSES is not None and Path(CODED_RESPONSES).is_file()
CODEBOOK_FILE = study_path("themes.codebook")


def study_logs():
    """Every log file the ingest reads (nonolab.study.presets.log_sources: the same function
    the ingest uses), sorted; a dry run after adding or renaming a log plans the ingest.
    """
    return sorted(str(s.path) for s in log_sources(STUDY, _PRESET) if s.read)


def keep_initial_rating_sentinel():
    """features.keep_initial_rating_sentinel from the config, else from the preset (bool)."""
    value = config.get("features", {}).get("keep_initial_rating_sentinel")
    if value is None:
        value = PRESET.get("features", {}).get("keep_initial_rating_sentinel", False)
    return bool(value)


# The preset's published statistics table in pool order (he2026), which defines the `published`
# alignment of Table 1 and the models (METHODS 2); None for studies without one.
PUBLISHED_POOL_STATISTICS = study_path("published.selected_six_stats")
# Captions name the published alignment only for studies that have one.
config["published_alignment"] = PUBLISHED_POOL_STATISTICS is not None
