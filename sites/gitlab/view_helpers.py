"""View helpers shared by the code host's route modules: the signed-in user, roles, lookups that 404, project lists.

A leaf below `app.py` and the `views_*.py` modules, so the route modules never import each other or the app.
"""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import urlencode

from flask import abort, g, redirect, request, url_for

from sites.core import current_user_id, get_db, page_of
from sites.gitlab.constants import PAGE_SIZE
from sites.gitlab.util import ROLES

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
