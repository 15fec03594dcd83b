"""Deterministic seed of the code host: 40 users, 7 groups, ~60 projects with members, stars, follows, then
(seed_repo.py) labels, issues, merge requests, notes, branches, commits, files, todos and tokens.

`seed(db_path)` builds the file from scratch with random.Random(SEED); the same code always gives the same data.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import timedelta
from pathlib import Path

from sites.auth import hash_password
from sites.gitlab import seed_text as T
from sites.gitlab.constants import DEFAULT_PASSWORD, DEFAULT_USER, SEED
from sites.gitlab.seed_repo import seed_repositories
from sites.gitlab.util import END, START, token, ts

SCHEMA = Path(__file__).with_name("schema.sql")
N_USERS = 40


def _users(conn: sqlite3.Connection, rng: random.Random) -> list[tuple[int, str, str]]:
    people = [(DEFAULT_USER, "Byte Blaze")]
    taken = {DEFAULT_USER}
    firsts, lasts = T.FIRST[:], T.LAST[:]
    rng.shuffle(firsts)
    while len(people) < N_USERS:
        first, last = firsts[len(people) % len(firsts)], rng.choice(lasts)
        style = rng.randrange(3)
        username = (
            first.lower()
            if style == 0
            else f"{first[0]}{last}".lower()
            if style == 1
            else f"{first}{last}{rng.randrange(10, 99)}".lower()
        )
        if username in taken:
            continue
        taken.add(username)
        people.append((username, f"{first} {last}"))
    rows = []
    for i, (username, name) in enumerate(people, start=1):
        pw = hash_password(DEFAULT_PASSWORD if i == 1 else "Password.123", f"gitlab-{username}")
        emoji, msg = ("", "") if i == 1 else rng.choice(T.STATUS)
        rows.append(
            (
                i,
                username,
                name,
                f"{username}@example.com",
                pw,
                ""
                if i == 1
                else rng.choice(
                    ["", "Open source enthusiast.", "Maintainer of small tools.", "Accessibility advocate."]
                ),
                emoji,
                msg,
                "" if rng.random() < 0.7 else f"https://{username}.example.org",
                rng.choice(["", "Berlin", "Lagos", "Toronto", "Osaka", "Lisbon"]),
                token(rng),
                ts(rng, START - timedelta(days=700), START),
            )
        )
    conn.executemany("INSERT INTO users VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    conn.executemany(
        "INSERT INTO namespaces (id, path, name, kind, owner_id) VALUES (?,?,?,'user',?)",
        [(r[0], r[1], r[2], r[0]) for r in rows],
    )
    return [(r[0], r[1], r[2]) for r in rows]


def _groups(
    conn: sqlite3.Connection, rng: random.Random, users: list[tuple[int, str, str]]
) -> dict[str, int]:
    ids = {}
    for path, (name, desc) in T.GROUPS.items():
        cur = conn.execute(
            "INSERT INTO namespaces (path, name, kind, owner_id, description) VALUES (?,?,'group',?,?)",
            (path, name, rng.choice(users[1:])[0], desc),
        )
        ids[path] = cur.lastrowid
    return ids


def _projects(
    conn: sqlite3.Connection, rng: random.Random, users: list[tuple[int, str, str]], groups: dict[str, int]
) -> list[dict]:
    user_ns = {u[1]: u[0] for u in users}
    specs = list(T.PROJECTS)
    owners = rng.sample(users[1:], len(T.USER_PROJECTS))
    specs += [(owner[1], *spec) for owner, spec in zip(owners, T.USER_PROJECTS, strict=True)]
    projects = []
    for ns, path, desc, lang, pop in specs:
        ns_id = groups.get(ns) or user_ns[ns]
        vis = (
            "private"
            if (ns == DEFAULT_USER and path == "homelab-ansible") or rng.random() < 0.05
            else "public"
        )
        created = ts(rng, START, END - timedelta(days=60))
        cur = conn.execute(
            "INSERT INTO projects (namespace_id, path, name, description, visibility, language, "
            "created_at, last_activity_at) VALUES (?,?,?,?,?,?,?,?)",
            (ns_id, path, path, desc, vis, lang, created, created),
        )
        projects.append(
            {
                "id": cur.lastrowid,
                "ns": ns,
                "path": path,
                "pop": pop,
                "created": created,
                "owner": None if ns in groups else user_ns[ns],
                "group": ns in groups,
            }
        )
    return projects


def _members(
    conn: sqlite3.Connection, rng: random.Random, users: list[tuple[int, str, str]], projects: list[dict]
) -> dict[int, list[int]]:
    """Direct members of every project; the default user is in many group projects so dashboards are full."""
    members: dict[int, list[int]] = {}
    for p in projects:
        levels: dict[int, int] = {}
        if p["owner"]:
            levels[p["owner"]] = 50
        else:
            levels[rng.choice(users[1:])[0]] = 50
            if rng.random() < 0.6:
                levels.setdefault(1, rng.choice([30, 30, 40, 20]))
        for u in rng.sample(users[1:], rng.randint(1, 8)):
            levels.setdefault(u[0], rng.choice([10, 20, 30, 30, 30, 40]))
        conn.executemany(
            "INSERT INTO project_members (project_id, user_id, access_level, created_at) VALUES (?,?,?,?)",
            [(p["id"], u, lvl, p["created"]) for u, lvl in levels.items()],
        )
        members[p["id"]] = list(levels)
    return members


def _social(
    conn: sqlite3.Connection, rng: random.Random, users: list[tuple[int, str, str]], projects: list[dict]
) -> None:
    stars = set()
    for p in projects:
        for u in rng.sample(users, min(len(users), rng.randint(0, p["pop"] * 3))):
            stars.add((u[0], p["id"]))
    stars.discard((1, next(p["id"] for p in projects if p["path"] == "react-starter")))  # a star left to give
    conn.executemany("INSERT INTO stars VALUES (?,?,?)", [(u, p, ts(rng)) for u, p in sorted(stars)])
    follows = {(a[0], b[0]) for a in users for b in rng.sample(users, rng.randint(0, 5)) if a != b}
    conn.executemany("INSERT INTO follows VALUES (?,?)", sorted(follows))


def seed(db_path: str | Path) -> Path:
    """Writes a fresh seeded database at db_path (replacing any file there) and returns the path."""
    path = Path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    rng = random.Random(SEED)
    conn = sqlite3.connect(tmp)
    try:
        conn.executescript(SCHEMA.read_text())
        users = _users(conn, rng)
        groups = _groups(conn, rng, users)
        projects = _projects(conn, rng, users, groups)
        members = _members(conn, rng, users, projects)
        _social(conn, rng, users, projects)
        seed_repositories(conn, rng, users, projects, members)
        conn.commit()
    finally:
        conn.close()
    tmp.replace(path)
    return path
