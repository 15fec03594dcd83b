"""Read helpers over a code host database file: facts for task suites and reward references.

Every function takes an open connection from `connect(path)` (read-only) and returns plain Python values. Project
references are full paths ("byteblaze/dotfiles"); URLs are paths relative to the site root (prefix `__GITLAB__`).
Orders match the pages (issues newest first, as `sort=created_date` lists them).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sites.gitlab.util import ROLES

_PROJECT = (
    "SELECT p.id, n.path || '/' || p.path AS full_path, p.name, p.description, p.visibility, p.created_at, "
    "p.last_activity_at, (SELECT count(*) FROM stars s WHERE s.project_id = p.id) AS stars "
    "FROM projects p JOIN namespaces n ON n.id = p.namespace_id"
)


def connect(path: str | Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


def _pid(db: sqlite3.Connection, full_path: str) -> int:
    ns, _, path = full_path.partition("/")
    row = db.execute(
        "SELECT p.id FROM projects p JOIN namespaces n ON n.id = p.namespace_id "
        "WHERE n.path = ? AND p.path = ?",
        (ns, path),
    ).fetchone()
    if row is None:
        raise KeyError(f"no project {full_path!r}")
    return row[0]


def projects(db: sqlite3.Connection, public_only: bool = False) -> list[dict]:
    """All projects, most starred first (ties by path)."""
    where = " WHERE p.visibility = 'public'" if public_only else ""
    return [dict(r) for r in db.execute(f"{_PROJECT}{where} ORDER BY stars DESC, full_path")]  # noqa: S608


def project(db: sqlite3.Connection, full_path: str) -> dict:
    return dict(db.execute(f"{_PROJECT} WHERE p.id = ?", (_pid(db, full_path),)).fetchone())  # noqa: S608


def members(db: sqlite3.Connection, full_path: str) -> dict[str, str]:
    """username -> role name ('Guest' ... 'Owner') of a project's direct members."""
    return {
        r[0]: ROLES[r[1]]
        for r in db.execute(
            "SELECT u.username, m.access_level FROM project_members m JOIN users u ON u.id = m.user_id "
            "WHERE m.project_id = ? ORDER BY u.username",
            (_pid(db, full_path),),
        )
    }


def member_projects(db: sqlite3.Connection, username: str) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT n.path || '/' || p.path FROM project_members m JOIN projects p ON p.id = m.project_id "
            "JOIN namespaces n ON n.id = p.namespace_id JOIN users u ON u.id = m.user_id WHERE u.username = ? "
            "ORDER BY 1",
            (username,),
        )
    ]


def starred_by(db: sqlite3.Connection, username: str) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT n.path || '/' || p.path FROM stars s JOIN projects p ON p.id = s.project_id "
            "JOIN namespaces n ON n.id = p.namespace_id JOIN users u ON u.id = s.user_id WHERE u.username = ? "
            "ORDER BY 1",
            (username,),
        )
    ]


def issues(
    db: sqlite3.Connection, full_path: str, state: str = "all", label: str | None = None
) -> list[dict]:
    """A project's issues, newest first, with labels, assignees and comment counts."""
    where, args = ["i.project_id = ?"], [_pid(db, full_path)]
    if state != "all":
        where.append("i.state = ?")
        args.append(state)
    if label:
        where.append(
            "EXISTS (SELECT 1 FROM issue_labels il JOIN labels l ON l.id = il.label_id "
            "WHERE il.issue_id = i.id AND l.name = ?)"
        )
        args.append(label)
    rows = db.execute(
        "SELECT i.id, i.iid, i.title, i.description, i.state, i.due_date, i.created_at, i.updated_at, "
        f"u.username AS author FROM issues i JOIN users u ON u.id = i.author_id WHERE {' AND '.join(where)} "  # noqa: S608
        "ORDER BY i.created_at DESC, i.id DESC",
        args,
    ).fetchall()
    out = []
    for r in rows:
        labels = [
            x[0]
            for x in db.execute(
                "SELECT l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id "
                "WHERE il.issue_id = ? ORDER BY l.name",
                (r["id"],),
            )
        ]
        assignees = [
            x[0]
            for x in db.execute(
                "SELECT u.username FROM issue_assignees a JOIN users u ON "
                "u.id = a.user_id WHERE a.issue_id = ? ORDER BY 1",
                (r["id"],),
            )
        ]
        n_notes = db.execute(
            "SELECT count(*) FROM notes WHERE target_type = 'issue' AND target_id = ? AND system = 0",
            (r["id"],),
        ).fetchone()[0]
        out.append(
            dict(
                r,
                labels=labels,
                assignees=assignees,
                comments=n_notes,
                path=f"/{full_path}/-/issues/{r['iid']}",
            )
        )
    return out


