"""Forum routes for comments: post, reply, permalink, edit, delete."""

from __future__ import annotations

import sqlite3
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request

from sites.core import get_db
from sites.forum.util import now_ts
from sites.forum.view_helpers import (
    apply_vote,
    comment_tree,
    forum_or_404,
    forum_sidebar,
    post_url,
    require_user,
    submission_or_404,
)

MAX_COMMENT = 10000


def _comment_or_404(sid: int, cid: int) -> sqlite3.Row:
    row = (
        get_db()
        .execute(
            "SELECT c.*, u.username FROM comments c JOIN users u ON u.id = c.user_id "
            "WHERE c.id = ? AND c.submission_id = ?",
            (cid, sid),
        )
        .fetchone()
    )
    if row is None:
        abort(404)
    return row


def _comment_text() -> str:
    text = request.form.get("comment[comment]", "").strip()
    if not text:
        abort(400, "The comment must not be empty.")
    if len(text) > MAX_COMMENT:
        abort(400, f"The comment must be at most {MAX_COMMENT} characters.")
    return text


def register(app: Flask) -> None:
    @app.post("/f/<forum>/<int:sid>/-/comment")
    def post_comment(forum: str, sid: int) -> Any:
        user = require_user()
        s = submission_or_404(forum, sid)
        text = _comment_text()
        parent = request.form.get("comment[parent]") or None
        if parent is not None:
            _comment_or_404(sid, int(parent) if parent.isdigit() else -1)
        db = get_db()
        cur = db.execute(
            "INSERT INTO comments (submission_id, parent_id, user_id, body, created_at) VALUES (?,?,?,?,?)",
            (sid, parent, user["id"], text, now_ts()),
        )
        # as with posts, your own comment starts upvoted
        apply_vote(db, "comment", cur.lastrowid, user["id"], 1)
        db.commit()
        return redirect(post_url(s["forum_name"], sid, s["title"]))

    @app.get("/f/<forum>/<int:sid>/-/comment/<int:cid>")
    def comment_permalink(forum: str, sid: int, cid: int) -> Any:
        s = submission_or_404(forum, sid)
        _comment_or_404(sid, cid)
        f = forum_or_404(forum)

        def find(nodes: list[dict]) -> dict | None:
            for n in nodes:
                if n["c"]["id"] == cid:
                    return n
                hit = find(n["replies"])
                if hit:
                    return hit
            return None

        node = find(comment_tree(sid))
        return render_template(
            "forum/submission.html",
            s=s,
            forum=f,
            comments=[node] if node else [],
            single_thread=True,
            **forum_sidebar(f),
        )

    @app.route("/f/<forum>/<int:sid>/-/comment/<int:cid>/edit", methods=["GET", "POST"])
    def edit_comment(forum: str, sid: int, cid: int) -> Any:
        user = require_user()
        s = submission_or_404(forum, sid)
        c = _comment_or_404(sid, cid)
        if c["user_id"] != user["id"]:
            abort(403)
        if request.method == "GET":
            return render_template("forum/edit_comment.html", s=s, c=c)
        db = get_db()
        db.execute(
            "UPDATE comments SET body = ?, edited_at = ? WHERE id = ?", (_comment_text(), now_ts(), cid)
        )
        db.commit()
        return redirect(post_url(s["forum_name"], sid, s["title"]))

    @app.post("/f/<forum>/<int:sid>/-/comment/<int:cid>/delete")
    def delete_comment(forum: str, sid: int, cid: int) -> Any:
        user = require_user()
        s = submission_or_404(forum, sid)
        c = _comment_or_404(sid, cid)
        if c["user_id"] != user["id"]:
            abort(403)
        db = get_db()
        db.execute("DELETE FROM comments WHERE id = ?", (cid,))  # replies go with it (ON DELETE CASCADE)
        db.commit()
        flash("The comment was deleted.", "success")
        return redirect(post_url(s["forum_name"], sid, s["title"]))
