# nonolab: two commands on a fresh machine with Python 3.11 and pip:
#   make reproduce   (whole workflow on the configured study; STUDY=path for another study)
#   make test        (lint + tests)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
STUDY ?=
SNAKE_ARGS ?=
STUDY_CONFIG := $(if $(STUDY),--config study_dir=$(abspath $(STUDY)),)

.PHONY: install reproduce figures report test lint format bench clean help

help:
	@echo "make reproduce [STUDY=path]  run the workflow, write results/"
	@echo "make figures                 redraw figures from existing tables"
	@echo "make report                  build results/report.html"
	@echo "make test                    ruff, snakefmt --check, snakemake --lint, pytest"
	@echo "make bench                   run the benchmarks under benchmarks/"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

reproduce: install
	$(BIN)/snakemake --cores $(CORES) $(STUDY_CONFIG) $(SNAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) $(STUDY_CONFIG) --report results/report.html

figures: install
	$(BIN)/snakemake --cores $(CORES) $(STUDY_CONFIG) figures

report: install
	$(BIN)/snakemake --cores $(CORES) $(STUDY_CONFIG) --report results/report.html

lint: install
	$(BIN)/ruff check src scripts tests benchmarks
	$(BIN)/ruff format --check src scripts tests benchmarks
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

format: install
	$(BIN)/ruff check --fix src scripts tests benchmarks
	$(BIN)/ruff format src scripts tests benchmarks
	$(BIN)/snakefmt Snakefile workflow/rules

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python benchmarks/solve_bench.py

clean:
	rm -rf results .snakemake
