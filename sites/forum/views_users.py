"""Forum routes for users (profiles, biography), forums (list, create, edit), subscriptions and search."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request

from sites.core import get_db, page_of
from sites.forum.constants import PAGE_SIZE
from sites.forum.util import now_ts
from sites.forum.view_helpers import back, forum_or_404, listing, require_user

FORUM_SORTS = {
    "name": "f.name COLLATE NOCASE",
    "subscribers": "n_subscribers DESC, f.name COLLATE NOCASE",
    "submissions": "n_submissions DESC, f.name COLLATE NOCASE",
}
FORUM_FIELDS = ("name", "title", "description", "sidebar")


def _user_or_404(name: str) -> sqlite3.Row:
    row = get_db().execute("SELECT * FROM users WHERE username = ?", (name,)).fetchone()
    if row is None:
        abort(404)
    return row


def _user_comments(uid: int, limit: int, offset: int = 0) -> list[sqlite3.Row]:
    return (
        get_db()
        .execute(
            "SELECT c.*, c.upvotes - c.downvotes AS score, s.title AS submission_title, f.name AS forum_name "
            "FROM comments c JOIN submissions s ON s.id = c.submission_id JOIN forums f ON f.id = s.forum_id "
            "WHERE c.user_id = ? ORDER BY c.created_at DESC, c.id DESC LIMIT ? OFFSET ?",
            (uid, limit, offset),
        )
        .fetchall()
    )


def _forum_form_error(form: dict[str, str], creating: bool) -> str | None:
    if creating and not re.fullmatch(r"[A-Za-z0-9_]{3,25}", form["name"]):
        return "The name must be 3-25 letters, digits or underscores."
    if creating and get_db().execute("SELECT 1 FROM forums WHERE name = ?", (form["name"],)).fetchone():
        return "A forum with that name already exists."
    if not form["title"]:
        return "The title must not be empty."
    return None


def register(app: Flask) -> None:
    _register_users(app)
    _register_forums(app)


def _register_users(app: Flask) -> None:
    @app.get("/user/<name>")
    def user_profile(name: str) -> Any:
        u = _user_or_404(name)
        submissions, _ = listing("s.user_id = ?", (u["id"],), "new")
        return render_template(
            "forum/user.html",
            u=u,
            tab="overview",
            submissions=submissions[:10],
            comments=_user_comments(u["id"], 10),
            **_user_stats(u["id"]),
        )

    @app.get("/user/<name>/submissions")
    def user_submissions(name: str) -> Any:
        u = _user_or_404(name)
        submissions, page = listing("s.user_id = ?", (u["id"],), "new")
        return render_template(
            "forum/user.html",
            u=u,
            tab="submissions",
            submissions=submissions,
            page=page,
            **_user_stats(u["id"]),
        )

    @app.get("/user/<name>/comments")
    def user_comments(name: str) -> Any:
        u = _user_or_404(name)
        total = get_db().execute("SELECT count(*) FROM comments WHERE user_id = ?", (u["id"],)).fetchone()[0]
        page = page_of(total, PAGE_SIZE)
        return render_template(
            "forum/user.html",
            u=u,
            tab="comments",
            page=page,
            comments=_user_comments(u["id"], page.per_page, page.offset),
            **_user_stats(u["id"]),
        )

    @app.route("/user/<name>/edit_biography", methods=["GET", "POST"])
    def edit_biography(name: str) -> Any:
        user = require_user()
        u = _user_or_404(name)
        if u["id"] != user["id"]:
            abort(403)
        if request.method == "GET":
            return render_template("forum/edit_biography.html", u=u)
        bio = request.form.get("user_biography[biography]", "").strip()
        if len(bio) > 300:
            flash("The biography must be at most 300 characters.", "error")
            return render_template("forum/edit_biography.html", u=u, bio=bio), 400
        db = get_db()
        db.execute("UPDATE users SET biography = ? WHERE id = ?", (bio, u["id"]))
        db.commit()
        flash("Your biography was saved.", "success")
        return redirect(f"/user/{u['username']}")

    @app.get("/search")
    def search() -> Any:
        q = request.args.get("q", "").strip()
        rows, page = ([], None)
        if q:
            like = f"%{q}%"
            rows, page = listing("(s.title LIKE ? OR s.body LIKE ?)", (like, like), "new")
        return render_template("forum/search.html", q=q, submissions=rows, page=page)


def _user_stats(uid: int) -> dict[str, Any]:
    db = get_db()
    posts = db.execute(
        "SELECT count(*), coalesce(sum(upvotes - downvotes), 0) FROM submissions WHERE user_id = ?", (uid,)
    ).fetchone()
    comments = db.execute(
        "SELECT count(*), coalesce(sum(upvotes - downvotes), 0) FROM comments WHERE user_id = ?", (uid,)
    ).fetchone()
    return {"n_submissions": posts[0], "n_comments": comments[0], "karma": posts[1] + comments[1]}


def _register_forums(app: Flask) -> None:
    @app.get("/forums")
    @app.get("/forums/by_<any(name,subscribers,submissions):sort>")
    def forums(sort: str | None = None) -> Any:
        sort = sort or request.args.get("sort", "name")
        if sort not in FORUM_SORTS:
            abort(404)
        rows = (
            get_db()
            .execute(
                "SELECT f.*, (SELECT count(*) FROM subscriptions s WHERE s.forum_id = f.id) AS n_subscribers, "
                "(SELECT count(*) FROM submissions s WHERE s.forum_id = f.id) AS n_submissions "
                f"FROM forums f ORDER BY {FORUM_SORTS[sort]}"  # noqa: S608 - sort is whitelisted
            )
            .fetchall()
        )
        return render_template("forum/forums.html", forums=rows, sort=sort)

    @app.route("/create_forum", methods=["GET", "POST"])
    def create_forum() -> Any:
        user = require_user()
        if request.method == "GET":
            return render_template("forum/forum_form.html", form={}, creating=True)
        form = {k: request.form.get(f"forum[{k}]", "").strip() for k in FORUM_FIELDS}
        error = _forum_form_error(form, creating=True)
        if error:
            flash(error, "error")
            return render_template("forum/forum_form.html", form=form, creating=True), 400
        db = get_db()
        ts = now_ts()
        cur = db.execute(
            "INSERT INTO forums (name, title, description, sidebar, creator_id, created_at) "
            "VALUES (?,?,?,?,?,?)",
            (*(form[k] for k in FORUM_FIELDS), user["id"], ts),
        )
        db.execute("INSERT INTO subscriptions VALUES (?,?,?)", (user["id"], cur.lastrowid, ts))
        db.commit()
        return redirect(f"/f/{form['name']}")

    @app.route("/f/<name>/edit", methods=["GET", "POST"])
    def edit_forum(name: str) -> Any:
        user = require_user()
        f = forum_or_404(name)
        if f["creator_id"] != user["id"]:
            abort(403)
        if request.method == "GET":
            return render_template("forum/forum_form.html", form=dict(f), creating=False, forum=f)
        form = {k: request.form.get(f"forum[{k}]", "").strip() for k in FORUM_FIELDS}
        form["name"] = f["name"]  # the name is fixed once created, as in Postmill
        error = _forum_form_error(form, creating=False)
        if error:
            flash(error, "error")
            return render_template("forum/forum_form.html", form=form, creating=False, forum=f), 400
        db = get_db()
        db.execute(
            "UPDATE forums SET title = ?, description = ?, sidebar = ? WHERE id = ?",
            (form["title"], form["description"], form["sidebar"], f["id"]),
        )
        db.commit()
        flash("The forum was updated.", "success")
        return redirect(f"/f/{f['name']}/edit")

    @app.post("/subscribe/<name>")
    def subscribe(name: str) -> Any:
        user = require_user()
        f = forum_or_404(name)
        db = get_db()
        db.execute("INSERT OR IGNORE INTO subscriptions VALUES (?,?,?)", (user["id"], f["id"], now_ts()))
        db.commit()
        return back(f"/f/{f['name']}")

    @app.post("/unsubscribe/<name>")
    def unsubscribe(name: str) -> Any:
        user = require_user()
        f = forum_or_404(name)
        db = get_db()
        db.execute("DELETE FROM subscriptions WHERE user_id = ? AND forum_id = ?", (user["id"], f["id"]))
        db.commit()
        return back(f"/f/{f['name']}")
