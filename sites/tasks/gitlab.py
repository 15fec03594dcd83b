"""Task templates of the code host (site `gitlab`, template ids 400-499) and their expert scripts: the
information-seeking ones here, the state-changing and navigation ones in `gitlab_actions.py`.

The logged-in user is byteblaze (Byte Blaze). Reference answers come from `sites.gitlab.queries` over the seeded
data; state checks read the pages with GitLab's markup (`.block.assignee`, `.cover-status`, `#notes-list`,
`[data-testid=...]`) and the members page through `func:gitlab_get_project_memeber_role`. Held-out templates (all
instances in the test split): 407, 429, 444.
The observation a model gets is cut to a token budget from the top of the page, so instances use issues and merge
requests with short discussions, and member rows near the top of the members list.
"""

from __future__ import annotations

from typing import Any

from sites.gitlab import queries as GQ
from sites.tasks import gitlab_data as D
from sites.tasks.base import Instance, SeedData, Template, pick, string_eval
from sites.tasks.gitlab_actions import NAV, STATE
from sites.tasks.steps import Answer, Choose, Click, Fill, Go, M

G = "__GITLAB__"
ME = D.ME
inst = D.inst
SIDEBAR_MRS = M("a", "Merge requests")  # the project sidebar's link (the header has one too: use `after`)
AFTER_CONTRIB = M("a", "Contributors")


_projects = D.sample_projects
_issue_rows = D.issue_rows
_go_issue = D.go_issue


# -- information seeking ------------------------------------------------------------------------------------------
def _top_contributor(db: SeedData) -> list[Instance]:
    out = []
    for p in _projects(db, 20, 401):
        rows = D.contributors(db, p["full_path"])
        counts = GQ.commit_counts(D.conn(db), p["full_path"])
        if rows and len(counts) > 1 and counts[0][1] > counts[1][1] and rows[0][0] == counts[0][0]:
            out.append({"values": {"project": p["full_path"]}, "data": {"name": counts[0][0]}})
    return inst(401, out[:12])


