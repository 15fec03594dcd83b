"""Task templates of the forum (site `reddit`, template ids 300-399) and their expert scripts: the
information-seeking ones here, the state-changing and navigation ones in `reddit_actions.py`.

The logged-in user is MarvelsGrandpa. Reference answers come from `sites.forum.queries` over the seeded data;
state checks read the pages with Postmill's markup (`.submission__title`, `div.submission__vote form`,
`.user-bio__biography`, `#sidebar > section`, `.comment__body`). Held-out templates (all instances in the test
split): 306, 328, 330.
The observation a model gets is cut to a token budget from the top of the page, so scripts open pages whose
content of interest comes early (a small post shows its forum's sidebar; listings are sorted first).
"""

from __future__ import annotations

import random

from sites.forum import queries as FQ
from sites.tasks import reddit_data as D
from sites.tasks.base import Instance, SeedData, Template, pick, string_eval
from sites.tasks.reddit_actions import NAV, STATE
from sites.tasks.steps import Answer, Click, Go, M

inst = D.inst
open_forum = D.open_forum
open_post = D.open_post


def _forums(db: SeedData) -> list[dict]:
    return FQ.forums(D.conn(db))


# -- information seeking ------------------------------------------------------------------------------------------
def _post_comments(db: SeedData) -> list[Instance]:
    rows = pick(D.searchable_posts(db), 14, 301)
    return inst(301, [{"values": {"title": p["title"]}, "data": {"n": p["n_comments"]}} for p in rows])


def _latest_by_user(db: SeedData, tid: int, seed: int) -> list[Instance]:
    c, out = D.conn(db), []
    for u in pick(FQ.usernames(c)[1:], 14, seed):
        p = FQ.latest_post_by(c, u)
        if p is not None:
            out.append({"values": {"user": u}, "data": {"n": p["n_comments"], "forum": p["forum"]}})
    return inst(tid, out[:12])


def _most_posts(db: SeedData) -> list[Instance]:
    fs, rng, out = _forums(db), random.Random(303), []
    while len(out) < 12:
        trio = rng.sample(fs, 3)
        counts = sorted((f["posts"] for f in trio), reverse=True)
        if counts[0] > counts[1] and not any(o["data"]["set"] == {f["name"] for f in trio} for o in out):
            best = max(trio, key=lambda f: f["posts"])
            out.append(
                {
                    "values": {"f1": trio[0]["name"], "f2": trio[1]["name"], "f3": trio[2]["name"]},
                    "data": {"best": best["name"], "set": {f["name"] for f in trio}},
                }
            )
    for o in out:
        o["data"]["set"] = sorted(o["data"]["set"])
    return inst(303, out)


def _subscribers(db: SeedData) -> list[Instance]:
    return inst(
        304,
        [
            {"values": {"forum": f["name"]}, "data": {"n": f["subscribers"]}}
            for f in pick(_forums(db), 12, 304)
        ],
    )


def _newest_author(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for f in pick(D.forum_names(db), 12, 305):
        p = FQ.forum_posts(c, f, "new", 1)[0]
        out.append({"values": {"forum": f}, "data": {"author": p["author"]}})
    return inst(305, out)


def _top_title(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for f in pick(D.forum_names(db), 14, 306):
        top = FQ.forum_posts(c, f, "top", 2)
        if top[0]["score"] > top[1]["score"]:
            out.append({"values": {"forum": f}, "data": {"title": top[0]["title"]}})
    return inst(306, out[:12])


def _last_comment(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for u in pick(FQ.usernames(c)[1:], 6, 308):
        cs = FQ.user_comments(c, u)
        if cs:
            out.append({"values": {"user": u}, "data": {"body": cs[0]["body"]}})
    return inst(308, out)


INFO = [
    Template(
        301,
        "reddit",
        'How many comments does the post "{{title}}" have?',
        "info",
        ("string_match",),
        _post_comments,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [*open_post(i.values["title"], i.data["n"]), Answer(str(i.data["n"]))],
    ),
    Template(
        302,
        "reddit",
        "How many comments did the latest post by {{user}} receive?",
        "info",
        ("string_match",),
        lambda db: _latest_by_user(db, 302, 302),
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [
            Go(f"/user/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
            Click(M("a", D.comments_label(i.data["n"])), why="open the newest post's comments"),
            Answer(str(i.data["n"])),
        ],
    ),
    Template(
        303,
        "reddit",
        "Which of these forums has the most submissions: {{f1}}, {{f2}} or {{f3}}?",
        "info",
        ("string_match",),
        _most_posts,
        lambda i: string_eval(include=[i.data["best"]]),
        lambda i: [
            Click(M("a", "Forums"), why="the forum list shows submission counts"),
            Answer(i.data["best"]),
        ],
    ),
    Template(
        304,
        "reddit",
        "How many subscribers does the {{forum}} forum have?",
        "info",
        ("string_match",),
        _subscribers,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [
            Click(M("a", "Forums"), why="the forum list shows subscriber counts"),
            Answer(str(i.data["n"])),
        ],
    ),
    Template(
        305,
        "reddit",
        "Who submitted the newest post in the {{forum}} forum?",
        "info",
        ("string_match",),
        _newest_author,
        lambda i: string_eval(exact=i.data["author"]),
        lambda i: [
            *open_forum(i.values["forum"]),
            Click(M("a", "New"), why="sort by newest"),
            Answer(i.data["author"]),
        ],
    ),
    Template(
        306,
        "reddit",
        "What is the title of the highest-scoring post in the {{forum}} forum?",
        "info",
        ("string_match",),
        _top_title,
        lambda i: string_eval(include=[i.data["title"]]),
        lambda i: [
            *open_forum(i.values["forum"]),
            Click(M("a", "Top"), why="sort by score"),
            Answer(i.data["title"]),
        ],
        held_out=True,
    ),
    Template(
        307,
        "reddit",
        "In which forum did {{user}} make their most recent submission?",
        "info",
        ("string_match",),
        lambda db: _latest_by_user(db, 307, 307),
        lambda i: string_eval(exact=i.data["forum"]),
        lambda i: [
            Go(f"/user/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
            Answer(i.data["forum"]),
        ],
    ),
    Template(
        308,
        "reddit",
        "What did {{user}} say in their most recent comment?",
        "info",
        ("string_match",),
        _last_comment,
        lambda i: string_eval(fuzzy=[i.data["body"]]),
        lambda i: [
            Go(f"/user/{i.values['user']}/comments", why=f"open {i.values['user']}'s comments"),
            Answer(i.data["body"]),
        ],
    ),
]


TEMPLATES = INFO + STATE + NAV
