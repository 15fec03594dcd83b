"""Read helpers over a forum database file: facts for task suites and reward references.

Every function takes an open connection from `connect(path)` (read-only) and returns plain Python values; orders
match the pages (same SQL ordering as the listings), so "the top 10 posts of books" here is what /f/books/top shows.
URLs are paths relative to the site root (prefix them with `__REDDIT__`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sites.forum.util import SORTS, slugify

_POSTS = (
    "SELECT s.id, s.title, s.body, s.url, s.image, s.created_at, s.upvotes, s.downvotes, "
    "s.upvotes - s.downvotes AS score, f.name AS forum, u.username AS author, "
    "(SELECT count(*) FROM comments c WHERE c.submission_id = s.id) AS n_comments "
    "FROM submissions s JOIN forums f ON f.id = s.forum_id JOIN users u ON u.id = s.user_id "
)


def connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def post_path(forum: str, post_id: int, title: str) -> str:
    return f"/f/{forum}/{post_id}/{slugify(title)}"


def _posts(db: sqlite3.Connection, where: str, args: tuple, sort: str = "new", limit: int = -1) -> list[dict]:
    rows = db.execute(f"{_POSTS} WHERE {where} ORDER BY {SORTS[sort]} LIMIT ?", (*args, limit)).fetchall()  # noqa: S608
    return [dict(r, path=post_path(r["forum"], r["id"], r["title"])) for r in rows]


def forums(db: sqlite3.Connection) -> list[dict]:
    """All forums with subscriber and post counts, by name."""
    return [
        dict(r)
        for r in db.execute(
            "SELECT f.name, f.title, f.description, (SELECT count(*) FROM subscriptions s WHERE s.forum_id = f.id) "
            "AS subscribers, (SELECT count(*) FROM submissions s WHERE s.forum_id = f.id) AS posts FROM forums f "
            "ORDER BY f.name COLLATE NOCASE"
        )
    ]


def forum_posts(db: sqlite3.Connection, forum: str, sort: str = "hot", limit: int = -1) -> list[dict]:
    """Posts of a forum in the order /f/<forum>/<sort> lists them."""
    return _posts(db, "f.name = ?", (forum,), sort, limit)


def all_posts(db: sqlite3.Connection, sort: str = "hot", limit: int = -1) -> list[dict]:
    return _posts(db, "1 = 1", (), sort, limit)


def user_posts(db: sqlite3.Connection, username: str, forum: str | None = None) -> list[dict]:
    """A user's posts, newest first, optionally within one forum."""
    if forum is None:
        return _posts(db, "u.username = ?", (username,))
    return _posts(db, "u.username = ? AND f.name = ?", (username, forum))


def post(db: sqlite3.Connection, post_id: int) -> dict | None:
    rows = _posts(db, "s.id = ?", (post_id,))
    return rows[0] if rows else None


def comments(db: sqlite3.Connection, post_id: int) -> list[dict]:
    """A post's comments in writing order, with author and parent id."""
    return [
        dict(r)
        for r in db.execute(
            "SELECT c.id, c.parent_id, c.body, c.created_at, c.upvotes, c.downvotes, u.username AS author "
            "FROM comments c JOIN users u ON u.id = c.user_id WHERE c.submission_id = ? ORDER BY c.created_at, c.id",
            (post_id,),
        )
    ]


def user_comments(db: sqlite3.Connection, username: str) -> list[dict]:
    return [
        dict(r)
        for r in db.execute(
            "SELECT c.id, c.submission_id, c.body, c.created_at, c.upvotes, c.downvotes FROM comments c "
            "JOIN users u ON u.id = c.user_id WHERE u.username = ? ORDER BY c.created_at DESC, c.id DESC",
            (username,),
        )
    ]


def subscriptions(db: sqlite3.Connection, username: str) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT f.name FROM subscriptions s JOIN forums f ON f.id = s.forum_id JOIN users u ON u.id = s.user_id "
            "WHERE u.username = ? ORDER BY f.name COLLATE NOCASE",
            (username,),
        )
    ]


def biography(db: sqlite3.Connection, username: str) -> str | None:
    row = db.execute("SELECT biography FROM users WHERE username = ?", (username,)).fetchone()
    return None if row is None else row[0]


def vote(db: sqlite3.Connection, username: str, post_id: int) -> int:
    """The user's vote on a post: 1, -1, or 0 when none."""
    row = db.execute(
        "SELECT v.choice FROM submission_votes v JOIN users u ON u.id = v.user_id "
        "WHERE u.username = ? AND v.submission_id = ?",
        (username, post_id),
    ).fetchone()
    return 0 if row is None else row[0]


def usernames(db: sqlite3.Connection) -> list[str]:
    return [r[0] for r in db.execute("SELECT username FROM users ORDER BY id")]


def latest_post_by(db: sqlite3.Connection, username: str) -> dict | None:
    rows = _posts(db, "u.username = ?", (username,), "new", 1)
    return rows[0] if rows else None
