"""One plan per database: a plan's numbers are finite and bounded (refused at load naming the
key), the database keeps the plan it was made with, a start or an export with another plan is
refused naming both hashes, and an export writes the database's own copy of the plan, whatever
happened to the file on disk."""

from __future__ import annotations

import copy
import math
import random
import subprocess
import sys
import uuid
import warnings

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import PLAN, REPO, Scripted, _truthy, join

warnings.filterwarnings("ignore", message="Using `httpx`")

from starlette.testclient import TestClient  # noqa: E402

from nonolab.collect.app import create_app  # noqa: E402
from nonolab.collect.export import export_study  # noqa: E402
from nonolab.collect.plan import (  # noqa: E402
    PLATFORM_SCHEMA,
    PlanError,
    load_plan,
    plan_digest,
)
from nonolab.collect.store import PlanMismatch, Store  # noqa: E402

#: a platform section with every numeric key (the schema's) set to an ordinary value
FULL_PLATFORM = {
    "warmup": {"enabled": True, "time_limit_s": 300},
    "hint_limit": 5,
    "limits": {
        "max_batch_events": 200,
        "max_body_bytes": 262144,
        "events_per_s": 20.0,
        "event_burst": 400,
        "max_text_chars": 5000,
    },  # fmt: skip
    "replace_after_s": 1800,
    "surveys": {
        "pre": [{"id": "s", "prompt": "p", "type": "scale", "min": 1, "max": 10, "na": -1}],
    },
}


def _raw() -> dict:
    raw = yaml.safe_load(PLAN.read_text(encoding="utf-8"))
    raw["platform"] = copy.deepcopy(FULL_PLATFORM)
    return raw


