"""Code host routes for merge requests: project list, dashboard list, new merge request, page, comment,
close/reopen/merge."""

from __future__ import annotations

from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request

from sites.core import get_db, page_of
from sites.gitlab import issuables as I
from sites.gitlab.constants import PAGE_SIZE
from sites.gitlab.util import now_ts
from sites.gitlab.view_helpers import access_level, project_or_404, require_level, require_user

LIST_SQL = (
    "SELECT x.*, u.username AS author_username, u.name AS author_name, n.path || '/' || p.path AS full_path, "
    "(SELECT count(*) FROM notes t WHERE t.target_type = 'merge_request' AND t.target_id = x.id AND "
    "t.system = 0) AS n_notes FROM merge_requests x JOIN users u ON u.id = x.author_id "
    "JOIN projects p ON p.id = x.project_id JOIN namespaces n ON n.id = p.namespace_id"
)
STATES = ("opened", "merged", "closed")


def _decorate(rows: list[Any]) -> list[dict]:
    return [
        dict(
            r,
            assignees=I.users_of("mr_assignees", "mr_id", r["id"]),
            reviewers=I.users_of("mr_reviewers", "mr_id", r["id"]),
        )
        for r in rows
    ]


def mr_list(base: list[str], params: list[Any]) -> dict[str, Any]:
    where, fparams, values = I.filters("merge_request", STATES)
    state_free = [w for w in where if w != "x.state = ?"]
    counts = I.state_counts(
        "merge_request", base + state_free, params + (fparams[1:] if values["state"] != "all" else fparams)
    )
    all_where = " AND ".join(base + where) or "1"
    db = get_db()
    total = db.execute(
        f"SELECT count(*) FROM merge_requests x WHERE {all_where}", params + fparams
    ).fetchone()[0]  # noqa: S608
    page = page_of(total, PAGE_SIZE, "page")
    rows = db.execute(
        f"{LIST_SQL} WHERE {all_where} ORDER BY {I.SORTS[values['sort']]}, x.id DESC "  # noqa: S608
        "LIMIT ? OFFSET ?",
        (*params, *fparams, page.per_page, page.offset),
    ).fetchall()
    return {"mrs": _decorate(rows), "page": page, "counts": counts, "f": values}


def mr_or_404(p: Any, iid: int) -> dict:
    row = get_db().execute(f"{LIST_SQL} WHERE x.project_id = ? AND x.iid = ?", (p["id"], iid)).fetchone()  # noqa: S608
    if row is None:
        abort(404)
    return _decorate([row])[0]


def register(app: Flask) -> None:
    @app.get("/<ns>/<project>/-/merge_requests")
    def merge_requests(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        return render_template("gitlab/merge_requests.html", p=p, **mr_list(["x.project_id = ?"], [p["id"]]))

    @app.get("/dashboard/merge_requests")
    def dashboard_merge_requests() -> Any:
        user = require_user()
        if not any(
            request.args.get(k) for k in ("assignee_username", "reviewer_username", "author_username")
        ):
            return redirect(f"/dashboard/merge_requests?assignee_username={user['username']}")
        vis = I.VISIBLE
        return render_template("gitlab/merge_requests.html", p=None, **mr_list([vis], [user["id"]]))

    @app.route("/<ns>/<project>/-/merge_requests/new", methods=["GET", "POST"])
    def new_merge_request(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        user = require_level(p, 30)
        db = get_db()
        branches = [
            r[0]
            for r in db.execute("SELECT name FROM branches WHERE project_id = ? ORDER BY name", (p["id"],))
        ]
        ctx = {"p": p, "branches": branches, "members": I.member_choices(p["id"])}
        if request.method == "GET":
            return render_template("gitlab/new_mr.html", form=dict(request.args.items()), **ctx)
        form = {
            k: request.form.get(f"merge_request[{k}]", "").strip()
            for k in ("title", "description", "source_branch", "target_branch")
        }
        error = (
            "Title can't be blank"
            if not form["title"]
            else "Choose existing source and target branches"
            if not {form["source_branch"], form["target_branch"]} <= set(branches)
            else "Source and target branch must differ"
            if form["source_branch"] == form["target_branch"]
            else None
        )
        if error:
            flash(error, "alert")
            return render_template("gitlab/new_mr.html", form=form, **ctx), 400
        ts = now_ts()
        iid = db.execute(
            "SELECT coalesce(max(iid), 0) + 1 FROM merge_requests WHERE project_id = ?", (p["id"],)
        ).fetchone()[0]
        mr_id = db.execute(
            "INSERT INTO merge_requests (project_id, iid, title, description, author_id, source_branch, "
            "target_branch, state, created_at, updated_at) VALUES (?,?,?,?,?,?,?,'opened',?,?)",
            (
                p["id"],
                iid,
                form["title"],
                form["description"],
                user["id"],
                form["source_branch"],
                form["target_branch"],
                ts,
                ts,
            ),
        ).lastrowid
        I.set_users(
            "mr_assignees", "mr_id", mr_id, I.user_ids_from_form("merge_request[assignee_ids][]", p["id"])
        )
        I.set_users(
            "mr_reviewers", "mr_id", mr_id, I.user_ids_from_form("merge_request[reviewer_ids][]", p["id"])
        )
        db.commit()
        return redirect(f"/{p['full_path']}/-/merge_requests/{iid}")

    @app.get("/<ns>/<project>/-/merge_requests/<int:iid>")
    def merge_request(ns: str, project: str, iid: int) -> Any:
        p = project_or_404(ns, project)
        m = mr_or_404(p, iid)
        return render_template(
            "gitlab/merge_request.html",
            p=p,
            mr=m,
            notes=I.notes_of("merge_request", m["id"]),
            level=access_level(p["id"]),
        )

    @app.post("/<ns>/<project>/-/merge_requests/<int:iid>/<any(notes,close,reopen,merge):action>")
    def merge_request_action(ns: str, project: str, iid: int, action: str) -> Any:
        user = require_user()
        p = project_or_404(ns, project)
        m = mr_or_404(p, iid)
        db = get_db()
        if action == "notes":
            body = request.form.get("note[note]", "").strip()
            if not body:
                abort(400, "The comment must not be empty.")
            I.add_note("merge_request", m["id"], user["id"], body)
        else:
            if access_level(p["id"]) < 30 and user["id"] != m["author_id"]:
                abort(403, "You need the Developer role or higher to change this merge request.")
            if m["state"] == "merged":
                abort(400, "This merge request is already merged.")
            state = {"close": "closed", "reopen": "opened", "merge": "merged"}[action]
            db.execute("UPDATE merge_requests SET state = ? WHERE id = ?", (state, m["id"]))
            I.add_note(
                "merge_request", m["id"], user["id"], state if state != "opened" else "reopened", system=True
            )
        db.commit()
        return redirect(f"/{p['full_path']}/-/merge_requests/{iid}")
