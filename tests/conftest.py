"""Shared fixtures. ``study_dir``: the public study data in ../shared (fails under CI=true when
missing, skips with a visible reason otherwise).

Hypothesis: every run of the test suite (``make test``, CI, a plain ``pytest``) draws the same
examples (profile ``deterministic``: ``derandomize``, no example database, so nothing is
written into the source tree), so a result can be reproduced. Random exploration is asked for
on purpose: ``NONOLAB_EXPLORE=1`` (``make fuzz``) loads the profile ``explore``, which draws new
examples each run and keeps its database in the temporary folder. An example found that way is
made a fixed ``@example`` of its test (or, for the contract fuzzer, a promoted regression
case: ``make fuzz-promote``).

The checkout stays as it was cloned: the caches a test run makes (Python bytecode, numba's
compiled kernels, hypothesis's own files) go to a temporary folder, and the session fails when a
test left a new file in the tree or changed a tracked one (the tree is compared before and after
the run; ``.git`` and virtual environments are not looked at)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase

REPO = Path(__file__).resolve().parents[1]
# Caches go outside the checkout, for this process and every child (workers, Snakemake jobs).
CACHES = Path(tempfile.gettempdir()) / f"nonolab-test-caches-{os.getuid()}"
os.environ.setdefault("PYTHONPYCACHEPREFIX", str(CACHES / "pycache"))
sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
os.environ.setdefault("NUMBA_CACHE_DIR", str(CACHES / "numba"))
set_hypothesis_home_dir(CACHES / "hypothesis")
SHARED = Path(os.environ.get("NONOLAB_SHARED", REPO.parent / "shared")).resolve()
STUDY_DIR = SHARED / "study-data"
BENCH_DIR = SHARED / "benchmarks"


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


settings.register_profile("deterministic", derandomize=True, database=None, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("deterministic"))
settings.register_profile(
    "explore",
    derandomize=False,
    print_blob=True,
    database=DirectoryBasedExampleDatabase(
        Path(tempfile.gettempdir()) / "nonolab-hypothesis-explore"
    ),
)
settings.load_profile("explore" if _truthy("NONOLAB_EXPLORE") else "deterministic")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run only when asked for: ``-m slow`` (or any marker expression
    naming ``slow``) or ``NONOLAB_SLOW=1`` (their files then run first); otherwise they are
    skipped with that reason."""
    if "slow" in (config.getoption("markexpr") or "") or _truthy("NONOLAB_SLOW"):
        # files with slow tests first: each test worker takes whole files in this order, so the
        # longest runs start early and short files fill the end instead of one worker idling
        slow_files = {item.path for item in items if "slow" in item.keywords}
        items.sort(key=lambda item: item.path not in slow_files)
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow or NONOLAB_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def _tree() -> tuple[frozenset[str], str]:
    """Return (every file and folder under the checkout, relative; ``.git`` and virtual
    environments left out) and ``git status`` of the tracked files ("" outside a git checkout)."""
    seen: set[str] = set()
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d != ".git" and not (Path(root, d, "pyvenv.cfg")).exists()]
        rel = Path(root).relative_to(REPO)
        seen.update(str(rel / n) for n in (*dirs, *files))
    try:
        git = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        git = ""
    return frozenset(seen), git


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the checkout's files before the first test (in the controlling process only)."""
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_TREE] = _tree()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a test left a new file in the checkout or changed a tracked one,
    naming them."""
    before = session.config.stash.get(_TREE, None)
    if before is None:
        return
    files, git = _tree()
    new = sorted(files - before[0])
    changed = sorted(set(git.splitlines()) - set(before[1].splitlines()))
    if not new and not changed:
        return
    msg = "the test run wrote into the checkout: " + ", ".join((new + changed)[:20])
    if len(new) + len(changed) > 20:
        msg += f" and {len(new) + len(changed) - 20} more"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(msg, red=True)
    else:
        print(msg, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


_TREE = pytest.StashKey[tuple[frozenset[str], str]]()


def _require(path: Path, what: str) -> Path:
    if path.exists():
        return path
    msg = f"{what} not found at {path} (set NONOLAB_SHARED to the shared/ folder)"
    if _truthy("CI"):
        pytest.fail(msg + "; under CI=true this is a failure, not a skip")
    pytest.skip(msg)


@pytest.fixture(scope="session")
def study_dir() -> Path:
    """The public study data folder (../shared/study-data)."""
    return _require(STUDY_DIR, "study data")


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """The public Nonogram benchmark folder (../shared/benchmarks)."""
    return _require(BENCH_DIR, "benchmark puzzles")


@pytest.fixture(scope="session")
def benchmark_script():
    """Return a loader: ``load(name)`` imports ``benchmarks/<name>.py`` (the scripts are not a
    package) and returns the module, once per session."""
    loaded: dict[str, ModuleType] = {}

    def load(name: str) -> ModuleType:
        if name not in loaded:
            path = REPO / "benchmarks" / f"{name}.py"
            spec = importlib.util.spec_from_file_location(name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            loaded[name] = mod
        return loaded[name]

    return load
