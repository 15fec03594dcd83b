"""The code host's Flask app (GitLab-like): the app factory, sign-in, dashboards and explore.

Routes live in views_project.py (project page, stars, members, new project), views_repo.py (repository),
views_issues.py, views_mrs.py and views_users.py (profiles, follows, settings, tokens, todos); the factory registers
each of them. Their shared helpers are in view_helpers.py. Markup follows GitLab's class names
(`.block.assignee`, `td.col-max-role span`, `#notes-list`, `.cover-status`, `.visibility-icon`, ...) so
WebArena-style JS locators work here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, flash, redirect, render_template, request

from sites.auth import check_password
from sites.core import get_db, login_user, logout_user, make_site_app, safe_next
from sites.gitlab import views_issues, views_mrs, views_project, views_repo, views_users
from sites.gitlab.constants import DB_GROUP, SITE
from sites.gitlab.util import ROLES, SSH_HOST, role_name, short_date
from sites.gitlab.view_helpers import EXPLORE_SORTS, current_user, query_with, require_user, visible_projects

TEMPLATES = Path(__file__).with_name("templates")


def create_app(store: Any) -> Flask:
    app = make_site_app(SITE, DB_GROUP, store, template_folder=TEMPLATES, import_name=__name__)
    app.jinja_env.globals.update(
        current_user=current_user, query_with=query_with, role_name=role_name, ROLES=ROLES, SSH_HOST=SSH_HOST
    )
    app.jinja_env.filters["short_date"] = short_date
    _add_auth_routes(app)
    _add_dashboard_routes(app)
    for module in (views_users, views_issues, views_mrs, views_repo, views_project):
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
