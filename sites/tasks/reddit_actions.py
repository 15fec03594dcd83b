"""Forum (reddit) templates that change state (321-330) or end on a page (341-344), with their expert scripts.

Listed by `sites.tasks.reddit` (the site's template module); see its docstring for the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

from common import records as A
from sites.forum import queries as FQ
from sites.tasks import reddit_data as D
from sites.tasks.base import Instance, SeedData, Template, html_eval, pick, target, url_eval
from sites.tasks.steps import Answer, Click, Fill, Go, M, Match, Step, need

R = "__REDDIT__"
ME = D.ME
POST_URL = "func:reddit_get_post_url('__last_url__')"
TITLE_JS = "document.querySelector('.submission__title').outerText"
inst = D.inst
open_forum = D.open_forum
open_post = D.open_post


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
