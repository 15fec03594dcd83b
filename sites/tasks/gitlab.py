"""Task templates of the code host (site `gitlab`, template ids 400-499) and their expert scripts.

The logged-in user is byteblaze (Byte Blaze). Reference answers come from `sites.gitlab.queries` over the seeded
data; state checks read the pages with GitLab's markup (`.block.assignee`, `.cover-status`, `#notes-list`,
`[data-testid=...]`) and the members page through `func:gitlab_get_project_memeber_role`. Held-out templates (all
instances in the test split): 407, 429, 444.
The observation a model gets is cut to a token budget from the top of the page, so instances use issues and merge
requests with short discussions, and member rows near the top of the members list.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, quote_plus

from sites.gitlab import queries as GQ
from sites.tasks import gitlab_data as D
from sites.tasks.base import (
    Instance,
    SeedData,
    Template,
    html_eval,
    js_string,
    pick,
    string_eval,
    target,
    url_eval,
)
from sites.tasks.steps import Answer, Choose, Click, Fill, Go, M

G = "__GITLAB__"
ME = D.ME
inst = D.inst
SIDEBAR_MRS = M("a", "Merge requests")  # the project sidebar's link (the header has one too: use `after`)
AFTER_CONTRIB = M("a", "Contributors")


def _projects(db: SeedData, n: int, seed: int, cond: Any = None) -> list[dict]:
    rows = [p for p in D.visible_projects(db) if cond is None or cond(p)]
    return pick(rows, n, seed)


def _issue_rows(db: SeedData, paths: list[str], state: str, cond: Any, n: int, seed: int) -> list[dict]:
    rows = [dict(i, fp=fp) for fp in paths for i in D.quiet_issues(db, fp, state) if cond(i)]
    return pick(rows, n, seed)


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
            out.append({"values": {"label": lab, "project": p["full_path"]},
                        "data": {"n": sum(lab in i["labels"] for i in issues)}})
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
    return inst(404, [{"values": {"project": p["full_path"]}, "data": {"n": p["stars"]}} for p in _projects(db, 12, 404)])


def _assignees(db: SeedData) -> list[Instance]:
    paths = [p["full_path"] for p in D.visible_projects(db)]
    rows = _issue_rows(db, paths, "all", lambda i: 1 <= len(i["assignees"]) <= 2, 12, 405)
    return inst(405, [{"values": {"iid": i["iid"], "project": i["fp"]},
                       "data": {"names": [D.user_name(db, u) for u in i["assignees"]]}} for i in rows])


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
    return inst(407, [{"values": {"iid": i["iid"], "project": i["fp"]}, "data": {"due": D.due(i["due_date"])}}
                      for i in rows])


def _merged(db: SeedData) -> list[Instance]:
    c, out = D.conn(db), []
    for p in _projects(db, 20, 408, lambda p: bool(GQ.merge_requests(D.conn(db), p["full_path"]))):
        out.append({"values": {"project": p["full_path"]},
                    "data": {"n": len(GQ.merge_requests(c, p["full_path"], "merged"))}})
    return inst(408, out[:12])


def _statuses(db: SeedData) -> list[Instance]:
    users = [u for u in GQ.users(D.conn(db)) if (GQ.user(D.conn(db), u["username"]) or {}).get("status_message")]
    return inst(409, [{"values": {"user": u["username"]},
                       "data": {"message": GQ.user(D.conn(db), u["username"])["status_message"]}}
                      for u in pick(users, 5, 409)])


DASH = [("issues", "assigned to me", "assignee"), ("issues", "created by me", "author"),
        ("merge requests", "assigned to me", "assignee"), ("merge requests", "waiting for my review", "reviewer")]


def _dash_counts(db: SeedData) -> list[Instance]:
    out = []
    for kind, rel, role in DASH:
        for state in ("open", "closed"):
            n = D.dashboard_count(db, "issues" if kind == "issues" else "mrs", role, "opened" if state == "open"
                                  else "closed")
            out.append({"values": {"state": state, "kind": kind, "relation": rel}, "data": {"n": n, "role": role}})
    return inst(410, out)


def _dash_steps(i: Instance) -> list[Any]:
    """Open the dashboard list of issues or merge requests with the right person filter."""
    v, role = i.values, i.data["role"]
    kind = "Issues" if v["kind"] == "issues" else "Merge requests"
    steps: list[Any] = [Click(M("a", kind), why=f"open my {v['kind']} dashboard")]
    if role != "assignee":
        steps += [Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
                  Fill(M("input", name=f"{role}_username"), ME, why=f"filter by {role}"),
                  Click(M("button", "Search"), why="apply the filters")]
    return steps


def _go_issue(i: Instance) -> Go:
    return Go(f"/{i.values['project']}/-/issues/{i.values['iid']}", why=f"open issue #{i.values['iid']}")


INFO = [
    Template(401, "gitlab", "Who has made the most commits to {{project}}?", "info", ("string_match",),
             _top_contributor, lambda i: string_eval(exact=i.data["name"]),
             lambda i: [Go(f"/{i.values['project']}", why="open the project"),
                        Click(M("a", "Contributors"), why="the contributors page counts commits per author"),
                        Answer(i.data["name"])]),
    Template(402, "gitlab", 'How many open issues of {{project}} have the label "{{label}}"?', "info",
             ("string_match",), _label_counts, lambda i: string_eval(exact=str(i.data["n"])),
             lambda i: [Go(f"/{i.values['project']}/-/issues", why="open the project's issues"),
                        Choose(M("select", name="label_name[]"), i.values["label"], why="filter by the label"),
                        Click(M("button", "Search"), why="apply the filter"), Answer(str(i.data["n"]))]),
    Template(403, "gitlab", "How many commits has {{author}} made to {{project}}?", "info", ("string_match",),
             _author_commits, lambda i: string_eval(exact=str(i.data["n"])),
             lambda i: [Go(f"/{i.values['project']}", why="open the project"),
                        Click(M("a", "Contributors"), why="the contributors page counts commits per author"),
                        Answer(str(i.data["n"]))]),
    Template(404, "gitlab", "How many stars does the project {{project}} have?", "info", ("string_match",),
             _stars, lambda i: string_eval(exact=str(i.data["n"])),
             lambda i: [Go(f"/{i.values['project']}", why="open the project"), Answer(str(i.data["n"]))]),
    Template(405, "gitlab", "Who is assigned to issue #{{iid}} of {{project}}?", "info", ("string_match",),
             _assignees, lambda i: string_eval(include=i.data["names"]),
             lambda i: [_go_issue(i), Answer(", ".join(i.data["names"]))]),
    Template(406, "gitlab", "What role does {{user}} have in the project {{project}}?", "info", ("string_match",),
             _roles, lambda i: string_eval(exact=i.data["role"]),
             lambda i: [Go(f"/{i.values['project']}", why="open the project"),
                        Click(M("a", "Members"), why="open the members list"), Answer(i.data["role"])]),
    Template(407, "gitlab", "When is issue #{{iid}} of {{project}} due?", "info", ("string_match",), _due_dates,
             lambda i: string_eval(include=[i.data["due"]]), lambda i: [_go_issue(i), Answer(i.data["due"])],
             held_out=True),
    Template(408, "gitlab", "How many merge requests of {{project}} have been merged?", "info", ("string_match",),
             _merged, lambda i: string_eval(exact=str(i.data["n"])),
             lambda i: [Go(f"/{i.values['project']}", why="open the project"),
                        Click(SIDEBAR_MRS, after=AFTER_CONTRIB, why="open the project's merge requests"),
                        Answer(str(i.data["n"]))]),
    Template(409, "gitlab", "What is {{user}}'s current status message?", "info", ("string_match",), _statuses,
             lambda i: string_eval(fuzzy=[i.data["message"]]),
             lambda i: [Go(f"/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
                        Answer(i.data["message"])]),
    Template(410, "gitlab", "How many {{state}} {{kind}} are {{relation}}?", "info", ("string_match",), _dash_counts,
             lambda i: string_eval(exact=str(i.data["n"])),
             lambda i: [*_dash_steps(i), Answer(str(i.data["n"]))]),
]


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
    rows = _projects(db, 12, 424, lambda p: p["full_path"] not in starred and
                     not any(s.startswith(p["full_path"]) for s in starred))
    return inst(424, [{"values": {"project": p["full_path"]}} for p in rows])


def _follows(db: SeedData) -> list[Instance]:
    c = D.conn(db)
    mine = set(GQ.following(c, ME))
    users = [u["username"] for u in GQ.users(c)[1:] if u["username"] not in mine]
    return inst(429, [{"values": {"user": u}} for u in pick(users, 8, 429)])


def _mr_notes(db: SeedData) -> list[Instance]:
    rows = [dict(m, fp=p["full_path"]) for p in D.visible_projects(db) for m in D.quiet_mrs(db, p["full_path"])]
    out = []
    for k, m in enumerate(pick(rows, 12, 428)):
        text = D.NOTES[k % len(D.NOTES)]
        if text not in D.note_bodies(db, "merge_request", m["id"]):  # doing nothing must not pass
            out.append({"values": {"text": text, "iid": m["iid"], "project": m["fp"]}})
    return inst(428, out)


def _token_eval(i: Instance) -> dict[str, Any]:
    name = js_string(i.values["name"])
    rows = ("[...document.querySelectorAll('.active-tokens tbody tr')].filter((r) => r.querySelector('.token-name') "
            f"&& r.querySelector('.token-name').outerText.trim() === {name}).map((r) => "
            "r.querySelector('.token-scopes').outerText).join('; ')")
    return html_eval(target(f"{G}/-/profile/personal_access_tokens", rows, exact=i.values["scope"]))


def _starred_eval(i: Instance) -> dict[str, Any]:
    hrefs = "[...document.querySelectorAll('.projects-list a.project')].map((a) => a.getAttribute('href')).join(' ')"
    return html_eval(target(f"{G}/dashboard/projects/starred", hrefs, include=[f"/{i.values['project']}"]))


NEW_PROJECTS = ["release-notes-bot", "team-handbook", "sketch-archive", "api-playground", "garden-planner",
                "recipe-scaler", "bookmark-sync", "trail-logger", "invoice-tools", "quiz-engine", "font-preview",
                "habit-tracker"]


STATE = [
    Template(421, "gitlab", 'Create an issue in {{project}} titled "{{title}}"', "state", ("program_html",),
             _new_issues,
             lambda i: html_eval(target(f"{G}/{i.values['project']}/-/issues?state=all&search="
                                        f"{quote_plus(i.values['title'])}",
                                        "document.querySelector('.issues-list').outerText",
                                        include=[i.values["title"]])),
             lambda i: [Go(f"/{i.values['project']}/-/issues", why="open the project's issues"),
                        Click(M("a", "New issue"), why="start a new issue"),
                        Fill(M("input", name="issue[title]"), i.values["title"], why="write the title"),
                        Click(M("button", "Create issue"), why="create the issue"), Answer()]),
    Template(422, "gitlab", "Assign issue #{{iid}} of {{project}} to me", "state", ("program_html",),
             lambda db: _editable_open_issues(db, 422, lambda i: ME not in i["assignees"]),
             lambda i: html_eval(target(f"{G}/{i.values['project']}/-/issues/{i.values['iid']}",
                                        "document.querySelector('.block.assignee').outerText", include=[f"@{ME}"])),
             lambda i: [_go_issue(i), Click(M("button", "assign yourself"), why="assign the issue to myself"),
                        Answer()]),
    Template(423, "gitlab", "Invite {{user}} to the project {{project}} as {{role}}", "state", ("program_html",),
             _invites,
             lambda i: html_eval(target(f"{G}/{i.values['project']}/-/project_members",
                                        f"func:gitlab_get_project_memeber_role(__page__, '{i.values['user']}')",
                                        exact=i.values["role"])),
             lambda i: [Go(f"/{i.values['project']}/-/project_members", why="open the project's members"),
                        Fill(M("input", name="user_ids"), i.values["user"], why="enter the username"),
                        Choose(M("select", name="access_level"), i.values["role"], why="choose the role"),
                        Click(M("button", "Invite"), why="send the invitation"), Answer()]),
    Template(424, "gitlab", "Star the project {{project}}", "state", ("program_html",), _stars_to_give,
             _starred_eval,
             lambda i: [Go(f"/{i.values['project']}", why="open the project"),
                        Click(M("button", "Star"), why="star it"), Answer()]),
    Template(425, "gitlab", 'Set my status to "{{message}}"', "state", ("program_html",),
             lambda db: inst(425, [{"values": {"message": s}} for s in D.STATUSES]),
             lambda i: html_eval(
                 target(f"{G}/{ME}", "document.querySelector('.cover-status').outerText", include=[i.values["message"]]),
                 # the settings form shows the saved status once unsaved typing is discarded
                 target(f"{G}/-/profile", "document.querySelector('#user_status_message').value",
                        exact=i.values["message"], prep=["document.querySelector('#edit_user').reset()"])),
             lambda i: [Click(M("a", "Edit profile"), why="open my profile settings"),
                        Fill(M("input", name="user[status][message]"), i.values["message"], why="write the status"),
                        Click(M("button", "Update profile settings"), why="save the profile"), Answer()]),
    Template(426, "gitlab", 'Create a personal access token named "{{name}}" with the {{scope}} scope', "state",
             ("program_html",), lambda db: inst(426, [{"values": {"name": n, "scope": s}} for n, s in D.TOKENS]),
             _token_eval,
             lambda i: [Click(M("a", "Edit profile"), why="open my settings"),
                        Click(M("a", "Access Tokens"), why="open the access tokens page"),
                        Fill(M("input", name="personal_access_token[name]"), i.values["name"], why="name the token"),
                        Click(M("label", i.values["scope"]), why=f"tick the {i.values['scope']} scope"),
                        Click(M("button", "Create personal access token"), why="create the token"), Answer()]),
    Template(427, "gitlab", "Close issue #{{iid}} of {{project}}", "state", ("program_html",),
             lambda db: _editable_open_issues(db, 427, lambda i: True),
             lambda i: html_eval(target(f"{G}/{i.values['project']}/-/issues/{i.values['iid']}",
                                        "document.querySelector('[data-testid=\"issue-state-badge\"]').outerText",
                                        exact="Closed")),
             lambda i: [_go_issue(i), Click(M("button", "Close issue"), why="close the issue"), Answer()]),
    Template(428, "gitlab", 'Comment "{{text}}" on merge request !{{iid}} of {{project}}', "state",
             ("program_html",), _mr_notes,
             lambda i: html_eval(target(f"{G}/{i.values['project']}/-/merge_requests/{i.values['iid']}",
                                        "document.querySelector('#notes-list').outerText", include=[i.values["text"]])),
             lambda i: [Go(f"/{i.values['project']}/-/merge_requests/{i.values['iid']}",
                           why=f"open merge request !{i.values['iid']}"),
                        Fill(M("textarea", name="note[note]"), i.values["text"], why="write the comment"),
                        Click(M("button", "Comment"), why="post the comment"), Answer()]),
    Template(429, "gitlab", "Follow the user {{user}}", "state", ("program_html",), _follows,
             lambda i: html_eval(target(f"{G}/users/{ME}/following", "document.querySelector('.user-list').outerText",
                                        include=[f"@{i.values['user']}"])),
             lambda i: [Go(f"/{i.values['user']}", why=f"open {i.values['user']}'s profile"),
                        Click(M("button", "Follow"), why="follow them"), Answer()], held_out=True),
    Template(430, "gitlab", "Create a new {{visibility}} project named {{name}}", "state", ("program_html",),
             lambda db: inst(430, [{"values": {"visibility": "private" if k % 3 == 0 else "public", "name": n}}
                                   for k, n in enumerate(NEW_PROJECTS)]),
             lambda i: html_eval(
                 target(f"{G}/{ME}/{i.values['name']}", "document.querySelector('.home-panel-title').outerText",
                        include=[i.values["name"]]),
                 target("last", "document.querySelector('.home-panel-title .visibility-icon').outerText",
                        exact=i.values["visibility"].capitalize())),
             lambda i: [Click(M("a", "New project"), why="start a new project"),
                        Fill(M("input", name="project[name]"), i.values["name"], why="name the project"),
                        Click(M("input", type="radio", value=i.values["visibility"]),
                              why=f"make it {i.values['visibility']}"),
                        Click(M("button", "Create project"), why="create the project"), Answer()]),
]


# -- navigation -----------------------------------------------------------------------------------------------------
PAGES = [("the issues assigned to me", "/dashboard/issues?assignee_username=byteblaze"),
         ("the issues I created", "/dashboard/issues?author_username=byteblaze"),
         ("the merge requests assigned to me", "/dashboard/merge_requests?assignee_username=byteblaze"),
         ("the merge requests I am asked to review", "/dashboard/merge_requests?reviewer_username=byteblaze"),
         ("my to-do list", "/dashboard/todos"), ("the projects I starred", "/dashboard/projects/starred"),
         ("my personal access tokens", "/-/profile/personal_access_tokens")]
PAGE_STEPS = {
    0: [Click(M("a", "Issues"), why="the header's Issues link lists the issues assigned to me")],
    1: [Click(M("a", "Issues"), why="open my issues dashboard"),
        Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
        Fill(M("input", name="author_username"), ME, why="filter by author"), Click(M("button", "Search"))],
    2: [Click(M("a", "Merge requests"), why="the header's link lists the merge requests assigned to me")],
    3: [Click(M("a", "Merge requests"), why="open my merge requests dashboard"),
        Fill(M("input", name="assignee_username"), "", why="clear the assignee filter"),
        Fill(M("input", name="reviewer_username"), ME, why="filter by reviewer"), Click(M("button", "Search"))],
    4: [Click(M("a", "To-Do List"), why="open the to-do list")],
    5: [Click(M("a", "Starred projects"), why="open the starred projects tab")],
    6: [Click(M("a", "Edit profile"), why="open my settings"), Click(M("a", "Access Tokens"))],
}


def _closed_issues(db: SeedData, tid: int) -> list[Instance]:
    c, out = D.conn(db), []
    for p in _projects(db, 20, tid, lambda p: bool(GQ.issues(D.conn(db), p["full_path"], "closed"))):
        latest = GQ.issues(c, p["full_path"], "closed")[0]
        out.append({"values": {"project": p["full_path"]}, "data": {"iid": latest["iid"], "title": latest["title"]}})
    return inst(tid, out[:12])


def _commit_authors(db: SeedData) -> list[Instance]:
    out = []
    for k, p in enumerate(_projects(db, 12, 444)):
        rows = D.contributors(db, p["full_path"])
        if rows:
            out.append({"values": {"author": rows[k % len(rows)][0], "project": p["full_path"]}})
    return inst(444, out[:10])


def _to_closed(i: Instance) -> list[Any]:
    return [Go(f"/{i.values['project']}", why="open the project"),
            Click(M("a", "Issues"), after=AFTER_CONTRIB, why="open the project's issues"),
            Click(M("a", contains="Closed"), why="show the closed issues")]


NAV = [
    Template(441, "gitlab", "Open {{page}}", "nav", ("url_match",),
             lambda db: inst(441, [{"values": {"page": name}, "data": {"k": k, "path": path}}
                                   for k, (name, path) in enumerate(PAGES)]),
             lambda i: url_eval(f"{G}{i.data['path']}"), lambda i: [*PAGE_STEPS[i.data["k"]], Answer()]),
    Template(442, "gitlab", "Show me the closed issues of {{project}}", "nav", ("url_match",),
             lambda db: _closed_issues(db, 442),
             lambda i: url_eval(f"{G}/{i.values['project']}/-/issues?state=closed"),
             lambda i: [*_to_closed(i), Answer()]),
    Template(443, "gitlab", "Open the most recently created closed issue of {{project}}", "nav", ("url_match",),
             lambda db: _closed_issues(db, 443),
             lambda i: url_eval(f"{G}/{i.values['project']}/-/issues/{i.data['iid']}"),
             lambda i: [*_to_closed(i), Click(M("a", i.data["title"]), why="open the newest closed issue"), Answer()]),
    Template(444, "gitlab", "Show the commits {{author}} made to {{project}}", "nav", ("url_match",),
             _commit_authors,
             lambda i: url_eval(f"{G}/{i.values['project']}/-/commits/main?author={quote(i.values['author'])}"),
             lambda i: [Go(f"/{i.values['project']}/-/commits/main", why="open the project's commits"),
                        Fill(M("input", name="author"), i.values["author"], why="filter by author"),
                        Click(M("button", "Filter"), why="apply the filter"), Answer()], held_out=True),
]

TEMPLATES = INFO + STATE + NAV
