"""Task templates of the forum (site `reddit`, template ids 300-399) and their expert scripts.

The logged-in user is MarvelsGrandpa. Reference answers come from `sites.forum.queries` over the seeded data;
state checks read the pages with Postmill's markup (`.submission__title`, `div.submission__vote form`,
`.user-bio__biography`, `#sidebar > section`, `.comment__body`). Held-out templates (all instances in the test
split): 306, 328, 330.
The observation a model gets is cut to a token budget from the top of the page, so scripts open pages whose
content of interest comes early (a small post shows its forum's sidebar; listings are sorted first).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from common import records as A
from sites.forum import queries as FQ
from sites.tasks import reddit_data as D
from sites.tasks.base import Instance, SeedData, Template, html_eval, pick, string_eval, target, url_eval
from sites.tasks.steps import Answer, Click, Fill, Go, M, Match, Step, need

R = "__REDDIT__"
ME = D.ME
POST_URL = "func:reddit_get_post_url('__last_url__')"
TITLE_JS = "document.querySelector('.submission__title').outerText"
inst = D.inst


@dataclass
class FillAfter(Step):
    """Type into the first element matching `target` after the one matching `after` (a reply box under a comment:
    every comment carries one, so the first on the page is not the right one)."""

    target: Match
    after: Match
    text: str
    why: str = ""

    def act(self, obs: Any, ctx: dict[str, Any]) -> tuple[Any, str, bool]:
        el = need(obs, self.target, self.after)
        return A.Type(element_id=el.id, text=self.text, press_enter=False), self.why or "type the text", True


def _forums(db: SeedData) -> list[dict]:
    return FQ.forums(D.conn(db))


def open_forum(forum: str) -> list[Any]:
    return [
        Click(M("a", "Forums"), why="open the list of forums"),
        Click(M("a", forum), why=f"open /f/{forum}"),
    ]


def open_post(title: str, n_comments: int) -> list[Any]:
    """Search the forum for a post's title and open it through its comments link."""
    return [
        Fill(M("input", name="q"), title, enter=True, why="search for the post by its title"),
        Click(M("a", D.comments_label(n_comments)), why="open the post and its comments"),
    ]


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


# -- state-changing -----------------------------------------------------------------------------------------------
def _new_post(db: SeedData) -> list[Instance]:
    seeded = {r[0] for r in D.conn(db).execute("SELECT title FROM submissions")}
    return inst(
        321, [{"values": {"forum": f, "title": t}} for f, t in D.new_titles(12, 321) if t not in seeded]
    )


def _vote_targets(db: SeedData, tid: int, sort: str, choice: int) -> list[Instance]:
    c, out = D.conn(db), []
    for f in pick(D.forum_names(db), 16, tid):
        p = FQ.forum_posts(c, f, sort, 1)[0]
        if p["author"] != ME and FQ.vote(c, ME, p["id"]) != choice:
            out.append({"values": {"forum": f}, "data": {"path": p["path"]}})
    return inst(tid, out[:12])


def _replies(db: SeedData) -> list[Instance]:
    rows = pick(D.reply_targets(db), 12, 324)
    return inst(
        324,
        [
            {
                "values": {
                    "text": D.COMMENTS[k % len(D.COMMENTS)],
                    "user": r["comment"]["author"],
                    "title": r["post"]["title"],
                },
                "data": {"cid": r["comment"]["id"], "path": r["post"]["path"], "n": r["post"]["n_comments"]},
            }
            for k, r in enumerate(rows)
        ],
    )


def _comments(db: SeedData) -> list[Instance]:
    out = []
    for k, p in enumerate(pick(D.searchable_posts(db), 12, 325)):
        text = D.COMMENTS[(k + 3) % len(D.COMMENTS)]
        if all(c["body"] != text for c in FQ.comments(D.conn(db), p["id"])):  # doing nothing must not pass
            out.append(
                {
                    "values": {"text": text, "title": p["title"]},
                    "data": {"path": p["path"], "n": p["n_comments"]},
                }
            )
    return inst(325, out)


def _bios(db: SeedData) -> list[Instance]:
    current = FQ.biography(D.conn(db), ME)
    return inst(326, [{"values": {"bio": b}} for b in D.BIOS if b != current])


def _subscribe(db: SeedData, tid: int, subscribed: bool) -> list[Instance]:
    mine = set(FQ.subscriptions(D.conn(db), ME))
    names = [f for f in D.forum_names(db) if (f in mine) == subscribed]
    return inst(
        tid,
        [
            {"values": {"forum": f}, "data": {"path": D.small_post(db, f)["path"]}}
            for f in pick(names, 12, tid)
        ],
    )


def _retitle(db: SeedData) -> list[Instance]:
    return inst(
        329,
        [
            {
                "values": {"old": p["title"], "new": D.NEW_TITLES[k % len(D.NEW_TITLES)]},
                "data": {"post": f"/f/{p['forum']}/{p['id']}"},
            }
            for k, p in enumerate(D.my_recent_posts(db))
        ],
    )