def _label_counts(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for p in _projects(db, 30, 402):
        issues = GQ.issues(c, p["full_path"], "opened")
        labels = sorted({lab for i in issues for lab in i["labels"]})
        if labels:
            lab = labels[len(out) % len(labels)]
            out.append(
                {
                    "values": {"label": lab, "project": p["full_path"]},
                    "data": {"n": sum(lab in i["labels"] for i in issues)},
                }
            )
    return inst(402, out[:12])


def _author_commits(db: SeedData) -> list[Instance]:
    out = []
    for k, p in enumerate(_projects(db, 14, 403)):
        rows = D.contributors(db, p["full_path"])
        if rows:
            name, n = rows[k % len(rows)]
            out.append({"values": {"author": name, "project": p["full_path"]}, "data": {"n": n}})
    return inst(403, out[:12])


def _stars(db: SeedData) -> list[Instance]:
    return inst(
        404,
        [{"values": {"project": p["full_path"]}, "data": {"n": p["stars"]}} for p in _projects(db, 12, 404)],
    )


def _assignees(db: SeedData) -> list[Instance]:
    paths = [p["full_path"] for p in D.visible_projects(db)]
    rows = _issue_rows(db, paths, "all", lambda i: 1 <= len(i["assignees"]) <= 2, 12, 405)
    return inst(
        405,
        [
            {
                "values": {"iid": i["iid"], "project": i["fp"]},
                "data": {"names": [D.user_name(db, u) for u in i["assignees"]]},
            }
            for i in rows
        ],
    )


def _roles(db: SeedData) -> list[Instance]:
    out = []
    for p in _projects(db, 24, 406):
        rows = [r for r in D.member_rows(db, p["full_path"])[:5] if r[0] != ME]
        if rows:
            user, role = rows[len(out) % len(rows)]
            out.append({"values": {"user": user, "project": p["full_path"]}, "data": {"role": role}})
    return inst(406, out[:12])


def _due_dates(db: SeedData) -> list[Instance]:
    paths = [p["full_path"] for p in D.visible_projects(db)]
    rows = _issue_rows(db, paths, "all", lambda i: bool(i["due_date"]), 10, 407)
    return inst(
        407,
        [
            {"values": {"iid": i["iid"], "project": i["fp"]}, "data": {"due": D.due(i["due_date"])}}
            for i in rows
        ],
    )


def _merged(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for p in _projects(db, 20, 408, lambda p: bool(GQ.merge_requests(D.conn(db), p["full_path"]))):
        out.append(
            {
                "values": {"project": p["full_path"]},
                "data": {"n": len(GQ.merge_requests(c, p["full_path"], "merged"))},
            }
        )
    return inst(408, out[:12])


def _statuses(db: SeedData) -> list[Instance]:
    users = [
        u for u in GQ.users(D.conn(db)) if (GQ.user(D.conn(db), u["username"]) or {}).get("status_message")
    ]
    return inst(
        409,
        [
            {
                "values": {"user": u["username"]},
                "data": {"message": GQ.user(D.conn(db), u["username"])["status_message"]},
            }
            for u in pick(users, 5, 409)
        ],
    )


DASH = [
    ("issues", "assigned to me", "assignee"),
    ("issues", "created by me", "author"),
    ("merge requests", "assigned to me", "assignee"),
    ("merge requests", "waiting for my review", "reviewer"),
]


def _dash_counts(db: SeedData) -> list[Instance]:
    out = []
    for kind, rel, role in DASH:
        for state in ("open", "closed"):
            n = D.dashboard_count(
                db, "issues" if kind == "issues" else "mrs", role, "opened" if state == "open" else "closed"
            )
            out.append(
                {"values": {"state": state, "kind": kind, "relation": rel}, "data": {"n": n, "role": role}}
            )
    return inst(410, out)


def _dash_steps(i: Instance) -> list[Any]:
    """Open the dashboard list of issues or merge requests with the right person filter."""
    v, role = i.values, i.data["role"]
    kind = "Issues" if v["kind"] == "issues" else "Merge requests"
    steps: list[Any] = [Click(M("a", kind), why=f"open my {v['kind']} dashboard")]
    if role != "assignee":
        steps += [
            Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
            Fill(M("input", name=f"{role}_username"), ME, why=f"filter by {role}"),
            Click(M("button", "Search"), why="apply the filters"),
        ]
    return steps


INFO = [
    Template(
        401,
        "gitlab",
        "Who has made the most commits to {{project}}?",
        "info",
        ("string_match",),
        _top_contributor,
        lambda i: string_eval(exact=i.data["name"]),
        lambda i: [
            Go(f"/{i.values['project']}", why="open the project"),
            Click(M("a", "Contributors"), why="the contributors page counts commits per author"),
            Answer(i.data["name"]),
        ],
    ),
    Template(
        402,
        "gitlab",
        'How many open issues of {{project}} have the label "{{label}}"?',
        "info",
        ("string_match",),
        _label_counts,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [
            Go(f"/{i.values['project']}/-/issues", why="open the project's issues"),
            Choose(M("select", name="label_name[]"), i.values["label"], why="filter by the label"),
            Click(M("button", "Search"), why="apply the filter"),
            Answer(str(i.data["n"])),
        ],
    ),
    Template(
        403,
        "gitlab",
        "How many commits has {{author}} made to {{project}}?",
        "info",
        ("string_match",),
        _author_commits,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [
            Go(f"/{i.values['project']}", why="open the project"),
            Click(M("a", "Contributors"), why="the contributors page counts commits per author"),
            Answer(str(i.data["n"])),
        ],
    ),
    Template(
        404,
        "gitlab",
        "How many stars does the project {{project}} have?",
        "info",
        ("string_match",),
        _stars,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [Go(f"/{i.values['project']}", why="open the project"), Answer(str(i.data["n"]))],
    ),
    Template(
        405,
        "gitlab",
        "Who is assigned to issue #{{iid}} of {{project}}?",
        "info",
        ("string_match",),
        _assignees,
        lambda i: string_eval(include=i.data["names"]),
        lambda i: [_go_issue(i), Answer(", ".join(i.data["names"]))],
    ),
    Template(
        406,
        "gitlab",
        "What role does {{user}} have in the project {{project}}?",
        "info",
        ("string_match",),
        _roles,
        lambda i: string_eval(exact=i.data["role"]),
        lambda i: [
            Go(f"/{i.values['project']}", why="open the project"),
            Click(M("a", "Members"), why="open the members list"),
            Answer(i.data["role"]),
        ],
    ),
    Template(
        407,
        "gitlab",
        "When is issue #{{iid}} of {{project}} due?",
        "info",
        ("string_match",),
        _due_dates,
        lambda i: string_eval(include=[i.data["due"]]),
        lambda i: [_go_issue(i), Answer(i.data["due"])],
        held_out=True,
    ),
    Template(
        408,
        "gitlab",
        "How many merge requests of {{project}} have been merged?",
        "info",
        ("string_match",),
        _merged,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [
            Go(f"/{i.values['project']}", why="open the project"),
            Click(SIDEBAR_MRS, after=AFTER_CONTRIB, why="open the project's merge requests"),
            Answer(str(i.data["n"])),
        ],
    ),
    Template(
        409,
        "gitlab",
        "What is {{user}}'s current status message?",
        "info",
        ("string_match",),
        _statuses,
        lambda i: string_eval(fuzzy=[i.data["message"]]),
        lambda i: [
            Go(f"/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
            Answer(i.data["message"]),
        ],
    ),
    Template(
        410,
        "gitlab",
        "How many {{state}} {{kind}} are {{relation}}?",
        "info",
        ("string_match",),
        _dash_counts,
        lambda i: string_eval(exact=str(i.data["n"])),
        lambda i: [*_dash_steps(i), Answer(str(i.data["n"]))],
    ),
]

TEMPLATES = INFO + STATE + NAV
