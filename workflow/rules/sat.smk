# Stage: sat. SAT solver statistics (python-sat accum_stats) of the study's puzzles for every
# configured solver x encoding, uniqueness of every puzzle, and (when the study preset names the
# published solver_statistics.txt) a check against the published values. Library:
# nonolab.sat.solvers, nonolab.sat.encodings, nonolab.sat.formats; tables: nonolab.measure.tables.


# The puzzle source measured: the ingested puzzle table, or the preset's puzzle file.
SAT_PUZZLES = (
    "results/ingest/puzzles.parquet"
    if config["sat"]["puzzles"] == "ingest"
    else study_path("puzzle_file")
)
SAT_PUBLISHED = study_path("published.solver_statistics")


rule sat_metrics:
    input:
        puzzles=SAT_PUZZLES,
    output:
        metrics=report(
            "results/sat/metrics.csv",
            caption="../report/sat_metrics.rst",
            category="SAT metrics",
        ),
        timings="results/sat/timings.csv",
        uniqueness=report(
            "results/sat/uniqueness.csv",
            caption="../report/sat_uniqueness.rst",
            category="SAT metrics",
        ),
    log:
        "results/logs/sat/metrics.log",
    benchmark:
        "results/bench/rules/sat_metrics.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        solvers=config["sat"]["solvers"],
        encodings=config["sat"]["encodings"],
        uniqueness_solver=config["sat"]["uniqueness_solver"],
        conf_budget=config["sat"]["conf_budget"],
    script:
        "../../scripts/sat_metrics.py"


ALL_TARGETS.extend(["results/sat/metrics.csv", "results/sat/uniqueness.csv"])

if SAT_PUBLISHED:

    rule sat_published_check:
        input:
            metrics="results/sat/metrics.csv",
            published=SAT_PUBLISHED,
        output:
            check=report(
                "results/sat/published_check.csv",
                caption="../report/sat_published_check.rst",
                category="SAT metrics",
            ),
        log:
            "results/logs/sat/published_check.log",
        benchmark:
            "results/bench/rules/sat_published_check.tsv"
        conda:
            "../../envs/nonolab.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=5,
        params:
            encoding="block_start",
        script:
            "../../scripts/sat_published_check.py"

    ALL_TARGETS.append("results/sat/published_check.csv")
