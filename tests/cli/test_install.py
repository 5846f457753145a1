"""A regular (not editable) install runs the workflow from outside the checkout.

The checkout's files are copied to a scratch folder and installed with pip into a folder of
their own (``--target``, no dependencies, no build isolation and no index: the running
interpreter's setuptools builds it offline, and its own dependencies serve). Then, from a
folder outside the checkout, with only that folder on PYTHONPATH, ``python -m nonolab run``
plans the whole workflow on the example study (``-- -n``) and runs its ingest stage, using the
workflow copy inside the installed package (``nonolab/_workflow``).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "data" / "example-study"
#: left out of the copy that is installed (build products, caches, local results)
SKIP = (
    ".git",
    ".venv",
    "results",
    ".snakemake",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
)

pytestmark = pytest.mark.slow


def _setuptools_major() -> int:
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return 0


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Return (site folder with nonolab installed, environment that imports only it)."""
    if _setuptools_major() < 77:
        msg = "building nonolab offline needs setuptools>=77 in this environment (make install)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(*SKIP))
    site = tmp / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(src),
        ],
        check=True,
        cwd=tmp,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SNAKEMAKE"))}
    env["PYTHONPATH"] = str(site)
    return site, env


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )


def test_installed_package_uses_its_own_workflow_copy(installed, tmp_path):
    site, env = installed
    res = _run(
        [
            "-c",
            "import nonolab, nonolab.core.paths as p, nonolab.study.presets as s; "
            "print(nonolab.__file__); print(p.workflow_root()); print(s.PRESET_DIR)",
        ],
        env,
        tmp_path,
    )
    assert res.returncode == 0, res.stderr
    module_file, root, presets = (Path(x) for x in res.stdout.split())
    assert module_file.is_relative_to(site)
    assert root == site / "nonolab" / "_workflow"
    assert (root / "Snakefile").is_file()
    assert (root / "scripts" / "ingest.py").is_file()
    assert presets == root / "config" / "studies"
    assert (presets / "he2026.yaml").is_file()
    # the cluster profile's commands keep their executable bit
    assert os.access(root / "workflow" / "profiles" / "local-cluster" / "submit.sh", os.X_OK)


def test_installed_nonolab_run_plans_and_runs_the_workflow(installed, tmp_path):
    _, env = installed
    out = tmp_path / "run"
    base = ["-m", "nonolab", "run", "--study", str(EXAMPLE), "--directory", str(out)]
    plan = _run([*base, "--cores", "1", "--", "-n"], env, tmp_path)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    text = plan.stdout + plan.stderr
    for rule in ("ingest", "features", "ranking", "all"):
        assert rule in text, f"dry run plans no {rule!r} job:\n{text}"

    done = _run([*base, "--cores", "1", "results/ingest/summary.json"], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "results" / "ingest" / "summary.json").is_file()
    assert (out / "results" / "ingest" / "attempts.csv").is_file()


def test_sdist_carries_the_workflow(installed, tmp_path):
    """The source distribution holds the top-level files the wheel's copy is made from."""
    src = installed[0].parent / "src"
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=src,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    with tarfile.open(tmp_path / res.stdout.split()[-1]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for path in (
        "setup.py",
        "Snakefile",
        "workflow/rules/common.smk",
        "workflow/schemas/config.schema.yaml",
        "workflow/report/workflow.rst",
        "workflow/profiles/local-cluster/submit.sh",
        "scripts/ingest.py",
        "config/config.yaml",
        "config/studies/he2026.yaml",
        "envs/nonolab.yaml",
        "data/example-study/nonograms_6.json",
    ):
        assert path in names, f"sdist lacks {path}"


def test_a_new_lab_runs_its_own_study_from_an_install(installed, tmp_path):
    """The new-lab scenario, as README.md and docs/presets.md tell it, from the installed
    package: a lab's own study (8 participants, 4 simulated 8x8 puzzles, 4 a session, its own
    puzzle file name) is refused without a preset with a message that says what to write, then runs with
    its preset (`extends: default`), and `nonolab report` builds the report naming that study.
    No step shows a Python or Snakemake traceback."""
    _, env = installed
    env = {**env, "NO_COLOR": "1"}
    lab = tmp_path / "our lab"
    lab.mkdir()
    steps = []

    def nonolab(*args: str) -> subprocess.CompletedProcess:
        res = _run(["-m", "nonolab", *args], env, lab)
        steps.append(res)
        return res

    made = nonolab(
        "simulate",
        "study",
        "--participants",
        "8",
        "--puzzles",
        "4",
        "--per-session",
        "4",
        "--size",
        "8x8",
        "--seed",
        "26",
    )
    assert made.returncode == 0, made.stderr
    (lab / "study" / "nonograms_6.json").rename(lab / "study" / "our_puzzles.json")

    refused = nonolab("run", "--study", "study", "--results", "results-ours")
    assert refused.returncode == 2
    assert "`puzzle_file`" in refused.stderr and "our_puzzles.json" in refused.stderr
    assert "docs/presets.md" in refused.stderr

    (lab / "ours.yaml").write_text(
        "extends: default\nname: our-lab\ndescription: Our lab's 8x8 study.\n"
        "puzzle_file: our_puzzles.json\npuzzles_per_session: 4\n",
        encoding="utf-8",
    )
    ran = nonolab("run", "--study", "study", "--preset", "ours.yaml", "--results", "results-ours")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    out = lab / "results-ours" / "results"
    assert f"report:  {out / 'report.html'}" in ran.stdout
    assert len(ran.stdout.splitlines()) < 120  # a line per job, not Snakemake's log

    report = nonolab("report", "--results", "results-ours")
    assert report.returncode == 0, report.stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "our-lab" in page or str(lab / "study") in page
    # nothing of the public study's design or published analysis (the recovery simulation's
    # own design, config simulate.recovery, may name its puzzle count)
    for phrase in (
        "67 participants",
        "6 puzzles, 67",
        "published_semantics",
        "published analysis's intervals",
    ):
        assert phrase not in page, phrase

    for res in steps:
        text = res.stdout + res.stderr
        assert "Traceback" not in text and "MissingInputException" not in text, text[-3000:]
