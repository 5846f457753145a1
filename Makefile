# nonolab: two commands on a fresh machine with Python 3.11 and pip:
#   make reproduce   (whole workflow on the configured study; STUDY=path for another study,
#                     RESULTS=dir to keep its results apart: one results folder per study)
#   make test        (lint + tests)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STUDY ?=
SNAKE_ARGS ?=
RESULTS ?=
STUDY_CONFIG := $(if $(STUDY),--config study_dir=$(abspath $(STUDY)),)
# RESULTS=dir: results/ (and .snakemake/) go under dir instead of this checkout.
DIR_ARGS := $(if $(RESULTS),--snakefile $(CURDIR)/Snakefile --directory $(abspath $(RESULTS)),)
RESULTS_ROOT := $(abspath $(or $(RESULTS),.))
REPORT := $(RESULTS_ROOT)/results/report.html
# Figure rules are named fig_*: `make figures` reruns only them (tables are reused as they are).
FIGURE_RULES := $(shell grep -ho '^rule fig_[a-z0-9_]*' workflow/rules/*.smk | cut -d' ' -f2)

.PHONY: install reproduce figures report test test-fast lint format bench bench-scale bench-recovery bench-pipeline clean help

help:
	@echo "make reproduce [STUDY=path] [RESULTS=dir]  run the workflow, write [dir/]results/"
	@echo "make figures                 redraw figures from existing tables"
	@echo "make report [RESULTS=dir]    build [dir/]results/report.html (the study report)"
	@echo "make test                    ruff, snakefmt --check, snakemake --lint, lint-imports, pytest"
	@echo "make bench                   solve benchmark (needs the bench extra: OR-Tools)"
	@echo "make bench-scale             ingest/features/models at 1,000 and 10,000 participants"
	@echo "make bench-recovery          parameter recovery on simulated studies"
	@echo "make bench-pipeline [STUDY=path]  workflow wall time, targets paper and all, per rule"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

# dev = every extra (pipeline, plot, fast) and the test tools (pytest, hypothesis, ruff, snakefmt,
# import-linter, setuptools for the install test)
$(VENV)/.installed: pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

# Targets and options come before --config, which takes every word after it.
reproduce: install
	$(BIN)/snakemake $(DIR_ARGS) $(SNAKE_ARGS) --cores $(CORES) $(STUDY_CONFIG)
	$(BIN)/nonolab report --results "$(RESULTS_ROOT)" --out "$(REPORT)"

figures: install
	$(BIN)/snakemake $(DIR_ARGS) figures --forcerun $(FIGURE_RULES) --cores $(CORES) $(STUDY_CONFIG)

# The study report (nonolab report): one self-contained HTML page from the results as they are.
report: install
	$(BIN)/nonolab report --results "$(RESULTS_ROOT)" --out "$(REPORT)"

lint: install
	$(BIN)/ruff check src scripts tests benchmarks setup.py
	$(BIN)/ruff format --check src scripts tests benchmarks setup.py
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix src scripts tests benchmarks setup.py
	$(BIN)/ruff format src scripts tests benchmarks setup.py
	$(BIN)/snakefmt Snakefile workflow/rules

# Slow tests (marked `slow`) run only with NONOLAB_SLOW=1 (as in CI) or PYTEST_ARGS='-m slow'.
test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m pip install -e '.[bench]'
	$(BIN)/python benchmarks/solve_bench.py

bench-scale: install
	$(BIN)/python benchmarks/scale_bench.py

bench-recovery: install
	$(BIN)/python benchmarks/recovery_bench.py

# From a clean results folder in a temporary directory; default study: ../shared/study-data if
# present, else data/example-study. Writes results/bench/pipeline.json.
bench-pipeline: install
	$(BIN)/python benchmarks/pipeline_bench.py --cores $(CORES) $(if $(STUDY),--study $(abspath $(STUDY)),)

clean:
	rm -rf results .snakemake
