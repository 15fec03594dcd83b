"""Framework of the bundled practice sites: the site registry, the per-site Flask app, request helpers.

How a site plugs in (read this if you add a site):

1. Make a package `sites/<pkg>/` and list its site keys in `SITE_PACKAGES` below (already done for shop, forum,
   gitlab, wiki, map). A package that is not there yet is skipped by `load_sites()`, so the others still start.
2. In `sites/<pkg>/site.py` define `SITES: list[SiteSpec]`, one per site key, e.g.

       DB = DbGroup("forum", seed=seed_db, sources=(Path(__file__).with_name("seed.py"), SCHEMA_PATH))
       SITES = [SiteSpec(key="reddit", port_offset=2, db=DB, create_app=create_app,
                         default_user=("MarvelsGrandpa", "test1234"),
                         login=LoginForm("/login", "_username", "_password"))]

   - `DbGroup.seed(db_path)` writes the whole seeded database to a fresh file; it must be deterministic
     (random.Random(fixed seed), fixed dates). `sources` are the files whose bytes define the seed; their hash is
     the seed version, so the seeded file is cached under `<data_dir>/seed/` and re-seeded only when they change.
     Sites that share a database (shopping + shopping_admin) reference the same DbGroup object.
   - `create_app(store: SandboxStore) -> Flask` builds the app with `make_site_app(key, db_group, store,
     template_folder)`, then adds its routes. Views get the request's database with `get_db()` (the sandbox's
     copy, or the read-only default) and must `commit()` their writes; a write on the default fails inside SQLite
     and the app answers 403 "read-only default; open a sandbox" by itself.
   - Log in with `login_user(user_id)`, read it with `current_user_id()`, guard views with
     `@login_required("endpoint_of_login_page")`. Sessions are signed cookies named `<key>_session` and never
     touch the database, so logging in works on the read-only default too.
   - `LoginForm(path, user_field, password_field)` says how `SiteServer` logs the default user in over HTTP to
     write `<data_dir>/.auth/<key>_state.json`: a POST of those two form fields that answers with a redirect
     (3xx) and sets the session cookie.
   - Templates: `{% extends "core/base.html" %}` gives the shared layout (blocks `title`, `head`, `header`,
     `content`, `footer`; flashed messages shown). Passwords: `sites.auth.hash_password` / `check_password`.
3. The app gets for free: `/__health__`, `/metrics` (Prometheus text, own CollectorRegistry per site),
   `POST /__sandbox__`, `DELETE /__sandbox__/<token>`, `GET /__sandbox__` (a page to open one in a browser).
   Creating and dropping sandboxes needs the store's admin key in the `X-WA-Sandbox-Key` header (or the page's key
   field), which only the driver holds: the agent browses these same sites (see sites/sandbox.py).
"""

from __future__ import annotations

import importlib
import math
import re
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, g, jsonify, redirect, render_template, request, session, url_for
from jinja2 import ChoiceLoader, FileSystemLoader

from common.sites import SANDBOX_COOKIE, SANDBOX_HEADER
from sites.sandbox import SandboxesFull, SandboxStore, UnknownSandbox, is_readonly_error

SANDBOX_KEY_HEADER = "X-WA-Sandbox-Key"  # the store's admin key: create / drop sandboxes
# on the 403 for a token that is gone: the checker cannot score
SANDBOX_MISSING_HEADER = "X-WA-Sandbox-Missing"
CORE_TEMPLATES = Path(__file__).with_name("templates")

# site key -> package holding it. Keys and port offsets are WebArena's (see sites/README.md).
SITE_PACKAGES: dict[str, str] = {
    "shopping": "sites.shop",
    "shopping_admin": "sites.shop",
    "reddit": "sites.forum",
    "gitlab": "sites.gitlab",
    "wikipedia": "sites.wiki",
    "map": "sites.map",
}


@dataclass(frozen=True)
class DbGroup:
    """One SQLite database, possibly shared by several sites."""

    name: str
    seed: Callable[[Path], None]
    sources: tuple[Path, ...] = ()


@dataclass(frozen=True)
class LoginForm:
    path: str
    user_field: str
    password_field: str


