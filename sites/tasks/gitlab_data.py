"""Seeded-data lookups and word pools behind the code host (gitlab) templates, kept apart from the template table.

Every row comes from `sites.gitlab.queries` (or the same SQL the pages run) over the seeded database, so reference
answers are what the pages show. The texts written by tasks (issue titles, comments, statuses) are this project's.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sites.gitlab import queries as GQ
from sites.gitlab.util import ROLE_LEVELS, ROLES, short_date
from sites.tasks.base import Instance, SeedData, pick
from sites.tasks.steps import Go

ME = "byteblaze"
MAX_NOTES_VISIBLE = 4  # issue / MR pages whose sidebar and comment box fit a small observation budget

ISSUE_TITLES = [
    "Document the release checklist",
    "Flaky test in the CI pipeline on Mondays",
    "Add a dark mode toggle to the settings page",
    "Broken link in the contributing guide",
    "Support exporting results as CSV",
    "Upgrade the linter to the latest version",
    "Crash when the config file is empty",
    "Clarify the licence section of the README",
    "Add keyboard shortcuts to the editor",
    "Cache downloads between builds",
    "Translate the error messages",
    "Show the build number in the footer",
]
NOTES = [
    "Looks good to me, thanks!",
    "Could you add a test for the empty case?",
    "Rebased on main, please re-check.",
    "I will review this tomorrow morning.",
    "Nice cleanup, approving.",
    "Please split this into two commits.",
    "Tested locally, works as expected.",
    "Can we update the changelog too?",
]
STATUSES = [
    "Reviewing merge requests",
    "On vacation until Monday",
    "Focusing on the release",
    "Pairing with the docs team",
    "Out sick, back soon",
    "Working on accessibility fixes",
    "Travelling, slow to reply",
    "Heads down on a refactor",
    "Available for code review",
    "At a conference this week",
    "Mentoring new contributors",
    "Writing the quarterly report",
]
TOKENS = [
    ("ci-deploy", "api"),
    ("backup-script", "read_repository"),
    ("dashboard-reader", "read_api"),
    ("mirror-sync", "write_repository"),
    ("profile-bot", "read_user"),
    ("runner-setup", "create_runner"),
    ("release-tool", "api"),
    ("metrics-export", "read_api"),
    ("docs-publisher", "write_repository"),
    ("audit-reader", "read_user"),
    ("nightly-build", "read_repository"),
    ("chatops", "api"),
]


def conn(db: SeedData) -> sqlite3.Connection:
    return db.conn("gitlab")


def inst(tid: int, rows: list[dict[str, Any]]) -> list[Instance]:
    return [Instance(tid, i, r["values"], r.get("data", {})) for i, r in enumerate(rows)]


def visible_projects(db: SeedData) -> list[dict]:
    """Projects the default user can open: public ones and those he is a member of."""
    mine = set(GQ.member_projects(conn(db), ME))
    return [p for p in GQ.projects(conn(db)) if p["visibility"] != "private" or p["full_path"] in mine]


def my_projects(db: SeedData, min_role: str = "Guest") -> list[str]:
    """Projects where the default user's role is at least `min_role`."""
    c = conn(db)
    return [
        fp for fp in GQ.member_projects(c, ME) if ROLE_LEVELS[GQ.members(c, fp)[ME]] >= ROLE_LEVELS[min_role]
    ]


def contributors(db: SeedData, full_path: str) -> list[tuple[str, int]]:
    """(author, commits) rows of the contributors page, for authors that appear on one row (one e-mail)."""
    pid = GQ.project(conn(db), full_path)["id"]
    rows = (
        conn(db)
        .execute(
            "SELECT author_name, count(*) FROM commits WHERE project_id = ? AND branch = 'main' "
            "GROUP BY author_name, author_email ORDER BY count(*) DESC, author_name",
            (pid,),
        )
        .fetchall()
    )
    names = [r[0] for r in rows]
    return [(r[0], r[1]) for r in rows if names.count(r[0]) == 1]