def _delete(db: SeedData) -> list[Instance]:
    return inst(330, [{"values": {"title": p["title"]}} for p in D.my_recent_posts(db)])


def _vote_eval(cls: str) -> Any:
    return lambda i: html_eval(
        target(
            f"{R}{i.data['path']}",
            "document.querySelector('div.submission__vote form').className",
            include=[cls],
        )
    )


def _vote_steps(sort_label: str, button: str) -> Any:
    return lambda i: [
        *open_forum(i.values["forum"]),
        Click(M("a", sort_label), why=f"sort by {sort_label.lower()}"),
        Click(M("button", **{"aria-label": button}), why=f"{button.lower()} the first post"),
        Answer(),
    ]


def _reply_eval(i: Instance) -> dict[str, Any]:
    replies = f"document.querySelector('#comment_{i.data['cid']} .comment__replies').outerText"
    return html_eval(target(f"{R}{i.data['path']}", replies, include=[i.values["text"], ME]))


def _comment_eval(i: Instance) -> dict[str, Any]:
    return html_eval(
        target(
            f"{R}{i.data['path']}",
            "document.querySelector('.comment--top-level .comment__body').outerText",
            exact=i.values["text"],
        ),
        target("last", "document.querySelector('.comment--top-level .comment__author').outerText", exact=ME),
    )


STATE = [
    Template(
        321,
        "reddit",
        'Create a post in the {{forum}} forum with the title "{{title}}"',
        "state",
        ("program_html",),
        _new_post,
        lambda i: html_eval(
            target(POST_URL, TITLE_JS, exact=i.values["title"]),
            target("last", "document.querySelector('.submission__forum').outerText", exact=i.values["forum"]),
        ),
        lambda i: [
            *open_forum(i.values["forum"]),
            Click(M("a", "Submit a new post"), why="start a new post"),
            Fill(M("textarea", name="submission[title]"), i.values["title"], why="write the title"),
            Click(M("button", "Create submission"), why="submit the post"),
            Answer(),
        ],
    ),
    Template(
        322,
        "reddit",
        "Upvote the newest post in the {{forum}} forum",
        "state",
        ("program_html",),
        lambda db: _vote_targets(db, 322, "new", 1),
        _vote_eval("vote--user-upvoted"),
        _vote_steps("New", "Upvote"),
    ),
    Template(
        323,
        "reddit",
        "Downvote the highest-scoring post of the {{forum}} forum",
        "state",
        ("program_html",),
        lambda db: _vote_targets(db, 323, "top", -1),
        _vote_eval("vote--user-downvoted"),
        _vote_steps("Top", "Downvote"),
    ),
    Template(
        324,
        "reddit",
        'Reply "{{text}}" to the comment by {{user}} on the post "{{title}}"',
        "state",
        ("program_html",),
        _replies,
        _reply_eval,
        lambda i: [
            *open_post(i.values["title"], i.data["n"]),
            Click(
                M("summary", "Reply"),
                after=M("a", i.values["user"]),
                why=f"open the reply box under {i.values['user']}'s comment",
            ),
            FillAfter(
                M("textarea", **{"aria-label": "Reply"}),
                M("a", i.values["user"]),
                i.values["text"],
                why="write the reply in the box that opened",
            ),
            Click(M("button", "Post"), after=M("a", i.values["user"]), why="post the reply"),
            Answer(),
        ],
    ),
    Template(
        325,
        "reddit",
        'Comment "{{text}}" on the post "{{title}}"',
        "state",
        ("program_html",),
        _comments,
        _comment_eval,
        lambda i: [
            *open_post(i.values["title"], i.data["n"]),
            Fill(M("textarea", name="comment[comment]"), i.values["text"], why="write the comment"),
            Click(M("button", "Post"), why="post the comment"),
            Answer(),
        ],
    ),
    Template(
        326,
        "reddit",
        'Change my biography to "{{bio}}"',
        "state",
        ("program_html",),
        _bios,
        lambda i: html_eval(
            target(
                f"{R}/user/{ME}",
                "document.querySelector('.user-bio__biography').outerText",
                exact=i.values["bio"],
            )
        ),
        lambda i: [
            Go(f"/user/{ME}/edit_biography", why="open the biography editor of my profile"),
            Fill(M("textarea", name="user_biography[biography]"), i.values["bio"], why="write the bio"),
            Click(M("button", "Save"), why="save the biography"),
            Answer(),
        ],
    ),
    Template(
        327,
        "reddit",
        "Subscribe to the {{forum}} forum",
        "state",
        ("program_html",),
        lambda db: _subscribe(db, 327, False),
        lambda i: html_eval(
            target(
                f"{R}/", "document.querySelector('#sidebar > section').outerText", include=[i.values["forum"]]
            )
        ),
        lambda i: [
            Go(i.data["path"], why=f"open a short post of /f/{i.values['forum']}: its sidebar is in view"),
            Click(M("button", "Subscribe"), why="subscribe to the forum"),
            Answer(),
        ],
    ),
    Template(
        328,
        "reddit",
        "Unsubscribe from the {{forum}} forum",
        "state",
        ("program_html",),
        lambda db: _subscribe(db, 328, True),
        lambda i: html_eval(
            target(
                f"{R}/", "document.querySelector('#sidebar > section').outerText", exclude=[i.values["forum"]]
            )
        ),
        lambda i: [
            Go(i.data["path"], why=f"open a short post of /f/{i.values['forum']}: its sidebar is in view"),
            Click(M("button", "Unsubscribe"), why="unsubscribe from the forum"),
            Answer(),
        ],
        held_out=True,
    ),
    Template(
        329,
        "reddit",
        'Change the title of my post "{{old}}" to "{{new}}"',
        "state",
        ("program_html",),
        _retitle,
        lambda i: html_eval(
            target(
                f"{R}{i.data['post']}",
                "document.querySelector('.submission__link').outerText",
                exact=i.values["new"],
            ),
            # the edit form shows the saved title once unsaved typing is discarded
            target(
                f"{R}{i.data['post']}/-/edit",
                "document.querySelector('#submission_title').value",
                exact=i.values["new"],
                prep=["document.querySelector('form.submission-form').reset()"],
            ),
        ),
        lambda i: [
            Click(M("a", ME), why="open my profile"),
            Click(M("a", "Edit"), after=M("a", i.values["old"]), why="edit that post"),
            Fill(M("textarea", name="submission[title]"), i.values["new"], why="write the new title"),
            Click(M("button", "Save"), why="save the post"),
            Answer(),
        ],
    ),
    Template(
        330,
        "reddit",
        'Delete my post "{{title}}"',
        "state",
        ("program_html",),
        _delete,
        lambda i: html_eval(
            target(
                f"{R}/user/{ME}/submissions",
                "document.querySelector('.user-profile__submissions').outerText",
                exclude=[i.values["title"]],
            )
        ),
        lambda i: [
            Click(M("a", ME), why="open my profile"),
            Click(M("button", "Delete"), after=M("a", i.values["title"]), why="delete that post"),
            Answer(),
        ],
        held_out=True,
    ),
]