@dataclass(frozen=True)
class SiteSpec:
    key: str
    port_offset: int
    db: DbGroup
    create_app: Callable[[SandboxStore], Flask]
    default_user: tuple[str, str]
    login: LoginForm
    title: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def load_sites(keys: list[str] | tuple[str, ...] | None = None) -> list[SiteSpec]:
    """The specs of the requested sites (all available ones when None), ordered by port offset.

    A package that does not exist yet is skipped when `keys` is None and is an error when it was asked for.
    """
    wanted = list(SITE_PACKAGES) if keys is None else list(keys)
    unknown = [k for k in wanted if k not in SITE_PACKAGES]
    if unknown:
        raise ValueError(f"unknown site(s) {unknown}; known: {sorted(SITE_PACKAGES)}")
    specs: dict[str, SiteSpec] = {}
    for pkg in dict.fromkeys(SITE_PACKAGES[k] for k in wanted):
        try:
            module = importlib.import_module(f"{pkg}.site")
        except ModuleNotFoundError as exc:
            if exc.name not in (pkg, f"{pkg}.site"):
                raise  # a real import error inside an existing package must not be hidden
            if keys is not None:
                raise ValueError(f"site package {pkg} is not available") from exc
            continue
        for spec in module.SITES:
            if spec.key in wanted:
                specs[spec.key] = spec
    missing = [k for k in wanted if k not in specs and keys is not None]
    if missing:
        raise ValueError(f"site package did not define {missing}")
    return sorted(specs.values(), key=lambda s: s.port_offset)


# -- the per-site app --------------------------------------------------------------------------------------------
def make_site_app(
    key: str,
    db_group: str,
    store: SandboxStore,
    template_folder: Path | None = None,
    import_name: str = "sites",
) -> Flask:
    """A Flask app wired for sandboxes, metrics, health and the shared layout. Add your routes to it."""
    from sites.metrics import SiteMetrics

    # Explicit paths: Flask's guess from the import name fails for namespace-style editable installs.
    app = Flask(
        import_name,
        template_folder=None,
        static_folder=None,
        root_path=str(Path(__file__).parent),
        instance_path=str(Path(store.data_dir).resolve() / "instance"),
    )
    app.config.update(
        SECRET_KEY=_secret_key(store.data_dir),
        SESSION_COOKIE_NAME=f"{key}_session",
        SESSION_COOKIE_SAMESITE="Lax",
        WA_SITE=key,
        WA_DB_GROUP=db_group,
    )
    loaders = [FileSystemLoader(str(template_folder))] if template_folder else []
    app.jinja_loader = ChoiceLoader([*loaders, FileSystemLoader(str(CORE_TEMPLATES))])  # type: ignore[assignment]
    app.extensions["wa_store"] = store
    metrics = SiteMetrics(key, store)
    app.extensions["wa_metrics"] = metrics

    @app.before_request
    def _select_sandbox() -> Any:
        g.wa_t0 = time.perf_counter()
        g.wa_sandbox = None
        if request.path.startswith(("/__sandbox__", "/__health__", "/metrics")):
            return None
        token = request.headers.get(SANDBOX_HEADER) or request.cookies.get(SANDBOX_COOKIE)
        if token:
            try:
                store.touch(token)
            except UnknownSandbox:
                page = render_template(
                    "core/message.html",
                    title="Unknown sandbox",
                    message=(
                        "This sandbox does not exist (it may have expired). Clear the wa_sandbox cookie or "
                        "open a new sandbox."
                    ),
                )
                return page, 403, {SANDBOX_MISSING_HEADER: "1"}
            g.wa_sandbox = token
        return None

    @app.after_request
    def _observe(resp: Response) -> Response:
        metrics.observe(request, resp.status_code, time.perf_counter() - g.get("wa_t0", time.perf_counter()))
        return resp

    @app.teardown_appcontext
    def _close_db(_exc: BaseException | None) -> None:
        conn = g.pop("wa_db", None)
        if conn is not None:
            conn.close()  # uncommitted writes of a failed view are rolled back here

    @app.errorhandler(sqlite3.OperationalError)
    @app.errorhandler(PermissionError)
    def _readonly(exc: Exception) -> Any:
        if not is_readonly_error(exc):
            raise exc
        return render_template(
            "core/message.html",
            title="Read-only",
            message=(
                "read-only default; open a sandbox (POST /__sandbox__ and send its token in the wa_sandbox cookie)"
            ),
        ), 403

    _add_builtin_routes(app, key, db_group, store, metrics)
    return app


