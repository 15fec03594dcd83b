"""The sites framework on a tiny real Flask site: sandboxes (copy, isolation, clean-up bounds), the read-only default,
unknown tokens, health and metrics (parsed with prometheus_client), seed caching, passwords, storage-state shape."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from werkzeug.security import check_password_hash

from common.sites import SITE_PLACEHOLDERS
from sites import core
from sites.auth import check_password, hash_password, storage_state
from sites.core import DbGroup, get_db, make_site_app
from sites.sandbox import SandboxesFull, SandboxStore, UnknownSandbox
from sites.server import ensure_seed, seed_version


def _seed(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE note(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO note(text) VALUES ('seed');"
    )
    conn.commit()
    conn.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path) -> SandboxStore:
    seed = tmp_path / "seed.sqlite"
    _seed(seed)
    s = SandboxStore(tmp_path, {"notes": seed}, max_sandboxes=3, idle_timeout_s=60)
    yield s
    s.close()


@pytest.fixture
def client(store):
    app = make_site_app("notes", "notes", store)

    @app.get("/")
    def index() -> str:
        return ",".join(r["text"] for r in get_db().execute("SELECT text FROM note ORDER BY id"))

    @app.post("/add")
    def add() -> str:
        db = get_db()
        db.execute(
            "INSERT INTO note(text) VALUES (?)",
            (f"n{db.execute('SELECT COUNT(*) FROM note').fetchone()[0]}",),
        )
        db.commit()
        return "ok"

    return app.test_client()


def test_default_is_read_only_and_sandboxes_are_private(store, client):
    seed_hash = _sha(store.seeds["notes"])
    resp = client.post("/add")
    assert resp.status_code == 403 and b"read-only default; open a sandbox" in resp.data
    key = {core.SANDBOX_KEY_HEADER: store.admin_key}
    tokens = [client.post("/__sandbox__", headers=key).get_json()["token"] for _ in range(2)]
    client.set_cookie(core.SANDBOX_COOKIE, tokens[0])
    assert client.post("/add").status_code == 200
    assert client.post("/add").status_code == 200
    assert client.get("/").data == b"seed,n1,n2"
    client.set_cookie(core.SANDBOX_COOKIE, tokens[1])
    assert client.get("/").data == b"seed"
    # The header works as the cookie does, for HTTP clients without a cookie jar.
    client.delete_cookie(core.SANDBOX_COOKIE)
    assert client.get("/", headers={core.SANDBOX_HEADER: tokens[0]}).data == b"seed,n1,n2"
    assert client.get("/").data == b"seed"
    assert _sha(store.seeds["notes"]) == seed_hash


def test_unknown_and_dropped_tokens_are_403_not_the_default(store, client):
    client.set_cookie(core.SANDBOX_COOKIE, "A" * 22)
    assert client.get("/").status_code == 403
    client.set_cookie(core.SANDBOX_COOKIE, "../../etc")
    assert client.get("/").status_code == 403
    client.delete_cookie(core.SANDBOX_COOKIE)
    key = {core.SANDBOX_KEY_HEADER: store.admin_key}
    token = client.post("/__sandbox__", headers=key).get_json()["token"]
    assert client.delete(f"/__sandbox__/{token}", headers=key).status_code == 200
    assert client.delete(f"/__sandbox__/{token}", headers=key).status_code == 404
    client.set_cookie(core.SANDBOX_COOKIE, token)
    assert client.get("/").status_code == 403
    with pytest.raises(UnknownSandbox):
        store.db_path("../../x" + "a" * 20, "notes")


def test_copy_is_lazy_and_cleanup_bounds_count_and_idle_time(store):
    t1 = store.create()
    assert not any((store.root / t1).iterdir())  # nothing copied until first use
    path = store.db_path(t1, "notes")
    assert path.exists() and path.read_bytes() == store.seeds["notes"].read_bytes()
    tokens = [t1] + [store.create() for _ in range(2)]  # bound is 3: a fourth is refused, none is evicted
    with pytest.raises(SandboxesFull, match="all 3 sandboxes are in use"):
        store.create()
    assert store.tokens() == tokens and path.exists()
    store.touch(tokens[2])
    dropped = store.cleanup(now=time.monotonic() + 61)  # idle past the time-out: the lease lapsed
    assert sorted(dropped) == sorted(tokens) and len(store) == 0


def test_health_and_metrics_parse(store, client):
    assert client.get("/__health__").get_json() == {"site": "notes", "ok": True, "sandboxes": 0}
    client.get("/")
    client.post("/add")  # 403: counted as an error
    store.create()
    fams = {f.name: f for f in text_string_to_metric_families(client.get("/metrics").data.decode())}
    hist = {
        s.name: s
        for s in fams["wa_site_request_seconds"].samples
        if s.name.endswith("_count") and s.labels["method"] == "GET"
    }
    assert hist["wa_site_request_seconds_count"].value >= 2
    errors = [s for s in fams["wa_site_errors"].samples if s.name == "wa_site_errors_total"]
    assert [(s.labels, s.value) for s in errors] == [({"site": "notes", "status": "403"}, 1.0)]
    assert fams["wa_site_live_sandboxes"].samples[0].value == 1.0


def test_seed_is_cached_by_source_hash(tmp_path):
    src = tmp_path / "seed_source.py"
    src.write_text("v1")
    calls = []

    def seed(path: Path) -> None:
        calls.append(path)
        _seed(path)

    group = DbGroup("g", seed=seed, sources=(src,))
    first = ensure_seed(group, tmp_path / "data")
    assert ensure_seed(group, tmp_path / "data") == first and len(calls) == 1
    src.write_text("v2")
    assert seed_version(group) not in first.name
    second = ensure_seed(group, tmp_path / "data")
    assert second != first and len(calls) == 2


def test_load_sites_skips_missing_packages_and_rejects_unknown_keys(monkeypatch):
    monkeypatch.setitem(core.SITE_PACKAGES, "ghost", "sites.no_such_package")
    monkeypatch.setitem(SITE_PLACEHOLDERS, "ghost", "__GHOST__")
    assert "ghost" not in [s.key for s in core.load_sites(["shopping", "shopping_admin"])]
    with pytest.raises(ValueError, match="not available"):
        core.load_sites(["ghost"])
    with pytest.raises(ValueError, match="unknown site"):
        core.load_sites(["shoping"])


def test_passwords_and_storage_state_shape():
    h = hash_password("Password.123", "salt1")
    assert h == hash_password("Password.123", "salt1")  # deterministic seeds
    assert check_password_hash(h, "Password.123") and check_password(h, "Password.123")
    assert not check_password(h, "password.123")
    state = storage_state({"shopping_session": "abc"}, "127.0.0.1")
    assert state["origins"] == [] and state["cookies"][0]["domain"] == "127.0.0.1"
    assert {"name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite"} <= set(
        state["cookies"][0]
    )
