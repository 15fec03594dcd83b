"""The forum's Flask app (Postmill-like): the app factory, login and registration.

Routes live in `views_posts.py` (listings, posts, votes), `views_comments.py` (comments) and `views_users.py`
(users, forums, subscriptions, search); the factory registers each of them. Their shared helpers are in
`view_helpers.py`. Markup follows Postmill's class names (`.submission__inner`, `div.submission__vote form.vote`,
`.comment__body`, `.user-bio__biography`, `#sidebar > section`) so WebArena-style JS locators work here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from flask import Flask, flash, redirect, render_template, request

from sites.auth import check_password, hash_password
from sites.core import get_db, login_user, logout_user, make_site_app, safe_next
from sites.forum import views_comments, views_posts, views_users
from sites.forum.constants import DB_GROUP, SITE
from sites.forum.util import nice_date, now_ts
from sites.forum.view_helpers import current_user, post_url, query_with

TEMPLATES = Path(__file__).with_name("templates")


def create_app(store: Any) -> Flask:
    app = make_site_app(SITE, DB_GROUP, store, template_folder=TEMPLATES, import_name=__name__)
    app.jinja_env.globals.update(current_user=current_user, post_url=post_url, query_with=query_with)
    app.jinja_env.filters["nice_date"] = nice_date
    app.jinja_env.filters["paragraphs"] = _paragraphs
    _add_auth_routes(app)
    for views in (views_posts, views_comments, views_users):
        views.register(app)

    @app.errorhandler(404)
    def _not_found(_exc: Exception) -> Any:
        return render_template(
            "forum/message.html", title="Page not found", message="The page you requested does not exist."
        ), 404

    return app


def _paragraphs(text: str) -> list[list[str]]:
    """Body text as paragraphs (blank-line separated) of lines, for <p> and <br> rendering."""
    paras = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return [p.strip("\n").split("\n") for p in paras]


def _add_auth_routes(app: Flask) -> None:
    @app.get("/login")
    def login() -> Any:
        return render_template("forum/login.html", next=safe_next(""))

    @app.post("/login_check")
    def login_check() -> Any:
        name = request.form.get("_username", "").strip()
        row = get_db().execute("SELECT id, password_hash FROM users WHERE username = ?", (name,)).fetchone()
        if row is None or not check_password(row["password_hash"], request.form.get("_password", "")):
            flash("Invalid credentials.", "error")
            return render_template("forum/login.html", next=safe_next(""), username=name), 401
        login_user(row["id"])
        return redirect(safe_next("/"))

    @app.post("/logout")
    def logout() -> Any:
        logout_user()
        return redirect("/")

    @app.route("/registration", methods=["GET", "POST"])
    def registration() -> Any:
        if request.method == "GET":
            return render_template("forum/registration.html")
        name = request.form.get("user[username]", "").strip()
        password = request.form.get("user[password]", "")
        error = _registration_error(name, password)
        if error:
            flash(error, "error")
            return render_template("forum/registration.html", username=name), 400
        db = get_db()
        cur = db.execute(
            "INSERT INTO users (username, password_hash, created_at) VALUES (?,?,?)",
            (name, hash_password(password, f"forum-{name}"), now_ts()),
        )
        db.commit()
        login_user(cur.lastrowid)
        return redirect("/")


def _registration_error(name: str, password: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]{3,25}", name):
        return "Username must be 3-25 letters, digits, '_' or '-'."
    if len(password) < 8:
        return "Password must be at least 8 characters."
    if get_db().execute("SELECT 1 FROM users WHERE username = ?", (name,)).fetchone():
        return "That username is taken."
    return None
