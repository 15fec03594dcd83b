"""Seed of each project's contents: labels, issues, merge requests, notes, branches, commits, files, todos."""

from __future__ import annotations

import hashlib
import random
import sqlite3
from datetime import datetime, timedelta

from sites.gitlab import seed_text as T
from sites.gitlab.util import END, TS_FORMAT, token, ts


def _title(rng: random.Random, templates: list[str]) -> str:
    return rng.choice(templates).format(
        thing=rng.choice(T.THINGS),
        cond=rng.choice(T.CONDITIONS),
        feature=rng.choice(T.FEATURES),
        event=rng.choice(T.EVENTS),
    )


def _after(rng: random.Random, t: str, days: int = 60) -> str:
    lo = datetime.strptime(t, TS_FORMAT)
    return ts(rng, lo, max(min(lo + timedelta(days=days), END + timedelta(days=30)), lo + timedelta(hours=1)))


def _notes(
    conn: sqlite3.Connection, rng: random.Random, kind: str, target: int, created: str, people: list[int]
) -> str:
    last = created
    for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 5])):
        last = _after(rng, last, 20)
        conn.execute(
            "INSERT INTO notes (target_type, target_id, author_id, body, created_at) VALUES (?,?,?,?,?)",
            (kind, target, rng.choice(people), rng.choice(T.NOTES), last),
        )
    return last


def _issues(
    conn: sqlite3.Connection,
    rng: random.Random,
    p: dict,
    people: list[int],
    labels: list[int],
    all_users: list[int],
) -> None:
    n = min(60, int(rng.random() ** 2 * 12 * p["pop"]))
    for iid in range(1, n + 1):
        created = _after(rng, p["created"], 700)
        author = rng.choice(all_users if rng.random() < 0.5 else people)
        state = "closed" if rng.random() < 0.35 else "opened"
        due = None if rng.random() < 0.8 else _after(rng, created, 120)[:10]
        desc = (
            f"Steps to reproduce:\n1. Open {rng.choice(T.THINGS)}\n2. Try {rng.choice(T.FEATURES)}\n\n"
            f"Expected it to work; it did not ({rng.choice(T.CONDITIONS)})."
        )
        cur = conn.execute(
            "INSERT INTO issues (project_id, iid, title, description, author_id, state, due_date, "
            "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (p["id"], iid, _title(rng, T.ISSUE_TEMPLATES), desc, author, state, due, created, created),
        )
        last = _notes(conn, rng, "issue", cur.lastrowid, created, people + [author])
        closed = None
        if state == "closed":
            closed = _after(rng, last, 30)
            conn.execute(
                "INSERT INTO notes (target_type, target_id, author_id, body, system, created_at) "
                "VALUES ('issue',?,?,'closed',1,?)",
                (cur.lastrowid, rng.choice(people), closed),
            )
            last = closed
        conn.execute(
            "UPDATE issues SET updated_at = ?, closed_at = ? WHERE id = ?", (last, closed, cur.lastrowid)
        )
        for u in rng.sample(people, rng.choice([0, 1, 1, 1, 2]) if people else 0):
            conn.execute("INSERT INTO issue_assignees VALUES (?,?)", (cur.lastrowid, u))
        for lab in rng.sample(labels, rng.choice([0, 1, 1, 2, 3])):
            conn.execute("INSERT INTO issue_labels VALUES (?,?)", (cur.lastrowid, lab))


def _merge_requests(
    conn: sqlite3.Connection, rng: random.Random, p: dict, people: list[int], branches: list[str]
) -> None:
    n = min(20, int(rng.random() ** 2 * 4 * p["pop"]))
    for iid in range(1, n + 1):
        created = _after(rng, p["created"], 700)
        state = rng.choice(["opened", "opened", "merged", "merged", "closed"])
        source = rng.choice(branches[1:]) if len(branches) > 1 else f"patch-{iid}"
        cur = conn.execute(
            "INSERT INTO merge_requests (project_id, iid, title, description, author_id, "
            "source_branch, target_branch, state, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                p["id"],
                iid,
                _title(rng, T.MR_TEMPLATES),
                f"Closes #{rng.randint(1, 30)}.",
                rng.choice(people),
                source,
                "main",
                state,
                created,
                created,
            ),
        )
        last = _notes(conn, rng, "merge_request", cur.lastrowid, created, people)
        conn.execute("UPDATE merge_requests SET updated_at = ? WHERE id = ?", (last, cur.lastrowid))
        for table, k in (("mr_assignees", 1), ("mr_reviewers", rng.choice([0, 1, 1, 2]))):
            for u in rng.sample(people, min(k, len(people))):
                conn.execute(f"INSERT INTO {table} VALUES (?,?)", (cur.lastrowid, u))  # noqa: S608 - fixed names


