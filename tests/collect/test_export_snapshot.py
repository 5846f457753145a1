"""Exports are snapshots that never destroy: an export taken while participants finish puts
every session finished in its snapshot under backend/logs/ with all its lines and none under
incomplete/; an export never deletes or overwrites a file it did not write."""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import Scripted, join, post_answers, rating

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.export import (  # noqa: E402
    INCOMPLETE_DIR,
    LOG_DIR,
    MARKER,
    ForeignFiles,
    export_study,
    write_study_folder,
)
from nonolab.collect.store import Store  # noqa: E402


def _at_post(client, plan) -> Scripted:
    """A participant who skipped and rated every puzzle: the post-survey is what is left."""
    p = Scripted(client, join(client))
    p.setup()
    for k in range(1, plan.per_session + 1):
        p.send({"kind": "skip"}, rating(k, -1))
    return p


def _check_export(folder: Path) -> tuple[int, int]:
    rec = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    done = sorted((folder / LOG_DIR).glob("*.ndjson"))
    left = (
        sorted((folder / INCOMPLETE_DIR).glob("*.ndjson"))
        if (folder / INCOMPLETE_DIR).is_dir()
        else []
    )
    for f in done:
        assert '"session_end"' in f.read_text(encoding="utf-8").splitlines()[-1], f
    for f in left:
        assert '"session_end"' not in f.read_text(encoding="utf-8"), (
            f"finished under incomplete/: {f}"
        )
    assert (rec["finished"], rec["incomplete"]) == (len(done), len(left))
    return len(done), len(left)


@pytest.mark.parametrize("seed", [0, 1])
def test_an_export_while_participants_finish_is_one_snapshot(tmp_path, plan, db_url, seed):
    store = Store(db_url)
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        n = 16
        people = [_at_post(client, plan) for _ in range(n)]
        rng = random.Random(seed)
        rng.shuffle(people)
        batches = [p.events({"kind": "survey", "survey_type": "post",
                             "answers": post_answers(plan.per_session)}) for p in people]  # fmt: skip
        stop = threading.Event()

        def finish() -> None:
            for p, batch in zip(people, batches, strict=True):
                out = store.submit(plan, p.token, batch)
                assert out["step"] == "done"
            stop.set()

        t = threading.Thread(target=finish)
        t.start()
        seen, k = [], 0
        while not stop.is_set() or k == 0:
            folder = tmp_path / f"snap{k}"
            folder.mkdir()
            write_study_folder(store, plan, folder)
            done, left = _check_export(folder)
            assert done + left == n
            seen.append(done)
            k += 1
        t.join()
        assert seen == sorted(seen)  # snapshots never go back in time
        folder = tmp_path / "final"
        folder.mkdir()
        write_study_folder(store, plan, folder)
        assert _check_export(folder) == (n, 0)
    finally:
        store.close()


def _tree(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(folder).as_posix()
            if full.is_symlink():
                out[rel] = "link:" + os.readlink(full)
            elif full.is_file():
                out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


_NAME = st.text(alphabet="abcxyzP0123456789_-.", min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)
_DIRS = st.sampled_from(["", "backend", "backend/logs", "incomplete", "notes", "backend/logs/x"])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["new file", "changed file", "empty folder", "link", "legacy new file"]),
    where=_DIRS,
    name=_NAME,
    data=st.data(),
)
def test_an_export_never_deletes_or_overwrites_what_it_did_not_write(
    tmp_path_factory, plan, kind, where, name, data
):
    tmp = tmp_path_factory.mktemp("foreign")
    store = Store(str(tmp / "s.sqlite"))
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        _at_post(client, plan)
        dest = tmp / "export"
        export_study(store, plan, dest)
        if kind == "legacy new file":  # an export.json of an earlier version: no file list
            rec = json.loads((dest / MARKER).read_text(encoding="utf-8"))
            del rec["files"]
            (dest / MARKER).write_text(json.dumps(rec), encoding="utf-8")
        written = sorted(p for p in _tree(dest) if (dest / p).is_file() and p != MARKER)
        if kind == "changed file":
            rel = data.draw(st.sampled_from(written))
            target = dest / rel
            target.write_text(target.read_text(encoding="utf-8") + "researcher's note\n")
        else:
            rel = f"{where}/{name}".lstrip("/")
            target = dest / rel
            if target.exists() and kind != "legacy new file":
                target = dest / (rel + ".mine")
                rel += ".mine"
            if kind == "legacy new file" and (target.exists() or rel.endswith(".ndjson")):
                target, rel = dest / (rel + ".txt"), rel + ".txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind in ("new file", "legacy new file"):
                target.write_text("mine\n", encoding="utf-8")
            elif kind == "empty folder":
                target.mkdir()
            else:
                target.symlink_to(tmp / "s.sqlite")
        before = _tree(dest)
        with pytest.raises(ForeignFiles) as e:
            export_study(store, plan, dest)
        # named: the path itself, or the folder holding it that no export makes
        named = [
            f for f in e.value.files if f in (rel, rel + "/") or rel.startswith(f.rstrip("/") + "/")
        ]
        assert named and all(f in str(e.value) for f in named), (rel, str(e.value))
        assert _tree(dest) == before  # nothing deleted, nothing overwritten
        assert not [p for p in tmp.iterdir() if p.name.startswith(".export")]  # no leftovers
    finally:
        store.close()


def test_an_export_replaces_its_own_earlier_export(tmp_path, plan):
    store = Store(str(tmp_path / "s.sqlite"))
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        p = _at_post(client, plan)
        dest = tmp_path / "export"
        assert export_study(store, plan, dest)["incomplete"] == 1
        p.send({"kind": "survey", "survey_type": "post", "answers": post_answers(plan.per_session)})
        rec = export_study(store, plan, dest)
        assert (rec["finished"], rec["incomplete"]) == (1, 0)
        assert not (dest / INCOMPLETE_DIR).exists()
        assert sorted(rec["files"]) == sorted(
            p for p, h in _tree(dest).items() if h != "dir" and p != MARKER
        )
    finally:
        store.close()
