"""Forum routes for listings, submissions and votes (Postmill's URL scheme)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from typing import Any

from flask import Flask, Response, abort, flash, redirect, render_template, request

from sites.core import get_db
from sites.forum.util import SORTS, hot_score, now_ts
from sites.forum.view_helpers import (
    apply_vote,
    back,
    comment_tree,
    current_user,
    forum_or_404,
    forum_sidebar,
    listing,
    post_url,
    require_user,
    submission_or_404,
)


def _sort_arg(sort: str | None) -> str:
    sort = sort or request.args.get("sort", "hot")
    if sort not in SORTS:
        abort(404)
    return sort


def _read_submission_form(forum_required: bool = True) -> tuple[dict[str, str], str | None]:
    f = {k: request.form.get(f"submission[{k}]", "").strip() for k in ("title", "url", "body", "forum")}
    if not f["title"]:
        return f, "The title must not be empty."
    if len(f["title"]) > 300:
        return f, "The title must be at most 300 characters."
    if f["url"] and not re.match(r"^https?://\S+$", f["url"]):
        return f, "The URL must start with http:// or https://."
    if forum_required and not f["forum"]:
        return f, "Choose a forum."
    return f, None


def register(app: Flask) -> None:
    _register_listings(app)
    _register_submissions(app)


def _register_listings(app: Flask) -> None:
    @app.get("/")
    @app.get("/<any(hot,new,top,old):sort>")
    @app.get("/all")
    @app.get("/all/<any(hot,new,top,old):sort>")
    def front(sort: str | None = None) -> Any:
        sort = _sort_arg(sort)
        rows, page = listing("1 = 1", (), sort)
        return render_template(
            "forum/front.html", submissions=rows, page=page, sort=sort, subscriptions=_sidebar_forums()
        )

    @app.get("/f/<name>")
    @app.get("/f/<name>/<any(hot,new,top,old):sort>")
    def forum(name: str, sort: str | None = None) -> Any:
        f = forum_or_404(name)
        sort = _sort_arg(sort)
        rows, page = listing("s.forum_id = ?", (f["id"],), sort)
        return render_template(
            "forum/forum.html", forum=f, submissions=rows, page=page, sort=sort, **forum_sidebar(f)
        )

    @app.get("/submission_images/<name>")
    def submission_image(name: str) -> Any:
        if not re.fullmatch(r"[0-9a-f]{64}\.(jpg|png)", name):
            abort(404)
        # A generated placeholder picture: the colour comes from the file name, so each image looks different.
        color = hashlib.md5(name.encode()).hexdigest()[:6]  # noqa: S324 - not security
        svg = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="200"><rect width="320" '
            f'height="200" fill="#{color}"/></svg>'
        )
        return Response(svg, content_type="image/svg+xml")


def _sidebar_forums() -> list[sqlite3.Row]:
    """Front-page sidebar: the user's subscriptions, or the busiest forums for visitors."""
    user = current_user()
    db = get_db()
    if user is not None:
        return db.execute(
            "SELECT f.* FROM forums f JOIN subscriptions s ON s.forum_id = f.id "
            "WHERE s.user_id = ? ORDER BY f.name COLLATE NOCASE",
            (user["id"],),
        ).fetchall()
    return db.execute(
        "SELECT f.* FROM forums f ORDER BY (SELECT count(*) FROM subscriptions s "
        "WHERE s.forum_id = f.id) DESC, f.name LIMIT 10"
    ).fetchall()


def _register_submissions(app: Flask) -> None:
    @app.get("/f/<forum>/<int:sid>")
    # Postmill serves the slug-less form with a slash (reddit_get_post_url's)
    @app.get("/f/<forum>/<int:sid>/")
    @app.get("/f/<forum>/<int:sid>/<slug>")
    def submission(forum: str, sid: int, slug: str = "") -> Any:
        s = submission_or_404(forum, sid)
        f = forum_or_404(forum)
        return render_template(
            "forum/submission.html", s=s, forum=f, comments=comment_tree(sid), **forum_sidebar(f)
        )

    @app.route("/submit", methods=["GET", "POST"])
    @app.route("/submit/<forum>", methods=["GET", "POST"])
    def submit(forum: str | None = None) -> Any:
        user = require_user()
        forums = get_db().execute("SELECT name FROM forums ORDER BY name COLLATE NOCASE").fetchall()
        if request.method == "GET":
            return render_template("forum/submit.html", forums=forums, form={"forum": forum or ""})
        form, error = _read_submission_form()
        f = get_db().execute("SELECT * FROM forums WHERE name = ?", (form["forum"],)).fetchone()
        if error is None and f is None:
            error = "That forum does not exist."
        if error:
            flash(error, "error")
            return render_template("forum/submit.html", forums=forums, form=form), 400
        db = get_db()
        ts = now_ts()
        cur = db.execute(
            "INSERT INTO submissions (forum_id, user_id, title, body, url, created_at, hot) "
            "VALUES (?,?,?,?,?,?,?)",
            (f["id"], user["id"], form["title"], form["body"], form["url"] or None, ts, hot_score(0, 0, ts)),
        )
        apply_vote(db, "submission", cur.lastrowid, user["id"], 1)  # Postmill upvotes your own post
        db.commit()
        return redirect(post_url(f["name"], cur.lastrowid, form["title"]))

    @app.route("/f/<forum>/<int:sid>/-/edit", methods=["GET", "POST"])
    def edit_submission(forum: str, sid: int) -> Any:
        user = require_user()
        s = submission_or_404(forum, sid)
        if s["user_id"] != user["id"]:
            abort(403)
        if request.method == "GET":
            return render_template("forum/edit_submission.html", s=s, form=dict(s))
        form, error = _read_submission_form(forum_required=False)
        if error:
            flash(error, "error")
            return render_template("forum/edit_submission.html", s=s, form=form), 400
        db = get_db()
        db.execute(
            "UPDATE submissions SET title = ?, url = ?, body = ?, edited_at = ? WHERE id = ?",
            (form["title"], form["url"] or None, form["body"], now_ts(), sid),
        )
        db.commit()
        return redirect(post_url(forum, sid, form["title"]))

    @app.post("/f/<forum>/<int:sid>/-/delete")
    def delete_submission(forum: str, sid: int) -> Any:
        user = require_user()
        s = submission_or_404(forum, sid)
        if s["user_id"] != user["id"]:
            abort(403)
        db = get_db()
        db.execute("DELETE FROM submissions WHERE id = ?", (sid,))
        db.commit()
        flash("The submission was deleted.", "success")
        return redirect(f"/f/{s['forum_name']}")

    @app.post("/sv/<int:sid>")
    def vote_submission(sid: int) -> Any:
        return _vote("submission", sid)

    @app.post("/cv/<int:cid>")
    def vote_comment(cid: int) -> Any:
        return _vote("comment", cid)


def _vote(kind: str, target_id: int) -> Any:
    user = require_user()
    try:
        choice = int(request.form.get("choice", ""))
    except ValueError:
        choice = 99
    if choice not in (-1, 0, 1):
        abort(400, "choice must be 1, 0 or -1")
    db = get_db()
    table = "submissions" if kind == "submission" else "comments"
    if db.execute(f"SELECT 1 FROM {table} WHERE id = ?", (target_id,)).fetchone() is None:  # noqa: S608
        abort(404)
    apply_vote(db, kind, target_id, user["id"], choice)
    db.commit()
    return back("/")