# -- navigation -----------------------------------------------------------------------------------------------------
def _top_posts(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for f in pick(D.forum_names(db), 14, 341):
        top = FQ.forum_posts(c, f, "top", 1)[0]
        out.append({"values": {"forum": f}, "data": {"path": top["path"], "n": top["n_comments"]}})
    return inst(341, out[:12])


NAV = [
    Template(
        341,
        "reddit",
        "Open the highest-scoring post of all time in the {{forum}} forum",
        "nav",
        ("url_match",),
        _top_posts,
        lambda i: url_eval(f"{R}{i.data['path']}"),
        lambda i: [
            *open_forum(i.values["forum"]),
            Click(M("a", "Top"), why="sort by score"),
            Click(M("a", D.comments_label(i.data["n"])), why="open the first post"),
            Answer(),
        ],
    ),
    Template(
        342,
        "reddit",
        "Show me the newest posts in the {{forum}} forum",
        "nav",
        ("url_match",),
        lambda db: inst(342, [{"values": {"forum": f}} for f in pick(D.forum_names(db), 12, 342)]),
        lambda i: url_eval(f"{R}/f/{i.values['forum']}/new"),
        lambda i: [*open_forum(i.values["forum"]), Click(M("a", "New"), why="sort by newest"), Answer()],
    ),
    Template(
        343,
        "reddit",
        'Search the forum for posts about "{{query}}"',
        "nav",
        ("url_match",),
        lambda db: inst(343, [{"values": {"query": q}} for q in D.SEARCHES]),
        lambda i: url_eval(f"{R}/search?q={quote_plus(i.values['query'])}"),
        lambda i: [
            Fill(M("input", name="q"), i.values["query"], enter=True, why="search the forum"),
            Answer(),
        ],
    ),
    Template(
        344,
        "reddit",
        "List all forums sorted by {{order}}",
        "nav",
        ("url_match",),
        lambda db: inst(
            344,
            [
                {"values": {"order": o}, "data": {"key": k, "label": lab}}
                for o, k, lab in (
                    ("name", "name", "Name"),
                    ("number of subscribers", "subscribers", "Subscribers"),
                    ("number of submissions", "submissions", "Submissions"),
                )
            ],
        ),
        lambda i: url_eval(f"{R}/forums/by_{i.data['key']}"),
        lambda i: [
            Click(M("a", "Forums"), why="open the list of forums"),
            Click(M("a", i.data["label"]), why=f"sort by {i.values['order']}"),
            Answer(),
        ],
    ),
]

TEMPLATES = INFO + STATE + NAV