def member_rows(db: SeedData, full_path: str) -> list[tuple[str, str]]:
    """(username, role) in the order of the members page (highest role first, then by name)."""
    pid = GQ.project(conn(db), full_path)["id"]
    rows = (
        conn(db)
        .execute(
            "SELECT u.username, m.access_level FROM project_members m JOIN users u ON "
            "u.id = m.user_id WHERE m.project_id = ? ORDER BY m.access_level DESC, "
            "u.name COLLATE NOCASE",
            (pid,),
        )
        .fetchall()
    )
    return [(r[0], ROLES[r[1]]) for r in rows]


def quiet_issues(db: SeedData, full_path: str, state: str = "all") -> list[dict]:
    """Issues with few comments and system notes, so their page (sidebar included) fits a small budget."""
    out = []
    for i in GQ.issues(conn(db), full_path, state):
        notes = (
            conn(db)
            .execute("SELECT count(*) FROM notes WHERE target_type = 'issue' AND target_id = ?", (i["id"],))
            .fetchone()[0]
        )
        if notes <= MAX_NOTES_VISIBLE and len(i["description"]) < 400:
            out.append(i)
    return out


def quiet_mrs(db: SeedData, full_path: str) -> list[dict]:
    out = []
    for m in GQ.merge_requests(conn(db), full_path):
        notes = (
            conn(db)
            .execute(
                "SELECT count(*) FROM notes WHERE target_type = 'merge_request' AND target_id = ?", (m["id"],)
            )
            .fetchone()[0]
        )
        if notes <= MAX_NOTES_VISIBLE:
            out.append(m)
    return out


def note_bodies(db: SeedData, kind: str, target_id: int) -> str:
    """Every comment on an issue or merge request, joined (what `#notes-list` shows)."""
    rows = conn(db).execute(
        "SELECT body FROM notes WHERE target_type = ? AND target_id = ?", (kind, target_id)
    )
    return "\n".join(r[0] for r in rows)


def user_name(db: SeedData, username: str) -> str:
    row = GQ.user(conn(db), username)
    if row is None:
        raise KeyError(username)
    return row["name"]


def due(value: str) -> str:
    return short_date(value)


def dashboard_count(db: SeedData, kind: str, role: str, state: str) -> int:
    """What /dashboard/<kind>?<role>_username=byteblaze counts in a state tab (visible projects only)."""
    c = conn(db)
    table, people = ("issues", "issue_assignees") if kind == "issues" else ("merge_requests", "mr_assignees")
    key = "issue_id" if kind == "issues" else "mr_id"
    me = c.execute("SELECT id FROM users WHERE username = ?", (ME,)).fetchone()[0]
    if role == "assignee":
        who = f"EXISTS (SELECT 1 FROM {people} t WHERE t.{key} = x.id AND t.user_id = ?)"
    elif role == "reviewer":
        who = "EXISTS (SELECT 1 FROM mr_reviewers t WHERE t.mr_id = x.id AND t.user_id = ?)"
    else:
        who = "x.author_id = ?"
    vis = (
        "((SELECT visibility FROM projects WHERE id = x.project_id) != 'private' OR EXISTS (SELECT 1 FROM "
        "project_members m WHERE m.project_id = x.project_id AND m.user_id = ?))"
    )
    sql = f"SELECT count(*) FROM {table} x WHERE {who} AND {vis} AND x.state = ?"  # noqa: S608 - fixed names
    return c.execute(sql, (me, me, state)).fetchone()[0]


def sample_projects(db: SeedData, n: int, seed: int, cond: Any = None) -> list[dict]:
    """A deterministic sample of the projects the default user can open (those meeting `cond`)."""
    return pick([p for p in visible_projects(db) if cond is None or cond(p)], n, seed)


def issue_rows(db: SeedData, paths: list[str], state: str, cond: Any, n: int, seed: int) -> list[dict]:
    """A deterministic sample of quiet issues (with their project as `fp`) of the given projects."""
    return pick([dict(i, fp=fp) for fp in paths for i in quiet_issues(db, fp, state) if cond(i)], n, seed)


def go_issue(i: Instance) -> Any:
    return Go(f"/{i.values['project']}/-/issues/{i.values['iid']}", why=f"open issue #{i.values['iid']}")
