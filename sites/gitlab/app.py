"""The code host's Flask app (GitLab-like): app factory, shared view helpers, sign-in, dashboards and explore.

Routes live in views_project.py (project page, stars, members, repository, new project), views_issues.py,
views_mrs.py and views_users.py (profiles, follows, settings, tokens, todos). Markup follows GitLab's class names
(`.block.assignee`, `td.col-max-role span`, `#notes-list`, `.cover-status`, `.visibility-icon`, ...) so
WebArena-style JS locators work here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import Flask, abort, flash, g, redirect, render_template, request, url_for

from sites.auth import check_password
from sites.core import current_user_id, get_db, login_user, logout_user, make_site_app, page_of, safe_next
from sites.gitlab.site import DB_GROUP, PAGE_SIZE, SITE
from sites.gitlab.util import ROLES, SSH_HOST, role_name, short_date

TEMPLATES = Path(__file__).with_name("templates")
PROJECT_SQL = (
    "SELECT p.*, n.path AS ns, n.name AS ns_name, n.kind AS ns_kind, n.path || '/' || p.path AS full_path, "
    "(SELECT count(*) FROM stars s WHERE s.project_id = p.id) AS star_count FROM projects p "
    "JOIN namespaces n ON n.id = p.namespace_id"
)
EXPLORE_SORTS = {
    "latest_activity_desc": "p.last_activity_at DESC",
    "stars_desc": "star_count DESC, full_path",
    "name_asc": "p.name COLLATE NOCASE",
    "name_desc": "p.name COLLATE NOCASE DESC",
    "created_desc": "p.created_at DESC",
    "created_asc": "p.created_at ASC",
}


def current_user() -> sqlite3.Row | None:
    if "gl_user" not in g:
        uid = current_user_id()
        g.gl_user = (
            None if uid is None else get_db().execute("SELECT * FROM users WHERE id = ?", (uid,)).fetchone()
        )
    return g.gl_user


def require_user() -> sqlite3.Row:
    user = current_user()
    if user is None:
        abort(redirect(url_for("sign_in", next=request.full_path.rstrip("?"))))
    return user


def access_level(project_id: int) -> int:
    """The current user's role in a project (0 when not a member)."""
    user = current_user()
    if user is None:
        return 0
    row = (
        get_db()
        .execute(
            "SELECT access_level FROM project_members WHERE project_id = ? AND user_id = ?",
            (project_id, user["id"]),
        )
        .fetchone()
    )
    return row[0] if row else 0


def project_or_404(ns: str, path: str) -> sqlite3.Row:
    """The project at ns/path if the visitor may see it (private projects are hidden from non-members)."""
    row = get_db().execute(f"{PROJECT_SQL} WHERE n.path = ? AND p.path = ?", (ns, path)).fetchone()  # noqa: S608
    if row is None or (row["visibility"] == "private" and access_level(row["id"]) == 0):
        abort(404)
    return row


def require_level(project: sqlite3.Row, level: int) -> sqlite3.Row:
    user = require_user()
    if access_level(project["id"]) < level:
        abort(403, f"You need the {ROLES[level]} role or higher in this project.")
    return user


def query_with(**updates: Any) -> str:
    args = request.args.to_dict(flat=False)
    args.update({k: [str(v)] for k, v in updates.items()})
    return urlencode(args, doseq=True)


def visible_projects(where: str, args: tuple, sort: str, per_page: int = PAGE_SIZE) -> tuple[list, Any]:
    """A page of projects matching `where` that the visitor may see."""
    user = current_user()
    vis = (
        "(p.visibility != 'private' OR EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id "
        "AND m.user_id = ?))"
    )
    full_where = f"{where} AND {vis}"
    full_args = (*args, user["id"] if user else -1)
    db = get_db()
    total = db.execute(f"SELECT count(*) FROM ({PROJECT_SQL} WHERE {full_where})", full_args).fetchone()[0]  # noqa: S608
    page = page_of(total, per_page, "page")
    rows = db.execute(
        f"{PROJECT_SQL} WHERE {full_where} ORDER BY {EXPLORE_SORTS[sort]} LIMIT ? OFFSET ?",  # noqa: S608
        (*full_args, page.per_page, page.offset),
    ).fetchall()
    return rows, page


