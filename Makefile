# nonolab: two commands on a fresh machine with Python 3.11 and pip:
#   make reproduce   (whole workflow on the configured study; STUDY=path for another study,
#                     PRESET=name|file for its preset, RESULTS=dir to keep its results apart:
#                     one results folder per study, which remembers its study and preset)
#   make test        (lint + tests)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STUDY ?=
PRESET ?=
SNAKE_ARGS ?=
RESULTS ?=
# STUDY, PRESET and RESULTS reach the recipes through the environment, quoted there, so that
# paths with spaces or shell metacharacters work: `make reproduce STUDY="/data/my study"
# RESULTS="out (1)"`. `nonolab run` checks the study and preset before Snakemake starts and turns
# them into Snakemake arguments (--config study_dir=... preset=..., --directory ...); the results
# folder remembers them (results/ingest/study.json), so `make figures` and `make report` need
# only RESULTS=. RESULTS=dir: results/ (and .snakemake/) go under dir instead of this checkout.
# PRESET: a name under config/studies/ or a file. ($(value ...): a `$` in a path stays a `$`.)
export NONOLAB_STUDY := $(value STUDY)
export NONOLAB_PRESET := $(value PRESET)
export NONOLAB_RESULTS := $(value RESULTS)
RUN := $(BIN)/python -m nonolab run --cores $(CORES) $${NONOLAB_STUDY:+--study "$$NONOLAB_STUDY"} \
	$${NONOLAB_PRESET:+--preset "$$NONOLAB_PRESET"} --directory "$${NONOLAB_RESULTS:-.}"
# Figure rules are named fig_*: `make figures` reruns only them (tables are reused as they are).
FIGURE_RULES := $(shell grep -ho '^rule fig_[a-z0-9_]*' workflow/rules/*.smk | cut -d' ' -f2)

.PHONY: install reproduce figures report docs docs-figure test test-fast fuzz fuzz-promote lint format bench bench-scale bench-recovery bench-pipeline clean help

help:
	@echo "make reproduce [STUDY=path] [PRESET=name|file] [RESULTS=dir]"
	@echo "                             run the workflow and build the report in [dir/]results/"
	@echo "make figures                 redraw figures from existing tables"
	@echo "make report [RESULTS=dir]    build [dir/]results/report.html (the study report)"
	@echo "make docs                    the Python API reference (pdoc) in build/docs/"
	@echo "make docs-figure             redraw the README's figure (example study) in docs/figures/"
	@echo "make test                    ruff, snakefmt --check, snakemake --lint, lint-imports, pytest"
	@echo "                             (deterministic: hypothesis draws from a fixed seed)"
	@echo "make fuzz [FUZZ_MINUTES=10]  random exploration of the contract fuzzer (niced, bounded)"
	@echo "make fuzz-promote            move the cases it found into tests/contract/regressions/"
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
# `nonolab run` of the whole workflow ends by building the report.
reproduce: install
	$(RUN) -- $(SNAKE_ARGS)

figures: install
	$(RUN) figures -- --forcerun $(FIGURE_RULES)

# The study report of the results folder (`nonolab report`; `nonolab run` builds it too).
report: install
	$(BIN)/python -m nonolab report --results "$${NONOLAB_RESULTS:-.}"

# Lint writes nothing into the checkout: no tool caches, Snakemake's .snakemake/ in a temp folder.
lint: install
	$(BIN)/ruff check --no-cache src scripts tests benchmarks setup.py
	$(BIN)/ruff format --no-cache --check src scripts tests benchmarks setup.py
	$(BIN)/snakefmt --check Snakefile workflow/rules
	d=$$(mktemp -d) && $(BIN)/snakemake --lint --directory "$$d" && rm -rf "$$d"
	$(BIN)/lint-imports --no-cache

format: install
	$(BIN)/ruff check --fix src scripts tests benchmarks setup.py
	$(BIN)/ruff format src scripts tests benchmarks setup.py
	$(BIN)/snakefmt Snakefile workflow/rules

# The API reference of `import nonolab` and its library modules (pdoc, from the docstrings).
DOC_MODULES := nonolab nonolab.api nonolab.sat nonolab.measure nonolab.study nonolab.stats \
	nonolab.sim nonolab.core
docs: install
	$(BIN)/pdoc --docformat restructuredtext --output-directory build/docs $(DOC_MODULES)

# The README's figure: the example study's pause figure, drawn by the workflow, kept under docs/
# so that it shows in a fresh clone.
docs-figure: install
	$(BIN)/nonolab run --study data/example-study --results build/example --cores $(CORES) \
		--no-report results/figures/pause_gaps.png
	cp build/example/results/figures/pause_gaps.png docs/figures/example-pause-gaps.png

# Slow tests (marked `slow`) run only with NONOLAB_SLOW=1 (as in CI) or PYTEST_ARGS='-m slow'.
# Deterministic (hypothesis draws from a fixed seed, no example database) and nothing is written
# into the source tree (tests/conftest.py checks it). TEST_WORKERS pytest-xdist processes (one per
# core), each taking whole test files (--dist loadfile: a file's fixtures are built once);
# TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= $(CORES)
test: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -p no:cacheprovider $(PYTEST_ARGS)

# Random exploration of the contract fuzzer: new examples every run, FUZZ_MINUTES of them at
# most (niced). A case that breaks the contract is saved in the found-cases folder
# ($$NONOLAB_FUZZ_FOUND, by default $$TMPDIR/nonolab-fuzz-found), not in the source tree;
# `make fuzz-promote` moves the found cases into tests/contract/regressions/ (status open).
FUZZ_MINUTES ?= 10
fuzz: install
	NONOLAB_EXPLORE=1 NONOLAB_FUZZ_LOG_EXAMPLES=$${NONOLAB_FUZZ_LOG_EXAMPLES:-3000} \
	NONOLAB_FUZZ_GLOBAL_EXAMPLES=$${NONOLAB_FUZZ_GLOBAL_EXAMPLES:-5000} \
	NONOLAB_FUZZ_SECONDS=$$(( $(FUZZ_MINUTES) * 60 )) \
	nice -n 10 $(BIN)/python -m pytest tests/contract/test_fuzzer.py -p no:cacheprovider -x $(PYTEST_ARGS)

fuzz-promote:
	$(BIN)/python tests/contract/promote.py

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
	$(BIN)/python benchmarks/pipeline_bench.py --cores $(CORES) $${NONOLAB_STUDY:+--study "$$NONOLAB_STUDY"}

clean:
	rm -rf results .snakemake
