"""Code host (gitlab) templates that change state (421-430) or end on a page (441-444), with their expert scripts.

Listed by `sites.tasks.gitlab` (the site's template module); see its docstring for the conventions.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, quote_plus

from sites.gitlab import queries as GQ
from sites.tasks import gitlab_data as D
from sites.tasks.base import Instance, SeedData, Template, html_eval, js_string, pick, target, url_eval
from sites.tasks.steps import Answer, Choose, Click, Fill, Go, M

G = "__GITLAB__"
ME = D.ME
inst = D.inst
_projects = D.sample_projects
_issue_rows = D.issue_rows
_go_issue = D.go_issue
AFTER_CONTRIB = M("a", "Contributors")  # the project sidebar: its Issues link comes after this one


# -- state-changing -----------------------------------------------------------------------------------------------
def _new_issues(db: SeedData) -> list[Instance]:
    out = []
    for k, fp in enumerate(pick(D.my_projects(db), 12, 421)):
        title = D.ISSUE_TITLES[k % len(D.ISSUE_TITLES)]
        if all(title not in i["title"] for i in GQ.issues(D.conn(db), fp)):  # doing nothing must not pass
            out.append({"values": {"project": fp, "title": title}})
    return inst(421, out)


def _editable_open_issues(db: SeedData, tid: int, cond: Any) -> list[Instance]:
    rows = _issue_rows(db, D.my_projects(db, "Reporter"), "opened", cond, 12, tid)
    return inst(tid, [{"values": {"iid": i["iid"], "project": i["fp"]}} for i in rows])


def _invites(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    users = [u["username"] for u in GQ.users(c)]
    roles = ["Guest", "Reporter", "Developer", "Maintainer"]
    for k, fp in enumerate(sorted(D.my_projects(db, "Maintainer")) * 2):
        members = GQ.members(c, fp)
        outsiders = [u for u in users if u not in members]
        user = pick(outsiders, 1, 423 + k)[0]
        out.append({"values": {"user": user, "project": fp, "role": roles[k % len(roles)]}})
    return inst(423, pick(out, 12, 423))


def _stars_to_give(db: SeedData) -> list[Instance]:
    starred = GQ.starred_by(D.conn(db), ME)
    rows = _projects(
        db,
        12,
        424,
        lambda p: p["full_path"] not in starred and not any(s.startswith(p["full_path"]) for s in starred),
    )
    return inst(424, [{"values": {"project": p["full_path"]}} for p in rows])


def _follows(db: SeedData) -> list[Instance]:
    c = D.conn(db)
    mine = set(GQ.following(c, ME))
    users = [u["username"] for u in GQ.users(c)[1:] if u["username"] not in mine]
    return inst(429, [{"values": {"user": u}} for u in pick(users, 8, 429)])


def _mr_notes(db: SeedData) -> list[Instance]:
    rows = [
        dict(m, fp=p["full_path"]) for p in D.visible_projects(db) for m in D.quiet_mrs(db, p["full_path"])
    ]
    out = []
    for k, m in enumerate(pick(rows, 12, 428)):
        text = D.NOTES[k % len(D.NOTES)]
        if text not in D.note_bodies(db, "merge_request", m["id"]):  # doing nothing must not pass
            out.append({"values": {"text": text, "iid": m["iid"], "project": m["fp"]}})
    return inst(428, out)


def _token_eval(i: Instance) -> dict[str, Any]:
    name = js_string(i.values["name"])
    rows = (
        "[...document.querySelectorAll('.active-tokens tbody tr')].filter((r) => r.querySelector('.token-name') "
        f"&& r.querySelector('.token-name').outerText.trim() === {name}).map((r) => "
        "r.querySelector('.token-scopes').outerText).join('; ')"
    )
    return html_eval(target(f"{G}/-/profile/personal_access_tokens", rows, exact=i.values["scope"]))


def _starred_eval(i: Instance) -> dict[str, Any]:
    hrefs = "[...document.querySelectorAll('.projects-list a.project')].map((a) => a.getAttribute('href')).join(' ')"
    return html_eval(target(f"{G}/dashboard/projects/starred", hrefs, include=[f"/{i.values['project']}"]))


NEW_PROJECTS = [
    "release-notes-bot",
    "team-handbook",
    "sketch-archive",
    "api-playground",
    "garden-planner",
    "recipe-scaler",
    "bookmark-sync",
    "trail-logger",
    "invoice-tools",
    "quiz-engine",
    "font-preview",
    "habit-tracker",
]


STATE = [
    Template(
        421,
        "gitlab",
        'Create an issue in {{project}} titled "{{title}}"',
        "state",
        ("program_html",),
        _new_issues,
        lambda i: html_eval(
            target(
                f"{G}/{i.values['project']}/-/issues?state=all&search={quote_plus(i.values['title'])}",
                "document.querySelector('.issues-list').outerText",
                include=[i.values["title"]],
            )
        ),
        lambda i: [
            Go(f"/{i.values['project']}/-/issues", why="open the project's issues"),
            Click(M("a", "New issue"), why="start a new issue"),
            Fill(M("input", name="issue[title]"), i.values["title"], why="write the title"),
            Click(M("button", "Create issue"), why="create the issue"),
            Answer(),
        ],
    ),
    Template(
        422,
        "gitlab",
        "Assign issue #{{iid}} of {{project}} to me",
        "state",
        ("program_html",),
        lambda db: _editable_open_issues(db, 422, lambda i: ME not in i["assignees"]),
        lambda i: html_eval(
            target(
                f"{G}/{i.values['project']}/-/issues/{i.values['iid']}",
                "document.querySelector('.block.assignee').outerText",
                include=[f"@{ME}"],
            )
        ),
        lambda i: [
            _go_issue(i),
            Click(M("button", "assign yourself"), why="assign the issue to myself"),
            Answer(),
        ],
    ),
    Template(
        423,
        "gitlab",
        "Invite {{user}} to the project {{project}} as {{role}}",
        "state",
        ("program_html",),
        _invites,
        lambda i: html_eval(
            target(
                f"{G}/{i.values['project']}/-/project_members",
                f"func:gitlab_get_project_memeber_role(__page__, '{i.values['user']}')",
                exact=i.values["role"],
            )
        ),
        lambda i: [
            Go(f"/{i.values['project']}/-/project_members", why="open the project's members"),
            Fill(M("input", name="user_ids"), i.values["user"], why="enter the username"),
            Choose(M("select", name="access_level"), i.values["role"], why="choose the role"),
            Click(M("button", "Invite"), why="send the invitation"),
            Answer(),
        ],
    ),
    Template(
        424,
        "gitlab",
        "Star the project {{project}}",
        "state",
        ("program_html",),
        _stars_to_give,
        _starred_eval,
        lambda i: [
            Go(f"/{i.values['project']}", why="open the project"),
            Click(M("button", "Star"), why="star it"),
            Answer(),
        ],
    ),
    Template(
        425,
        "gitlab",
        'Set my status to "{{message}}"',
        "state",
        ("program_html",),
        lambda db: inst(425, [{"values": {"message": s}} for s in D.STATUSES]),
        lambda i: html_eval(
            target(
                f"{G}/{ME}",
                "document.querySelector('.cover-status').outerText",
                include=[i.values["message"]],
            ),
            # the settings form shows the saved status once unsaved typing is discarded
            target(
                f"{G}/-/profile",
                "document.querySelector('#user_status_message').value",
                exact=i.values["message"],
                prep=["document.querySelector('#edit_user').reset()"],
            ),
        ),
        lambda i: [
            Click(M("a", "Edit profile"), why="open my profile settings"),
            Fill(M("input", name="user[status][message]"), i.values["message"], why="write the status"),
            Click(M("button", "Update profile settings"), why="save the profile"),
            Answer(),
        ],
    ),
    Template(
        426,
        "gitlab",
        'Create a personal access token named "{{name}}" with the {{scope}} scope',
        "state",
        ("program_html",),
        lambda db: inst(426, [{"values": {"name": n, "scope": s}} for n, s in D.TOKENS]),
        _token_eval,
        lambda i: [
            Click(M("a", "Edit profile"), why="open my settings"),
            Click(M("a", "Access Tokens"), why="open the access tokens page"),
            Fill(M("input", name="personal_access_token[name]"), i.values["name"], why="name the token"),
            Click(M("label", i.values["scope"]), why=f"tick the {i.values['scope']} scope"),
            Click(M("button", "Create personal access token"), why="create the token"),
            Answer(),
        ],
    ),
    Template(
        427,
        "gitlab",
        "Close issue #{{iid}} of {{project}}",
        "state",
        ("program_html",),
        lambda db: _editable_open_issues(db, 427, lambda i: True),
        lambda i: html_eval(
            target(
                f"{G}/{i.values['project']}/-/issues/{i.values['iid']}",
                "document.querySelector('[data-testid=\"issue-state-badge\"]').outerText",
                exact="Closed",
            )
        ),
        lambda i: [_go_issue(i), Click(M("button", "Close issue"), why="close the issue"), Answer()],
    ),
    Template(
        428,
        "gitlab",
        'Comment "{{text}}" on merge request !{{iid}} of {{project}}',
        "state",
        ("program_html",),
        _mr_notes,
        lambda i: html_eval(
            target(
                f"{G}/{i.values['project']}/-/merge_requests/{i.values['iid']}",
                "document.querySelector('#notes-list').outerText",
                include=[i.values["text"]],
            )
        ),
        lambda i: [
            Go(
                f"/{i.values['project']}/-/merge_requests/{i.values['iid']}",
                why=f"open merge request !{i.values['iid']}",
            ),
            Fill(M("textarea", name="note[note]"), i.values["text"], why="write the comment"),
            Click(M("button", "Comment"), why="post the comment"),
            Answer(),
        ],
    ),
    Template(
        429,
        "gitlab",
        "Follow the user {{user}}",
        "state",
        ("program_html",),
        _follows,
        lambda i: html_eval(
            target(
                f"{G}/users/{ME}/following",
                "document.querySelector('.user-list').outerText",
                include=[f"@{i.values['user']}"],
            )
        ),
        lambda i: [
            Go(f"/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
            Click(M("button", "Follow"), why="follow them"),
            Answer(),
        ],
        held_out=True,
    ),
    Template(
        430,
        "gitlab",
        "Create a new {{visibility}} project named {{name}}",
        "state",
        ("program_html",),
        lambda db: inst(
            430,
            [
                {"values": {"visibility": "private" if k % 3 == 0 else "public", "name": n}}
                for k, n in enumerate(NEW_PROJECTS)
            ],
        ),
        lambda i: html_eval(
            target(
                f"{G}/{ME}/{i.values['name']}",
                "document.querySelector('.home-panel-title').outerText",
                include=[i.values["name"]],
            ),
            target(
                "last",
                "document.querySelector('.home-panel-title .visibility-icon').outerText",
                exact=i.values["visibility"].capitalize(),
            ),
        ),
        lambda i: [
            Click(M("a", "New project"), why="start a new project"),
            Fill(M("input", name="project[name]"), i.values["name"], why="name the project"),
            Click(
                M("input", type="radio", value=i.values["visibility"]),
                why=f"make it {i.values['visibility']}",
            ),
            Click(M("button", "Create project"), why="create the project"),
            Answer(),
        ],
    ),
]


# -- navigation -----------------------------------------------------------------------------------------------------
PAGES = [
    ("the issues assigned to me", "/dashboard/issues?assignee_username=byteblaze"),
    ("the issues I created", "/dashboard/issues?author_username=byteblaze"),
    ("the merge requests assigned to me", "/dashboard/merge_requests?assignee_username=byteblaze"),
    ("the merge requests I am asked to review", "/dashboard/merge_requests?reviewer_username=byteblaze"),
    ("my to-do list", "/dashboard/todos"),
    ("the projects I starred", "/dashboard/projects/starred"),
    ("my personal access tokens", "/-/profile/personal_access_tokens"),
]
PAGE_STEPS = {
    0: [Click(M("a", "Issues"), why="the header's Issues link lists the issues assigned to me")],
    1: [
        Click(M("a", "Issues"), why="open my issues dashboard"),
        Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
        Fill(M("input", name="author_username"), ME, why="filter by author"),
        Click(M("button", "Search")),
    ],
    2: [Click(M("a", "Merge requests"), why="the header's link lists the merge requests assigned to me")],
    3: [
        Click(M("a", "Merge requests"), why="open my merge requests dashboard"),
        Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
        Fill(M("input", name="reviewer_username"), ME, why="filter by reviewer"),
        Click(M("button", "Search")),
    ],
    4: [Click(M("a", "To-Do List"), why="open the to-do list")],
    5: [Click(M("a", "Starred projects"), why="open the starred projects tab")],
    6: [Click(M("a", "Edit profile"), why="open my settings"), Click(M("a", "Access Tokens"))],
}


def _closed_issues(db: SeedData, tid: int) -> list[Instance]:
    c, out = D.conn(db), []
    for p in _projects(db, 20, tid, lambda p: bool(GQ.issues(D.conn(db), p["full_path"], "closed"))):
        latest = GQ.issues(c, p["full_path"], "closed")[0]
        out.append(
            {"values": {"project": p["full_path"]}, "data": {"iid": latest["iid"], "title": latest["title"]}}
        )
    return inst(tid, out[:12])


def _commit_authors(db: SeedData) -> list[Instance]:
    out = []
    for k, p in enumerate(_projects(db, 12, 444)):
        rows = D.contributors(db, p["full_path"])
        if rows:
            out.append({"values": {"author": rows[k % len(rows)][0], "project": p["full_path"]}})
    return inst(444, out[:10])


def _to_closed(i: Instance) -> list[Any]:
    return [
        Go(f"/{i.values['project']}", why="open the project"),
        Click(M("a", "Issues"), after=AFTER_CONTRIB, why="open the project's issues"),
        Click(M("a", contains="Closed"), why="show the closed issues"),
    ]


NAV = [
    Template(
        441,
        "gitlab",
        "Open {{page}}",
        "nav",
        ("url_match",),
        lambda db: inst(
            441,
            [
                {"values": {"page": name}, "data": {"k": k, "path": path}}
                for k, (name, path) in enumerate(PAGES)
            ],
        ),
        lambda i: url_eval(f"{G}{i.data['path']}"),
        lambda i: [*PAGE_STEPS[i.data["k"]], Answer()],
    ),
    Template(
        442,
        "gitlab",
        "Show me the closed issues of {{project}}",
        "nav",
        ("url_match",),
        lambda db: _closed_issues(db, 442),
        lambda i: url_eval(f"{G}/{i.values['project']}/-/issues?state=closed"),
        lambda i: [*_to_closed(i), Answer()],
    ),
    Template(
        443,
        "gitlab",
        "Open the most recently created closed issue of {{project}}",
        "nav",
        ("url_match",),
        lambda db: _closed_issues(db, 443),
        lambda i: url_eval(f"{G}/{i.values['project']}/-/issues/{i.data['iid']}"),
        lambda i: [
            *_to_closed(i),
            Click(M("a", i.data["title"]), why="open the newest closed issue"),
            Answer(),
        ],
    ),
    Template(
        444,
        "gitlab",
        "Show the commits {{author}} made to {{project}}",
        "nav",
        ("url_match",),
        _commit_authors,
        lambda i: url_eval(f"{G}/{i.values['project']}/-/commits/main?author={quote(i.values['author'])}"),
        lambda i: [
            Go(f"/{i.values['project']}/-/commits/main", why="open the project's commits"),
            Fill(M("input", name="author"), i.values["author"], why="filter by author"),
            Click(M("button", "Filter"), why="apply the filter"),
            Answer(),
        ],
        held_out=True,
    ),
]
