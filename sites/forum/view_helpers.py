"""View helpers shared by the forum's route modules: the logged-in user, lookups that 404, listings, votes.

A leaf below `app.py` and the `views_*.py` modules, so the route modules never import each other or the app.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import urlencode

from flask import abort, g, redirect, request, url_for

from sites.core import current_user_id, get_db, page_of
from sites.forum.constants import PAGE_SIZE
from sites.forum.util import SORTS, hot_score, slugify


def current_user() -> sqlite3.Row | None:
    """The logged-in user's row (None when anonymous or when the session names an unknown user)."""
    if "forum_user" not in g:
        uid = current_user_id()
        g.forum_user = (
            None if uid is None else get_db().execute("SELECT * FROM users WHERE id = ?", (uid,)).fetchone()
        )
    return g.forum_user


def require_user() -> sqlite3.Row:
    user = current_user()
    if user is None:
        abort(redirect(url_for("login", next=request.full_path.rstrip("?"))))
    return user


def forum_or_404(name: str) -> sqlite3.Row:
    row = get_db().execute("SELECT * FROM forums WHERE name = ?", (name,)).fetchone()
    if row is None:
        abort(404)
    return row


def back(default: str) -> Any:
    """Redirects to the page the form was posted from (same site only), else to `default`."""
    ref = request.referrer or ""
    return redirect(ref if ref.startswith(request.host_url) else default)


def post_url(forum: str, sid: int, title: str) -> str:
    return f"/f/{forum}/{sid}/{slugify(title)}"


def query_with(**updates: Any) -> str:
    """The current query string with some arguments replaced (for pagination links)."""
    args = request.args.to_dict(flat=False)
    args.update({k: [str(v)] for k, v in updates.items()})
    return urlencode(args, doseq=True)


LISTING_SQL = """
SELECT s.*, f.name AS forum_name, u.username AS username, s.upvotes - s.downvotes AS score,
       (SELECT count(*) FROM comments c WHERE c.submission_id = s.id) AS n_comments, v.choice AS my_vote
FROM submissions s JOIN forums f ON f.id = s.forum_id JOIN users u ON u.id = s.user_id
LEFT JOIN submission_votes v ON v.submission_id = s.id AND v.user_id = ?
"""


def listing(where: str, args: tuple, sort: str) -> tuple[list[sqlite3.Row], Any]:
    """One page of submissions matching `where` (a fixed SQL fragment with ? placeholders) in `sort` order."""
    db = get_db()
    total = db.execute(f"SELECT count(*) FROM submissions s WHERE {where}", args).fetchone()[0]  # noqa: S608
    page = page_of(total, PAGE_SIZE)
    user = current_user()
    rows = db.execute(
        f"{LISTING_SQL} WHERE {where} ORDER BY {SORTS[sort]} LIMIT ? OFFSET ?",  # noqa: S608
        (user["id"] if user else None, *args, page.per_page, page.offset),
    ).fetchall()
    return rows, page


def apply_vote(db: sqlite3.Connection, kind: str, target_id: int, user_id: int, choice: int) -> None:
    """Sets the user's vote on a submission or comment (choice 1, -1, or 0 to retract) and the cached counts."""
    table, votes, col = (
        ("submissions", "submission_votes", "submission_id")
        if kind == "submission"
        else ("comments", "comment_votes", "comment_id")
    )
    old_row = db.execute(
        f"SELECT choice FROM {votes} WHERE user_id = ? AND {col} = ?",  # noqa: S608
        (user_id, target_id),
    ).fetchone()
    old = old_row[0] if old_row else 0
    if old == choice:
        return
    up = (choice == 1) - (old == 1)
    down = (choice == -1) - (old == -1)
    db.execute(
        f"UPDATE {table} SET upvotes = upvotes + ?, downvotes = downvotes + ? WHERE id = ?",  # noqa: S608
        (up, down, target_id),
    )
    db.execute(f"DELETE FROM {votes} WHERE user_id = ? AND {col} = ?", (user_id, target_id))  # noqa: S608
    if choice:
        db.execute(
            f"INSERT INTO {votes} (user_id, {col}, choice) VALUES (?,?,?)",  # noqa: S608
            (user_id, target_id, choice),
        )
    if kind == "submission":
        r = db.execute(
            "SELECT upvotes, downvotes, created_at FROM submissions WHERE id = ?", (target_id,)
        ).fetchone()
        db.execute("UPDATE submissions SET hot = ? WHERE id = ?", (hot_score(r[0], r[1], r[2]), target_id))


def submission_or_404(forum: str, sid: int) -> sqlite3.Row:
    user = current_user()
    row = (
        get_db()
        .execute(
            f"{LISTING_SQL} WHERE s.id = ? AND f.name = ?",  # noqa: S608
            (user["id"] if user else None, sid, forum),
        )
        .fetchone()
    )
    if row is None:
        abort(404)
    return row


def comment_tree(sid: int) -> list[dict]:
    """Comments of a submission as a tree. Top-level comments newest first (a new comment shows at the top),
    replies under their parent in the order they were written."""
    user = current_user()
    rows = (
        get_db()
        .execute(
            "SELECT c.*, u.username, c.upvotes - c.downvotes AS score, v.choice AS my_vote FROM comments c "
            "JOIN users u ON u.id = c.user_id LEFT JOIN comment_votes v ON v.comment_id = c.id AND v.user_id = ? "
            "WHERE c.submission_id = ? ORDER BY c.created_at, c.id",
            (user["id"] if user else None, sid),
        )
        .fetchall()
    )
    nodes = {r["id"]: {"c": r, "replies": []} for r in rows}
    top = []
    for r in rows:
        parent = nodes.get(r["parent_id"]) if r["parent_id"] else None
        (parent["replies"] if parent else top).append(nodes[r["id"]])
    return top[::-1]


def forum_sidebar(f: sqlite3.Row) -> dict[str, Any]:
    db = get_db()
    user = current_user()
    n_subs = db.execute("SELECT count(*) FROM subscriptions WHERE forum_id = ?", (f["id"],)).fetchone()[0]
    subscribed = (
        user is not None
        and db.execute(
            "SELECT 1 FROM subscriptions WHERE forum_id = ? AND user_id = ?", (f["id"], user["id"])
        ).fetchone()
        is not None
    )
    return {
        "n_subscribers": n_subs,
        "subscribed": subscribed,
        "is_moderator": user is not None and user["id"] == f["creator_id"],
    }
