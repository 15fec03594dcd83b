"""What issues and merge requests share: list filters and sorts, notes, assignee/reviewer sets, system notes."""

from __future__ import annotations

import sqlite3
from typing import Any

from flask import request

from sites.core import get_db
from sites.gitlab.util import now_ts

SORTS = {
    "created_date": "x.created_at DESC",
    "created_desc": "x.created_at DESC",
    "created_asc": "x.created_at ASC",
    "updated_desc": "x.updated_at DESC",
    "updated_asc": "x.updated_at ASC",
    "due_date": "x.due_date IS NULL, x.due_date ASC",
    "due_date_desc": "x.due_date IS NULL, x.due_date DESC",
    "title_asc": "x.title COLLATE NOCASE ASC",
    "title_desc": "x.title COLLATE NOCASE DESC",
}
# Condition over alias `x` (an issue or merge request) that its project is visible to user ? (dashboards).
VISIBLE = (
    "((SELECT visibility FROM projects WHERE id = x.project_id) != 'private' OR EXISTS (SELECT 1 FROM "
    "project_members m WHERE m.project_id = x.project_id AND m.user_id = ?))"
)
# kind -> (table, note target type, assignee table, its key column)
KINDS = {
    "issue": ("issues", "issue", "issue_assignees", "issue_id"),
    "merge_request": ("merge_requests", "merge_request", "mr_assignees", "mr_id"),
}


def filters(kind: str, states: tuple[str, ...]) -> tuple[list[str], list[Any], dict[str, Any]]:
    """SQL conditions over alias `x` from the query string (GitLab's parameter names), and the parsed values."""
    table, _, assignees, key = KINDS[kind]
    a = request.args
    state = a.get("state", "opened")
    state = state if state in (*states, "all") else "opened"
    where: list[str] = []
    params: list[Any] = []
    if state != "all":
        where.append("x.state = ?")
        params.append(state)
    for label in a.getlist("label_name[]") + a.getlist("label_name"):
        if kind == "issue":
            where.append(
                "EXISTS (SELECT 1 FROM issue_labels il JOIN labels l ON l.id = il.label_id "
                "WHERE il.issue_id = x.id AND l.name = ?)"
            )
            params.append(label)
    if a.get("assignee_username"):
        where.append(
            f"EXISTS (SELECT 1 FROM {assignees} t JOIN users u ON u.id = t.user_id "  # noqa: S608
            f"WHERE t.{key} = x.id AND u.username = ?)"
        )
        params.append(a["assignee_username"])
    if kind == "merge_request" and a.get("reviewer_username"):
        where.append(
            "EXISTS (SELECT 1 FROM mr_reviewers t JOIN users u ON u.id = t.user_id "
            "WHERE t.mr_id = x.id AND u.username = ?)"
        )
        params.append(a["reviewer_username"])
    if a.get("author_username"):
        where.append("x.author_id = (SELECT id FROM users WHERE username = ?)")
        params.append(a["author_username"])
    if a.get("search"):
        where.append("(x.title LIKE ? OR x.description LIKE ?)")
        params += [f"%{a['search']}%"] * 2
    sort = a.get("sort", "created_date")
    values = {
        "state": state,
        "sort": sort if sort in SORTS else "created_date",
        "labels": a.getlist("label_name[]") + a.getlist("label_name"),
        "assignee_username": a.get("assignee_username", ""),
        "author_username": a.get("author_username", ""),
        "reviewer_username": a.get("reviewer_username", ""),
        "search": a.get("search", ""),
    }
    return where, params, values


def state_counts(kind: str, base_where: list[str], base_params: list[Any]) -> dict[str, int]:
    """Counts per state for the tabs, under every filter except the state itself."""
    table = KINDS[kind][0]
    where = " AND ".join(base_where) or "1"
    rows = (
        get_db()
        .execute(
            f"SELECT x.state, count(*) FROM {table} x WHERE {where} GROUP BY x.state",  # noqa: S608
            base_params,
        )
        .fetchall()
    )
    counts = {r[0]: r[1] for r in rows}
    counts["all"] = sum(counts.values())
    return counts


def users_of(table: str, key: str, target_id: int) -> list[sqlite3.Row]:
    return (
        get_db()
        .execute(
            f"SELECT u.id, u.username, u.name FROM {table} t JOIN users u ON u.id = t.user_id "  # noqa: S608
            f"WHERE t.{key} = ? ORDER BY u.name",
            (target_id,),
        )
        .fetchall()
    )


def set_users(table: str, key: str, target_id: int, user_ids: list[int]) -> None:
    db = get_db()
    db.execute(f"DELETE FROM {table} WHERE {key} = ?", (target_id,))  # noqa: S608
    db.executemany(
        f"INSERT INTO {table} ({key}, user_id) VALUES (?,?)",  # noqa: S608
        [(target_id, u) for u in dict.fromkeys(user_ids)],
    )


def notes_of(kind: str, target_id: int) -> list[sqlite3.Row]:
    return (
        get_db()
        .execute(
            "SELECT n.*, u.username, u.name FROM notes n JOIN users u ON u.id = n.author_id "
            "WHERE n.target_type = ? AND n.target_id = ? ORDER BY n.created_at, n.id",
            (kind, target_id),
        )
        .fetchall()
    )


def add_note(kind: str, target_id: int, author_id: int, body: str, system: bool = False) -> None:
    table = KINDS[kind][0]
    ts = now_ts()
    db = get_db()
    db.execute(
        "INSERT INTO notes (target_type, target_id, author_id, body, system, created_at) VALUES (?,?,?,?,?,?)",
        (kind, target_id, author_id, body, int(system), ts),
    )
    db.execute(f"UPDATE {table} SET updated_at = ? WHERE id = ?", (ts, target_id))  # noqa: S608


def member_choices(project_id: int) -> list[sqlite3.Row]:
    return (
        get_db()
        .execute(
            "SELECT u.id, u.username, u.name FROM project_members m JOIN users u ON u.id = m.user_id "
            "WHERE m.project_id = ? ORDER BY u.name COLLATE NOCASE",
            (project_id,),
        )
        .fetchall()
    )


def user_ids_from_form(field: str, project_id: int) -> list[int]:
    """User ids from a multi-select; only project members may be assigned (as in GitLab)."""
    allowed = {r["id"] for r in member_choices(project_id)}
    ids = []
    for v in request.form.getlist(field):
        if v.isdigit() and int(v) in allowed:
            ids.append(int(v))
        elif v:
            from flask import abort

            abort(400, f"user {v} is not a member of this project")
    return ids
