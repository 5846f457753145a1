# nonolab: reproduce the Nonogram difficulty study from raw logs to report.
# Table of contents only: every stage lives in workflow/rules/<stage>.smk, every computation in
# src/nonolab/.
import os

from snakemake.utils import min_version

min_version("8.20")


# The config lives beside this Snakefile, whatever --directory says.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/features.smk"
include: "workflow/rules/sat.smk"
include: "workflow/rules/linesolve.smk"
include: "workflow/rules/pool.smk"
include: "workflow/rules/pauses.smk"
include: "workflow/rules/ranking.smk"
include: "workflow/rules/themes.smk"
include: "workflow/rules/errata.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/simulate.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
        FIGURES,


rule figures:
    input:
        FIGURES,