def _numeric_leaves(doc, path=()):
    if isinstance(doc, bool):
        return
    if isinstance(doc, int | float):
        yield path
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numeric_leaves(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numeric_leaves(v, (*path, i))


def _set(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    doc[path[-1]] = value


def _write(tmp_path, raw, name="plan.yaml"):
    f = tmp_path / name
    f.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return f


def test_every_non_finite_number_in_a_plan_is_refused_naming_its_key(tmp_path):
    """Every numeric leaf of a plan (puzzles, schedule, every platform number), set to each
    non-finite value in turn (a seeded sample of the leaves plus every platform one)."""
    raw = _raw()
    leaves = list(_numeric_leaves(raw))
    platform = [p for p in leaves if p[0] == "platform"]
    rng = random.Random(32)
    chosen = platform + rng.sample([p for p in leaves if p[0] != "platform"], 40)
    assert len(platform) >= 10
    for i, path in enumerate(chosen):
        value = (math.inf, -math.inf, math.nan)[i % 3]
        bad = copy.deepcopy(raw)
        _set(bad, path, value)
        f = _write(tmp_path, bad)
        with pytest.raises(PlanError) as e:
            load_plan(f)
        key = "/".join(map(str, path))
        assert str(f) in str(e.value) and key in str(e.value), (key, str(e.value))
        assert "finite" in str(e.value)


def _bounded_platform_keys():
    """(path in the plan, minimum, maximum) of every bounded number of the platform schema."""
    schema = yaml.safe_load(PLATFORM_SCHEMA.read_text(encoding="utf-8"))
    out = []

    def walk(node, path):
        if not isinstance(node, dict):
            return
        if node.get("type") in ("integer", "number") and "maximum" in node:
            lo = node.get("minimum", node.get("exclusiveMinimum"))
            out.append((path, lo, node["maximum"], node["type"]))
        for k, v in (node.get("properties") or {}).items():
            walk(v, (*path, k))

    walk(schema, ("platform",))
    return out


def test_every_platform_number_has_a_bound():
    """No number of the platform section is unbounded above (one turned the rate limit off)."""
    schema = yaml.safe_load(PLATFORM_SCHEMA.read_text(encoding="utf-8"))
    unbounded = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") in ("integer", "number") and "maximum" not in node:
                unbounded.append(path)
            for k, v in node.items():
                walk(v, (*path, k))

    walk(schema, ())
    assert unbounded == []
    assert len(_bounded_platform_keys()) >= 8


@settings(
    # each example starts a store and a server app: 8 in the fast tier, 25 with NONOLAB_SLOW=1
    max_examples=25 if _truthy("NONOLAB_SLOW") else 8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_platform_numbers_in_bounds_serve_and_out_of_bounds_are_refused(tmp_path, data):
    """A bounded platform key drawn at random: a value above its maximum is refused naming the
    key; a value inside its bounds loads, and the participant's state answers 200 with it."""
    keys = [k for k in _bounded_platform_keys() if k[0][1] != "surveys"]
    path, lo, hi, typ = data.draw(st.sampled_from(keys))
    raw = _raw()
    del raw["platform"]["surveys"]
    over = hi + data.draw(st.integers(1, 10**9))
    bad = copy.deepcopy(raw)
    _set(bad, path, over)
    f = _write(tmp_path, bad, "bad.yaml")
    with pytest.raises(PlanError) as e:
        load_plan(f)
    assert "/".join(path[1:]) in str(e.value)
    if typ == "integer":
        ok = data.draw(st.integers(int(math.ceil(lo)) if lo else 1, hi))
    else:
        ok = data.draw(st.floats(max(lo, 1.0) if lo is not None else 1.0, hi))
    good = copy.deepcopy(raw)
    _set(good, path, ok)
    plan = load_plan(_write(tmp_path, good, "good.yaml"))
    # a new database per example: a database keeps the plan it was made with, and another
    # example's plan over it is refused (PlanMismatch), as a restart with another plan is
    store = Store(str(tmp_path / f"s-{uuid.uuid4().hex}.sqlite"))
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        r = client.get(f"/api/s/{join(client)}/state")
        assert r.status_code == 200, r.text
    finally:
        store.close()


def _mutations(raw, rng):
    """Yield plans that differ from ``raw`` in one value each (a seeded sample)."""
    leaves = [p for p in _numeric_leaves(raw) if p[0] == "platform"]
    for path in rng.sample(leaves, 6):
        other = copy.deepcopy(raw)
        v = other
        for k in path:
            v = v[k]
        _set(other, path, v + 1 if isinstance(v, int) else v * 2)
        yield other
    other = copy.deepcopy(raw)
    other["name"] = raw["name"] + "-b"
    yield other
    other = copy.deepcopy(raw)
    other["schedule"]["sessions"][0], other["schedule"]["sessions"][1] = (
        raw["schedule"]["sessions"][1],
        raw["schedule"]["sessions"][0],
    )
    yield other


def test_a_database_serves_one_plan(tmp_path, db_url):
    raw = _raw()
    a = _write(tmp_path, raw, "a.yaml")
    plan_a = load_plan(a)
    store = Store(db_url)
    try:
        bound, how = store.bind_plan(plan_a)
        assert how == "created" and bound.digest == plan_a.digest == plan_digest(raw)
        # the same content written otherwise (comments, key order, flow style) is the same plan
        text = "# a comment\n" + yaml.safe_dump(raw, sort_keys=True, default_flow_style=True)
        same = tmp_path / "same.yaml"
        same.write_text(text, encoding="utf-8")
        assert store.bind_plan(load_plan(same))[1] == "same"
        for i, other in enumerate(_mutations(raw, random.Random(7))):
            b = _write(tmp_path, other, f"b{i}.yaml")
            plan_b = load_plan(b)
            if plan_b.digest == plan_a.digest:
                continue
            with pytest.raises(PlanMismatch) as e:
                store.bind_plan(plan_b)
            msg = str(e.value)
            assert plan_a.digest in msg and plan_b.digest in msg
            assert str(a) in msg and str(b) in msg
            with pytest.raises(PlanMismatch):
                export_study(store, plan_b, tmp_path / f"out{i}")
            assert not (tmp_path / f"out{i}").exists()
        assert store.bound_plan().text == plan_a.text
    finally:
        store.close()


def test_an_export_writes_the_databases_plan_not_the_edited_file(tmp_path):
    """Editing plan.yaml while serving changes nothing the export writes."""
    f = tmp_path / "plan.yaml"
    f.write_text(PLAN.read_text(encoding="utf-8"), encoding="utf-8")
    plan = load_plan(f)
    store = Store(str(tmp_path / "s.sqlite"))
    try:
        client = TestClient(create_app(plan, store, "admin-secret-long-enough"))
        Scripted(client, join(client)).setup()
        store.bind_plan(plan)
        first = export_study(store, plan, tmp_path / "e1")
        # the researcher edits the file on disk: another puzzle 0 and a new name
        raw = yaml.safe_load(f.read_text(encoding="utf-8"))
        raw["name"] = "edited"
        raw["puzzles"][0]["solution"][0] = [1 - v for v in raw["puzzles"][0]["solution"][0]]
        del raw["puzzles"][0]["clues"], raw["puzzles"][0]["puzzle_hash"]
        f.write_text(yaml.safe_dump(raw), encoding="utf-8")
        second = export_study(store, plan, tmp_path / "e2")
        for name in ("plan.yaml", "nonograms_6.json"):
            assert (tmp_path / "e1" / name).read_bytes() == (tmp_path / "e2" / name).read_bytes()
        assert (tmp_path / "e2" / "plan.yaml").read_text(encoding="utf-8") == PLAN.read_text(
            encoding="utf-8"
        )
        assert first["plan_sha256"] == second["plan_sha256"] == plan.digest
    finally:
        store.close()


def test_a_database_made_before_binding_adopts_a_fitting_plan_once(tmp_path, plan):
    """Sessions stored before plans were bound: the plan they fit is adopted (once); a plan
    they do not fit is refused naming the first session that does not fit."""
    db = str(tmp_path / "old.sqlite")
    store = Store(db)
    try:
        for _ in range(3):
            store.create_participant(plan)  # no binding: as a database of an earlier version
        raw = yaml.safe_load(PLAN.read_text(encoding="utf-8"))
        raw["schedule"]["sessions"] = raw["schedule"]["sessions"][::-1]
        other = load_plan(_write(tmp_path, raw, "reordered.yaml"))
        with pytest.raises(PlanMismatch, match="P00001 plays puzzles"):
            store.bind_plan(other)
        assert store.bind_plan(plan)[1] == "adopted"
        assert store.bind_plan(plan)[1] == "same"
        with pytest.raises(PlanMismatch):
            store.bind_plan(other)
    finally:
        store.close()


def test_nonolab_serve_refuses_to_start_over_a_database_of_another_plan(tmp_path):
    raw = yaml.safe_load(PLAN.read_text(encoding="utf-8"))
    raw["platform"] = {"hint_limit": 1}
    other = _write(tmp_path, raw, "other.yaml")
    db = tmp_path / "study.sqlite"
    env = {"PYTHONPATH": str(REPO / "src"), "NONOLAB_ADMIN_TOKEN": "a-long-enough-token-1234"}
    import os

    env = {**os.environ, **env}

    def serve(plan, *extra):
        return subprocess.run(
            [sys.executable, "-m", "nonolab", "serve", str(plan), "--database", str(db), *extra],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip

    ok = serve(PLAN, "--export", str(tmp_path / "e1"))
    assert ok.returncode == 0, ok.stderr
    # a server start (no --export) with the other plan exits at once, naming both
    bad = serve(other, "--port", "1")
    assert bad.returncode == 2
    assert load_plan(PLAN).digest in bad.stderr and load_plan(other).digest in bad.stderr
    assert str(other) in bad.stderr and "plan.yaml" in bad.stderr
    assert "Traceback" not in bad.stderr
    # an export names any plan file: it is written from the database's own plan, with a note
    out = serve(other, "--export", str(tmp_path / "e2"))
    assert out.returncode == 0, out.stderr
    assert "the export uses the database's own plan" in out.stderr
    assert (tmp_path / "e2" / "plan.yaml").read_bytes() == PLAN.read_bytes()


def test_an_app_for_another_plan_is_refused_and_its_routes_never_answer_500(tmp_path, db_url):
    """``create_app`` over a database bound to another plan raises :class:`PlanMismatch` (the
    server does not start); an app whose database was bound to another plan since (another
    process) answers its researcher's export and validate with 409 naming both hashes, writes
    nothing, and answers the rest as before."""
    raw = _raw()
    plan_a = load_plan(_write(tmp_path, raw, "a.yaml"))
    other = copy.deepcopy(raw)
    other["name"] = raw["name"] + "-b"
    plan_b = load_plan(_write(tmp_path, other, "b.yaml"))
    store = Store(db_url)
    try:
        store.bind_plan(plan_a)
        with pytest.raises(PlanMismatch) as e:
            create_app(plan_b, store, "admin-secret-long-enough")
        assert plan_a.digest in str(e.value) and plan_b.digest in str(e.value)
        client = TestClient(create_app(plan_a, store, "admin-secret-long-enough",
                                       export_dir=tmp_path / "export"))  # fmt: skip
        Scripted(client, join(client)).send({"kind": "step", "from": "consent"})
        # another process binds the database to plan B (as a start over an older database did)
        from nonolab.collect.store import PLAN_BINDING

        with store.engine.begin() as conn:
            conn.execute(PLAN_BINDING.update().values(digest=plan_b.digest, plan_text=plan_b.text))
        auth = {"Authorization": "Bearer admin-secret-long-enough"}
        for method, route in (("POST", "/api/admin/export"), ("GET", "/api/admin/validate")):
            r = client.request(method, route, headers=auth)
            assert r.status_code == 409, (route, r.status_code, r.text)
            assert plan_a.digest in r.json()["error"] and plan_b.digest in r.json()["error"]
        assert not (tmp_path / "export").exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".export")] == []
        assert client.get("/api/admin/summary", headers=auth).status_code == 200
    finally:
        store.close()
