# Stage: linesolve. Human-like line-solving metrics of the study's puzzles: complete line solver
# propagated to a fixpoint, then probing (nonolab.sat.linesolver).


rule line_metrics:
    input:
        puzzles="results/ingest/puzzles.parquet",
    output:
        metrics=report(
            "results/sat/line_metrics.csv",
            caption="../report/line_metrics.rst",
            category="SAT metrics",
        ),
    log:
        "results/logs/sat/line_metrics.log",
    benchmark:
        "results/bench/rules/line_metrics.tsv"
    conda:
        "../../envs/nonolab.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    params:
        max_probe_depth=config["linesolve"]["max_probe_depth"],
        probe_time_limit_s=config["linesolve"]["probe_time_limit_s"],
    script:
        "../../scripts/line_metrics.py"


ALL_TARGETS.extend(["results/sat/line_metrics.csv"])
