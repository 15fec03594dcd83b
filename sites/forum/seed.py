"""Deterministic seed of the forum: ~30 forums, 100 users, ~2000 posts, ~8000 comments, votes, subscriptions.

`seed(db_path)` builds the file from scratch with random.Random(SEED), so the same code always gives the same data
(task suites compute their reference answers from it).
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from sites.auth import hash_password
from sites.forum import seed_text as T
from sites.forum.constants import DEFAULT_PASSWORD, DEFAULT_USER, SEED
from sites.forum.util import TS_FORMAT, hot_score

SCHEMA = Path(__file__).with_name("schema.sql")
N_USERS = 100
N_POSTS = 2000
N_COMMENTS = 8000
START = datetime(2022, 6, 1)
END = datetime(2023, 5, 31, 23, 59)
# Forums the default user is subscribed to (MachineLearning deliberately not, so "subscribe" tasks change state).
DEFAULT_SUBSCRIPTIONS = ["books", "gaming", "movies", "nyc", "pics", "technology"]


def _ts(rng: random.Random, lo: datetime, hi: datetime) -> str:
    span = max(int((hi - lo).total_seconds()), 1)
    return (lo + timedelta(seconds=rng.randrange(span))).strftime(TS_FORMAT)


def _usernames(rng: random.Random) -> list[str]:
    names = {DEFAULT_USER}
    while len(names) < N_USERS:
        a, b = rng.choice(T.NAME_PARTS_A), rng.choice(T.NAME_PARTS_B)
        style = rng.randrange(3)
        names.add(
            f"{a}{b}{rng.randrange(10, 999)}"
            if style == 0
            else f"{a.lower()}_{b.lower()}"
            if style == 1
            else f"{b}{a}"
        )
    rest = sorted(names - {DEFAULT_USER})
    rng.shuffle(rest)
    return [DEFAULT_USER, *rest]


def _users(conn: sqlite3.Connection, rng: random.Random) -> list[int]:
    rows = []
    for i, name in enumerate(_usernames(rng), start=1):
        bio = "" if i == 1 else rng.choice(T.BIOGRAPHIES)
        # Salt from the name keeps the file deterministic; other users share one practice password.
        pw = hash_password(DEFAULT_PASSWORD if i == 1 else "Password.123", f"forum-{name}")
        rows.append((i, name, pw, bio, _ts(rng, START - timedelta(days=900), START)))
    conn.executemany("INSERT INTO users VALUES (?,?,?,?,?)", rows)
    return [r[0] for r in rows]


def _forums(conn: sqlite3.Connection, rng: random.Random, users: list[int]) -> dict[int, str]:
    rows = []
    for i, (name, (title, desc, topics)) in enumerate(T.FORUMS.items(), start=1):
        sidebar = f"Welcome to /f/{name}. Be civil, stay on topic about {topics[0]} and friends."
        rows.append(
            (
                i,
                name,
                title,
                desc,
                sidebar,
                rng.choice(users[1:]),
                _ts(rng, START - timedelta(days=700), START),
            )
        )
    conn.executemany("INSERT INTO forums VALUES (?,?,?,?,?,?,?)", rows)
    return {r[0]: r[1] for r in rows}


def _title(rng: random.Random, topic: str) -> str:
    t = rng.choice(T.TITLE_TEMPLATES)
    return t.format(t=topic, T=topic[0].upper() + topic[1:], year=rng.choice([2022, 2023]))


def _posts(
    conn: sqlite3.Connection, rng: random.Random, users: list[int], forums: dict[int, str]
) -> list[tuple]:
    # Popular forums get more posts; weights are fixed by position so the spread is deterministic.
    fids = list(forums)
    weights = [
        3 if forums[f] in ("books", "gaming", "movies", "pics", "technology", "askforum") else 1 for f in fids
    ]
    seen: set[tuple[int, str]] = set()
    rows = []
    while len(rows) < N_POSTS:
        fid = rng.choices(fids, weights)[0]
        topics = T.FORUMS[forums[fid]][2]
        topic = rng.choice(topics)
        title = _title(rng, topic)
        if (fid, title) in seen:
            continue
        seen.add((fid, title))
        kind = rng.random()
        url = image = None
        body = ""
        if forums[fid] in ("pics", "earthscapes") and kind < 0.8:
            image = hashlib.sha256(f"{fid}-{len(rows)}".encode()).hexdigest() + ".jpg"
        elif kind < 0.25:
            slug = "-".join(title.lower().split()[:6]).strip("?:!.")
            url = f"https://{rng.choice(T.LINK_DOMAINS)}/{rng.choice([2022, 2023])}/{slug}"
        if url is None or rng.random() < 0.3:
            body = " ".join(s.format(t=topic) for s in rng.sample(T.BODY_SENTENCES, rng.randint(1, 4)))
        up = min(int(rng.paretovariate(1.1) * 4), 4000)
        down = int(up * rng.random() * 0.3)
        created = _ts(rng, START, END)
        rows.append([len(rows) + 1, fid, rng.choice(users), title, body, url, image, created, None, up, down])
    rows.sort(key=lambda r: r[7])  # ids grow with time, as in a real forum
    for i, r in enumerate(rows, start=1):
        r[0] = i
    conn.executemany(
        "INSERT INTO submissions VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [(*r, hot_score(r[9], r[10], r[7])) for r in rows],
    )
    return [tuple(r) for r in rows]


def _comments(
    conn: sqlite3.Connection, rng: random.Random, users: list[int], posts: list[tuple], forums: dict[int, str]
) -> None:
    end = END + timedelta(days=10)
    by_post: dict[int, list[tuple[int, str]]] = {}
    rows = []
    weights = [1 + min(p[9], 400) for p in posts]  # busier posts draw more comments
    for cid in range(1, N_COMMENTS + 1):
        post = rng.choices(posts, weights)[0]
        topic = rng.choice(T.FORUMS[forums[post[1]]][2])
        earlier = by_post.setdefault(post[0], [])
        parent = None
        lo = datetime.strptime(post[7], TS_FORMAT)
        if earlier and rng.random() < 0.4:
            parent, parent_ts = rng.choice(earlier)
            lo = datetime.strptime(parent_ts, TS_FORMAT)
        created = _ts(rng, lo, min(lo + timedelta(days=5), end))
        body = " ".join(s.format(t=topic) for s in rng.sample(T.COMMENT_SENTENCES, rng.randint(1, 3)))
        up = int(rng.paretovariate(1.5) * 2) - 1
        down = rng.randrange(0, 6) if rng.random() < 0.25 else 0
        rows.append((cid, post[0], parent, rng.choice(users), body, created, None, up, down))
        earlier.append((cid, created))
    conn.executemany("INSERT INTO comments VALUES (?,?,?,?,?,?,?,?,?)", rows)


def _votes_and_subscriptions(
    conn: sqlite3.Connection, rng: random.Random, users: list[int], forums: dict[int, str]
) -> None:
    n_posts = conn.execute("SELECT count(*) FROM submissions").fetchone()[0]
    votes = {(rng.choice(users), rng.randint(1, n_posts)): rng.choice([1, 1, 1, -1]) for _ in range(3000)}
    conn.executemany(
        "INSERT INTO submission_votes VALUES (?,?,?)", [(u, s, c) for (u, s), c in votes.items()]
    )
    # The cached counts already include these voters (the seed counts stand for all votes ever cast).
    for (_u, sid), c in votes.items():
        col = "upvotes" if c > 0 else "downvotes"
        conn.execute(f"UPDATE submissions SET {col} = {col} + 1 WHERE id = ?", (sid,))  # noqa: S608 - fixed names
    n_comments = conn.execute("SELECT count(*) FROM comments").fetchone()[0]
    cvotes = {(rng.choice(users), rng.randint(1, n_comments)): rng.choice([1, 1, -1]) for _ in range(2000)}
    conn.executemany("INSERT INTO comment_votes VALUES (?,?,?)", [(u, c, v) for (u, c), v in cvotes.items()])
    for (_u, cid), c in cvotes.items():
        col = "upvotes" if c > 0 else "downvotes"
        conn.execute(f"UPDATE comments SET {col} = {col} + 1 WHERE id = ?", (cid,))  # noqa: S608
    for row in conn.execute("SELECT id, upvotes, downvotes, created_at FROM submissions").fetchall():
        conn.execute(
            "UPDATE submissions SET hot = ? WHERE id = ?", (hot_score(row[1], row[2], row[3]), row[0])
        )
    by_name = {n: i for i, n in forums.items()}
    subs = {(users[0], by_name[n]) for n in DEFAULT_SUBSCRIPTIONS}
    for u in users[1:]:
        subs.update((u, f) for f in rng.sample(list(forums), rng.randint(2, 9)))
    conn.executemany(
        "INSERT INTO subscriptions VALUES (?,?,?)", [(u, f, _ts(rng, START, END)) for u, f in sorted(subs)]
    )


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
        forums = _forums(conn, rng, users)
        posts = _posts(conn, rng, users, forums)
        _comments(conn, rng, users, posts, forums)
        _votes_and_subscriptions(conn, rng, users, forums)
        conn.commit()
    finally:
        conn.close()
    tmp.replace(path)
    return path