def merge_requests(db: sqlite3.Connection, full_path: str, state: str = "all") -> list[dict]:
    pid = _pid(db, full_path)
    rows = db.execute(
        "SELECT m.id, m.iid, m.title, m.state, m.source_branch, m.target_branch, m.created_at, "
        "u.username AS author FROM merge_requests m JOIN users u ON u.id = m.author_id "
        "WHERE m.project_id = ? AND (? = 'all' OR m.state = ?) ORDER BY m.created_at DESC, m.id DESC",
        (pid, state, state),
    ).fetchall()
    out = []
    for r in rows:
        people = {
            t: [
                x[0]
                for x in db.execute(
                    f"SELECT u.username FROM {t} a JOIN users u ON u.id = a.user_id "  # noqa: S608
                    "WHERE a.mr_id = ? ORDER BY 1",
                    (r["id"],),
                )
            ]
            for t in ("mr_assignees", "mr_reviewers")
        }
        out.append(
            dict(
                r,
                assignees=people["mr_assignees"],
                reviewers=people["mr_reviewers"],
                path=f"/{full_path}/-/merge_requests/{r['iid']}",
            )
        )
    return out


def commits(db: sqlite3.Connection, full_path: str, branch: str = "main") -> list[dict]:
    """Commits of a branch, newest first."""
    return [
        dict(r)
        for r in db.execute(
            "SELECT sha, message, author_name, author_email, authored_at FROM commits WHERE project_id = ? AND "
            "branch = ? ORDER BY authored_at DESC, id DESC",
            (_pid(db, full_path), branch),
        )
    ]


def commit_counts(db: sqlite3.Connection, full_path: str, branch: str = "main") -> list[tuple[str, int]]:
    """(author name, commits) on a branch, most commits first — what /-/graphs/<branch> shows."""
    return [
        (r[0], r[1])
        for r in db.execute(
            "SELECT author_name, count(*) AS n FROM commits WHERE project_id = ? AND branch = ? GROUP BY author_name "
            "ORDER BY n DESC, author_name",
            (_pid(db, full_path), branch),
        )
    ]


def user(db: sqlite3.Connection, username: str) -> dict | None:
    row = db.execute(
        "SELECT username, name, email, bio, status_message, website, location, feed_token FROM users "
        "WHERE username = ?",
        (username,),
    ).fetchone()
    return None if row is None else dict(row)


def users(db: sqlite3.Connection) -> list[dict]:
    return [dict(r) for r in db.execute("SELECT username, name FROM users ORDER BY id")]


def following(db: sqlite3.Connection, username: str) -> list[str]:
    return [
        r[0]
        for r in db.execute(
            "SELECT b.username FROM follows f JOIN users a ON a.id = f.follower_id JOIN users b ON b.id = f.followee_id "
            "WHERE a.username = ? ORDER BY 1",
            (username,),
        )
    ]


def access_tokens(db: sqlite3.Connection, username: str) -> list[dict]:
    """Active personal access tokens (name, scopes list, expiry), newest first."""
    return [
        dict(name=r[0], scopes=r[1].split(","), expires_at=r[2])
        for r in db.execute(
            "SELECT t.name, t.scopes, t.expires_at FROM personal_access_tokens t JOIN users u ON u.id = t.user_id "
            "WHERE u.username = ? AND t.revoked = 0 ORDER BY t.created_at DESC, t.id DESC",
            (username,),
        )
    ]