def _commits(
    conn: sqlite3.Connection,
    rng: random.Random,
    p: dict,
    people: list[int],
    names: dict[int, tuple[str, str]],
    branches: list[str],
) -> None:
    n = rng.randint(3, 12 * p["pop"])
    t = p["created"]
    sha = ""
    rows = []
    for i in range(n):
        t = _after(rng, t, 15) if i else t
        uid = rng.choice(people)
        author, email = names[uid] if rng.random() < 0.85 else ("External Contributor", "contrib@example.net")
        msg = "Initial commit" if i == 0 else rng.choice(T.COMMIT_MESSAGES[:-1])
        sha = hashlib.sha1(f"{p['id']}-{i}-{msg}".encode()).hexdigest()  # noqa: S324 - an id, not security
        rows.append((p["id"], "main", sha, msg, author, email, t))
    conn.executemany(
        "INSERT INTO commits (project_id, branch, sha, message, author_name, author_email, "
        "authored_at) VALUES (?,?,?,?,?,?,?)",
        rows,
    )
    conn.execute("UPDATE projects SET last_activity_at = ? WHERE id = ?", (t, p["id"]))
    for b in branches:
        conn.execute(
            "INSERT INTO branches VALUES (?,?,?)",
            (p["id"], b, sha if b == "main" else rows[rng.randrange(len(rows))][2]),
        )


def _files(conn: sqlite3.Connection, p: dict, desc: str) -> None:
    readme = (
        f"# {p['path']}\n\n{desc}\n\n## Installation\n\nClone the repository and follow the steps below.\n"
    )
    files = {"README.md": readme, "LICENSE": "MIT License\n", ".gitignore": "*.log\nbuild/\n"}
    conn.executemany(
        "INSERT INTO files VALUES (?,?,?,?)", [(p["id"], "main", k, v) for k, v in files.items()]
    )


def seed_repositories(
    conn: sqlite3.Connection,
    rng: random.Random,
    users: list[tuple[int, str, str]],
    projects: list[dict],
    members: dict[int, list[int]],
) -> None:
    names = {u[0]: (u[2], f"{u[1]}@example.com") for u in users}
    all_users = [u[0] for u in users]
    for p in projects:
        people = members[p["id"]]
        label_ids = []
        for name, color in T.LABELS:
            label_ids.append(
                conn.execute(
                    "INSERT INTO labels (project_id, name, color) VALUES (?,?,?)", (p["id"], name, color)
                ).lastrowid
            )
        branches = ["main", *rng.sample(T.BRANCHES, rng.randint(0, 5))]
        desc = conn.execute("SELECT description FROM projects WHERE id = ?", (p["id"],)).fetchone()[0]
        _commits(conn, rng, p, people, names, branches)
        _files(conn, p, desc)
        _issues(conn, rng, p, people, label_ids, all_users)
        _merge_requests(conn, rng, p, people, branches)
    _todos(conn)
    conn.executemany(
        "INSERT INTO personal_access_tokens (user_id, name, scopes, token, created_at, expires_at) "
        "VALUES (1,?,?,?,?,?)",
        [
            (
                "laptop-cli",
                "read_api,read_repository",
                "glpat-" + token(rng),
                "2023-01-10 09:00:00",
                "2024-01-10",
            ),
            ("ci-mirror", "api", "glpat-" + token(rng), "2023-03-02 14:30:00", None),
        ],
    )


def _todos(conn: sqlite3.Connection) -> None:
    """Pending to-do items of the default user: issues assigned to them and merge requests to review."""
    rows = conn.execute(
        "SELECT i.id, i.project_id, i.author_id, i.created_at FROM issues i JOIN issue_assignees a "
        "ON a.issue_id = i.id WHERE a.user_id = 1 AND i.state = 'opened' ORDER BY i.id"
    ).fetchall()
    todo = [(1, r[2], r[1], "issue", r[0], "assigned", r[3]) for r in rows[:12]]
    rows = conn.execute(
        "SELECT m.id, m.project_id, m.author_id, m.created_at FROM merge_requests m JOIN mr_reviewers "
        "r ON r.mr_id = m.id WHERE r.user_id = 1 AND m.state = 'opened' ORDER BY m.id"
    ).fetchall()
    todo += [(1, r[2], r[1], "merge_request", r[0], "review_requested", r[3]) for r in rows[:8]]
    conn.executemany(
        "INSERT INTO todos (user_id, author_id, project_id, target_type, target_id, action, created_at) "
        "VALUES (?,?,?,?,?,?,?)",
        todo,
    )