def _add_builtin_routes(app: Flask, key: str, db_group: str, store: SandboxStore, metrics: Any) -> None:
    @app.get("/__health__")
    def _health() -> Any:
        conn = store.connect(None, db_group)
        try:
            conn.execute("SELECT 1").fetchone()
        finally:
            conn.close()
        return jsonify(site=key, ok=True, sandboxes=len(store))

    @app.get("/metrics")
    def _metrics() -> Any:
        body, ctype = metrics.render()
        return Response(body, content_type=ctype)

    def _refuse(key: str | None) -> Any:
        if store.authorized(key):
            return None
        return jsonify(error=f"sandbox admin key required ({SANDBOX_KEY_HEADER} header)"), 403

    def _create() -> str | Any:
        try:
            return store.create()
        except SandboxesFull as e:
            return jsonify(error=str(e)), 503

    @app.post("/__sandbox__")
    def _new_sandbox() -> Any:
        refused = _refuse(request.headers.get(SANDBOX_KEY_HEADER))
        if refused is not None:
            return refused
        token = _create()
        return jsonify(token=token) if isinstance(token, str) else token

    @app.delete("/__sandbox__/<token>")
    def _drop_sandbox(token: str) -> Any:
        refused = _refuse(request.headers.get(SANDBOX_KEY_HEADER))
        if refused is not None:
            return refused
        if not store.drop(token):
            abort(404)
        return jsonify(dropped=token)

    @app.get("/__sandbox__")
    def _sandbox_page() -> Any:
        return render_template("core/sandbox.html", token=request.cookies.get(SANDBOX_COOKIE))

    @app.post("/__sandbox__/open")
    def _open_sandbox() -> Any:
        refused = _refuse(request.form.get("key"))
        if refused is not None:
            return refused
        token = _create()
        if not isinstance(token, str):
            return token
        resp = redirect("/")
        resp.set_cookie(SANDBOX_COOKIE, token, samesite="Lax", httponly=True)
        return resp


def _secret_key(data_dir: Path) -> str:
    """One signing key per data dir, kept on disk so storage states survive a server restart."""
    path = Path(data_dir) / ".secret_key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{secrets.token_hex(4)}")
        tmp.write_text(secrets.token_hex(32))
        try:
            tmp.rename(path) if not path.exists() else tmp.unlink()
        except OSError:
            tmp.unlink(missing_ok=True)
    return path.read_text().strip()


# -- request helpers for views -----------------------------------------------------------------------------------
def get_db() -> sqlite3.Connection:
    """The request's database connection (sandbox copy, or the read-only default). Rows are sqlite3.Row."""
    conn = g.get("wa_db")
    if conn is None:
        from flask import current_app

        store: SandboxStore = current_app.extensions["wa_store"]
        conn = store.connect(g.get("wa_sandbox"), current_app.config["WA_DB_GROUP"])
        g.wa_db = conn
    return conn


def login_user(user_id: int) -> None:
    session.clear()
    session["user_id"] = int(user_id)


def logout_user() -> None:
    session.clear()


def current_user_id() -> int | None:
    uid = session.get("user_id")
    return int(uid) if uid is not None else None


def login_required(login_endpoint: str) -> Callable:
    """Redirects anonymous visitors to the login page, keeping where they were going in `next`."""

    def deco(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if current_user_id() is None:
                return redirect(url_for(login_endpoint, next=request.full_path.rstrip("?")))
            return view(*args, **kwargs)

        return wrapped

    return deco


def safe_next(default: str = "/") -> str:
    """The `next` target of a login form, only when it is a local path (no open redirect)."""
    target = request.values.get("next") or ""
    return target if target.startswith("/") and not target.startswith("//") else default


@dataclass(frozen=True)
class Page:
    """One page of a paginated listing (1-based)."""

    number: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.per_page

    @property
    def has_prev(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def page_of(total: int, per_page: int, arg: str = "p") -> Page:
    """Reads the page number from the query string, clamped to the valid range."""
    try:
        number = int(request.args.get(arg, "1"))
    except ValueError:
        number = 1
    page = Page(1, per_page, total)
    return Page(min(max(1, number), page.pages), per_page, total)


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
