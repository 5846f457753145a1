# nonolab: reproduce the Nonogram difficulty study from raw logs to report.
# Table of contents only: every stage lives in workflow/rules/<stage>.smk, every computation in
# src/nonolab/.
from snakemake.utils import min_version

min_version("8.20")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/features.smk"


rule all:
    default_target: True
    input:
        ALL_TARGETS,
