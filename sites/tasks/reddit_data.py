"""Seeded-data lookups, word pools and shared expert steps behind the forum (reddit) templates.

Every row comes from `sites.forum.queries` over the seeded database, so reference answers are what the pages show.
The texts written by tasks (titles, comments, biographies) are this project's own.
"""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from sites.forum import queries as FQ
from sites.forum.seed_text import FORUMS
from sites.tasks.base import Instance, SeedData, pick
from sites.tasks.steps import Click, Fill, M

ME = "MarvelsGrandpa"
# Posts whose page (post, comments and the forum sidebar) fits in a small observation budget.
MAX_COMMENTS_VISIBLE = 3

TITLE_FORMS = [
    "Weekly thread: share your favourite {t}",
    "Beginner question about {t}",
    "A small win with {t} today",
    "What changed your mind about {t}?",
    "Field notes on {t}",
    "Is anyone else tracking {t} this month?",
    "Lessons learned from {t}",
    "Five minutes on {t}: my take",
]
COMMENTS = [
    "Thanks for sharing, this was useful.",
    "I had the same experience last spring.",
    "Could you post a follow-up next week?",
    "Great point, I had not thought of that.",
    "Saving this thread for the weekend.",
    "Respectfully, I see it differently.",
    "This made my morning, thank you.",
    "Where did you read about this?",
    "Agreed, and the comments here are gold.",
    "Welcome aboard, glad you posted this.",
]
BIOS = [
    "Amateur astronomer and weekend baker.",
    "Retired teacher who reads too many mysteries.",
    "I collect old maps and fix bicycles.",
    "Grandfather of four, fan of crossword puzzles.",
    "Writing about trains, tea and tiny gardens.",
    "Lifelong learner; currently into woodworking.",
    "Chess player, birdwatcher, occasional poet.",
    "Here for the history threads and the puns.",
    "Former sailor, current dog walker.",
    "Keeping notes on every library in town.",
    "Jazz records, sourdough and long walks.",
    "Volunteer at the community radio station.",
]
NEW_TITLES = [
    "An update after one year",
    "Revisited: my original question",
    "Short version of my earlier post",
    "Corrected title: see the body for details",
    "Follow-up with better photos",
    "Answered: thanks everyone",
    "Still looking for advice on this",
]
SEARCHES = [
    "audiobooks",
    "speedrunning",
    "subway",
    "vinyl",
    "lighthouse",
    "bagels",
    "mural",
    "ferry",
    "gradient checkpointing",
    "film festival",
    "rent",
    "practical effects",
    "coffee roasters",
    "snowstorm",
    "retro cartridges",
    "dad jokes",
]


def conn(db: SeedData) -> sqlite3.Connection:
    return db.conn("forum")


def inst(tid: int, rows: list[dict[str, Any]]) -> list[Instance]:
    return [Instance(tid, i, r["values"], r.get("data", {})) for i, r in enumerate(rows)]


def comments_label(n: int) -> str:
    """The text of a post's comments link: '1 comment', '3 comments'."""
    return f"{n} comment{'' if n == 1 else 's'}"


def searchable_posts(db: SeedData) -> list[dict]:
    """Posts whose title is unique and which the site search finds alone when searched by that title."""
    c = conn(db)
    titles = {r[0] for r in c.execute("SELECT title FROM submissions GROUP BY title HAVING count(*) = 1")}
    rows = [p for p in FQ.all_posts(c, "new") if p["title"] in titles]
    out = []
    for p in pick_rows(rows, 120, 3000):
        like = f"%{p['title']}%"
        hits = c.execute(
            "SELECT count(*) FROM submissions WHERE title LIKE ? OR body LIKE ?", (like, like)
        ).fetchone()
        if hits[0] == 1 and "%" not in p["title"] and "_" not in p["title"]:
            out.append(p)
    return out


def pick_rows(rows: list[Any], n: int, seed: int) -> list[Any]:
    return pick(rows, n, seed)


def forum_names(db: SeedData) -> list[str]:
    return [f["name"] for f in FQ.forums(conn(db))]


def small_post(db: SeedData, forum: str) -> dict:
    """A post of `forum` with few comments, whose page shows the forum's sidebar within a small budget."""
    posts = [
        p for p in FQ.forum_posts(conn(db), forum, "new") if p["n_comments"] <= 1 and len(p["body"]) < 200
    ]
    if not posts:
        raise ValueError(f"forum {forum!r} has no small post")
    return posts[0]


def my_recent_posts(db: SeedData, n: int = 5) -> list[dict]:
    """The default user's newest posts (the ones his profile shows first), with titles unique among his posts."""
    mine = FQ.user_posts(conn(db), ME)
    titles = [p["title"] for p in mine]
    return [p for p in mine[:n] if sum(p["title"] in t for t in titles) == 1]


def reply_targets(db: SeedData) -> list[dict]:
    """(post, top-level comment without replies) pairs on small posts, the commenter unique on the page."""
    c, out = conn(db), []
    for p in searchable_posts(db):
        cs = FQ.comments(c, p["id"])
        if not 1 <= len(cs) <= MAX_COMMENTS_VISIBLE or p["author"] == ME:
            continue
        authors = [x["author"] for x in cs] + [p["author"]]
        for x in cs:
            has_reply = any(y["parent_id"] == x["id"] for y in cs)
            if (
                x["parent_id"] is None
                and not has_reply
                and authors.count(x["author"]) == 1
                and x["author"] != ME
            ):
                out.append({"post": p, "comment": x})
                break
    return out


def new_titles(n: int, seed: int) -> list[tuple[str, str]]:
    """(forum, fresh title) pairs from the forums' own topics, never equal to a seeded title."""
    rng = random.Random(seed)
    names = sorted(FORUMS)
    out = []
    for _ in range(n):
        forum = rng.choice(names)
        topic = rng.choice(FORUMS[forum][2])
        out.append((forum, rng.choice(TITLE_FORMS).format(t=topic)))
    return out


def open_forum(forum: str) -> list[Any]:
    return [
        Click(M("a", "Forums"), why="open the list of forums"),
        Click(M("a", forum), why=f"open /f/{forum}"),
    ]


def open_post(title: str, n_comments: int) -> list[Any]:
    """Search the forum for a post's title and open it through its comments link."""
    return [
        Fill(M("input", name="q"), title, enter=True, why="search for the post by its title"),
        Click(M("a", comments_label(n_comments)), why="open the post and its comments"),
    ]