def create_app(store: Any) -> Flask:
    app = make_site_app(SITE, DB_GROUP, store, template_folder=TEMPLATES, import_name=__name__)
    app.jinja_env.globals.update(
        current_user=current_user, query_with=query_with, role_name=role_name, ROLES=ROLES, SSH_HOST=SSH_HOST
    )
    app.jinja_env.filters["short_date"] = short_date
    _add_auth_routes(app)
    _add_dashboard_routes(app)
    from sites.gitlab import views_issues, views_mrs, views_project, views_users

    for module in (views_users, views_issues, views_mrs, views_project):
        module.register(app)

    @app.errorhandler(404)
    def _not_found(_exc: Exception) -> Any:
        return render_template(
            "gitlab/message.html",
            title="404: Page not found",
            message="Make sure the address is correct and the page has not moved.",
        ), 404

    @app.errorhandler(403)
    def _forbidden(exc: Any) -> Any:
        return render_template(
            "gitlab/message.html",
            title="403: Forbidden",
            message=getattr(exc, "description", "") or "You may not do that.",
        ), 403

    return app


def _add_auth_routes(app: Flask) -> None:
    @app.route("/users/sign_in", methods=["GET", "POST"])
    def sign_in() -> Any:
        if request.method == "GET":
            return render_template("gitlab/sign_in.html", next=safe_next(""))
        login = request.form.get("user[login]", "").strip()
        row = (
            get_db()
            .execute("SELECT id, password_hash FROM users WHERE username = ? OR email = ?", (login, login))
            .fetchone()
        )
        if row is None or not check_password(row["password_hash"], request.form.get("user[password]", "")):
            flash("Invalid login or password.", "alert")
            return render_template("gitlab/sign_in.html", next=safe_next(""), login=login), 401
        login_user(row["id"])
        return redirect(safe_next("/"))

    @app.post("/users/sign_out")
    def sign_out() -> Any:
        logout_user()
        return redirect("/users/sign_in")


def _add_dashboard_routes(app: Flask) -> None:
    @app.get("/")
    @app.get("/dashboard/projects")
    def dashboard() -> Any:
        user = current_user()
        if user is None:
            return redirect("/explore")
        rows, page = visible_projects(
            "EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = ?)",
            (user["id"],),
            _sort("latest_activity_desc"),
        )
        return render_template(
            "gitlab/project_list.html", projects=rows, page=page, tab="yours", heading="Projects"
        )

    @app.get("/dashboard/projects/starred")
    def dashboard_starred() -> Any:
        user = require_user()
        rows, page = visible_projects(
            "EXISTS (SELECT 1 FROM stars s WHERE s.project_id = p.id AND s.user_id = ?)",
            (user["id"],),
            _sort("latest_activity_desc"),
        )
        return render_template(
            "gitlab/project_list.html", projects=rows, page=page, tab="starred", heading="Projects"
        )

    @app.get("/explore")
    @app.get("/explore/projects")
    @app.get("/explore/projects/<any(starred,trending):which>")
    def explore(which: str = "") -> Any:
        name = request.args.get("name", "").strip()
        sort = _sort("stars_desc" if which == "starred" else "latest_activity_desc")
        where, args = (
            ("(p.name LIKE ? OR p.description LIKE ?)", (f"%{name}%", f"%{name}%")) if name else ("1", ())
        )
        rows, page = visible_projects(where, args, sort)
        return render_template(
            "gitlab/project_list.html",
            projects=rows,
            page=page,
            tab="explore",
            heading="Explore projects",
            name=name,
            sort=sort,
        )

    @app.get("/explore/groups")
    def explore_groups() -> Any:
        groups = (
            get_db()
            .execute(
                "SELECT n.*, (SELECT count(*) FROM projects p WHERE p.namespace_id = n.id) AS "
                "n_projects FROM namespaces n WHERE kind = 'group' ORDER BY n.name"
            )
            .fetchall()
        )
        return render_template("gitlab/groups.html", groups=groups)


def _sort(default: str) -> str:
    sort = request.args.get("sort", default)
    return sort if sort in EXPLORE_SORTS else default
