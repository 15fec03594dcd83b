"""Code host routes for issues: project list with filters, dashboard list, new issue, issue page and its actions
(close/reopen, comment, assignees, labels, due date)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request

from sites.core import get_db, page_of
from sites.gitlab import issuables as I
from sites.gitlab.constants import PAGE_SIZE
from sites.gitlab.util import now_ts
from sites.gitlab.view_helpers import access_level, current_user, project_or_404, require_user

LIST_SQL = (
    "SELECT x.*, u.username AS author_username, u.name AS author_name, n.path || '/' || p.path AS full_path, "
    "(SELECT count(*) FROM notes t WHERE t.target_type = 'issue' AND t.target_id = x.id AND t.system = 0) "
    "AS n_notes FROM issues x JOIN users u ON u.id = x.author_id JOIN projects p ON p.id = x.project_id "
    "JOIN namespaces n ON n.id = p.namespace_id"
)


def _decorate(rows: list[Any]) -> list[dict]:
    db = get_db()
    out = []
    for r in rows:
        labels = db.execute(
            "SELECT l.name, l.color FROM issue_labels il JOIN labels l ON l.id = il.label_id "
            "WHERE il.issue_id = ? ORDER BY l.name",
            (r["id"],),
        ).fetchall()
        out.append(dict(r, labels=labels, assignees=I.users_of("issue_assignees", "issue_id", r["id"])))
    return out


def issue_list(base: list[str], params: list[Any]) -> dict[str, Any]:
    where, fparams, values = I.filters("issue", ("opened", "closed"))
    state_free = [w for w in where if w != "x.state = ?"]
    state_free_params = list(fparams[1:]) if values["state"] != "all" else list(fparams)
    counts = I.state_counts("issue", base + state_free, params + state_free_params)
    all_where = " AND ".join(base + where) or "1"
    count_sql = f"SELECT count(*) FROM issues x WHERE {all_where}"  # noqa: S608
    total = get_db().execute(count_sql, params + fparams).fetchone()[0]
    page = page_of(total, PAGE_SIZE, "page")
    rows = (
        get_db()
        .execute(
            f"{LIST_SQL} WHERE {all_where} ORDER BY {I.SORTS[values['sort']]}, x.id DESC "  # noqa: S608
            "LIMIT ? OFFSET ?",
            (*params, *fparams, page.per_page, page.offset),
        )
        .fetchall()
    )
    return {"issues": _decorate(rows), "page": page, "counts": counts, "f": values}


def issue_or_404(p: Any, iid: int) -> Any:
    row = get_db().execute(f"{LIST_SQL} WHERE x.project_id = ? AND x.iid = ?", (p["id"], iid)).fetchone()  # noqa: S608
    if row is None:
        abort(404)
    return _decorate([row])[0]


def register(app: Flask) -> None:
    _register_lists(app)
    _register_issue(app)


def _register_lists(app: Flask) -> None:
    @app.get("/<ns>/<project>/-/issues")
    @app.get("/<ns>/<project>/-/issues/")
    def issues(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        ctx = issue_list(["x.project_id = ?"], [p["id"]])
        labels = (
            get_db()
            .execute("SELECT name FROM labels WHERE project_id = ? ORDER BY name", (p["id"],))
            .fetchall()
        )
        return render_template(
            "gitlab/issues.html", p=p, labels=labels, members=I.member_choices(p["id"]), **ctx
        )

    @app.get("/dashboard/issues")
    def dashboard_issues() -> Any:
        user = require_user()
        if not any(request.args.get(k) for k in ("assignee_username", "author_username")):
            return redirect(f"/dashboard/issues?assignee_username={user['username']}")
        vis = I.VISIBLE
        ctx = issue_list([vis], [user["id"]])
        return render_template("gitlab/issues.html", p=None, labels=[], members=[], **ctx)

    @app.route("/<ns>/<project>/-/issues/new", methods=["GET", "POST"])
    def new_issue(ns: str, project: str) -> Any:
        user = require_user()
        p = project_or_404(ns, project)
        db = get_db()
        labels = db.execute(
            "SELECT id, name FROM labels WHERE project_id = ? ORDER BY name", (p["id"],)
        ).fetchall()
        ctx = {"p": p, "labels": labels, "members": I.member_choices(p["id"])}
        if request.method == "GET":
            return render_template("gitlab/new_issue.html", form={}, **ctx)
        form = {k: request.form.get(f"issue[{k}]", "").strip() for k in ("title", "description", "due_date")}
        error = "Title can't be blank" if not form["title"] else _due_date_error(form["due_date"])
        if error:
            flash(error, "alert")
            return render_template("gitlab/new_issue.html", form=form, **ctx), 400
        assignees = I.user_ids_from_form("issue[assignee_ids][]", p["id"])
        label_ids = {r["id"] for r in labels}
        chosen = [
            int(v) for v in request.form.getlist("issue[label_ids][]") if v.isdigit() and int(v) in label_ids
        ]
        ts = now_ts()
        iid = db.execute(
            "SELECT coalesce(max(iid), 0) + 1 FROM issues WHERE project_id = ?", (p["id"],)
        ).fetchone()[0]
        issue_id = db.execute(
            "INSERT INTO issues (project_id, iid, title, description, author_id, state, due_date, "
            "created_at, updated_at) VALUES (?,?,?,?,?,'opened',?,?,?)",
            (p["id"], iid, form["title"], form["description"], user["id"], form["due_date"] or None, ts, ts),
        ).lastrowid
        I.set_users("issue_assignees", "issue_id", issue_id, assignees)
        db.executemany(
            "INSERT INTO issue_labels VALUES (?,?)", [(issue_id, lab) for lab in dict.fromkeys(chosen)]
        )
        db.commit()
        return redirect(f"/{p['full_path']}/-/issues/{iid}")


def _due_date_error(value: str) -> str | None:
    if not value:
        return None
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return "Due date must be a date (YYYY-MM-DD)."
    return None


def _register_issue(app: Flask) -> None:
    @app.get("/<ns>/<project>/-/issues/<int:iid>")
    def issue(ns: str, project: str, iid: int) -> Any:
        p = project_or_404(ns, project)
        i = issue_or_404(p, iid)
        labels = (
            get_db()
            .execute("SELECT id, name FROM labels WHERE project_id = ? ORDER BY name", (p["id"],))
            .fetchall()
        )
        user = current_user()
        can_edit = user is not None and (user["id"] == i["author_id"] or access_level(p["id"]) >= 20)
        return render_template(
            "gitlab/issue.html",
            p=p,
            i=i,
            notes=I.notes_of("issue", i["id"]),
            labels=labels,
            members=I.member_choices(p["id"]),
            can_edit=can_edit,
        )

    @app.post("/<ns>/<project>/-/issues/<int:iid>/<any(close,reopen,notes,assignees,labels,due_date):action>")
    def issue_action(ns: str, project: str, iid: int, action: str) -> Any:
        user = require_user()
        p = project_or_404(ns, project)
        i = issue_or_404(p, iid)
        if action != "notes" and user["id"] != i["author_id"] and access_level(p["id"]) < 20:
            abort(403, "You need the Reporter role or higher, or to be the author, to change this issue.")
        _apply_issue_action(action, p, i, user)
        get_db().commit()
        return redirect(f"/{p['full_path']}/-/issues/{iid}")


def _apply_issue_action(action: str, p: Any, i: dict, user: Any) -> None:
    db = get_db()
    if action in ("close", "reopen"):
        state, closed = ("closed", now_ts()) if action == "close" else ("opened", None)
        db.execute("UPDATE issues SET state = ?, closed_at = ? WHERE id = ?", (state, closed, i["id"]))
        I.add_note("issue", i["id"], user["id"], "closed" if action == "close" else "reopened", system=True)
    elif action == "notes":
        body = request.form.get("note[note]", "").strip()
        if not body:
            abort(400, "The comment must not be empty.")
        I.add_note("issue", i["id"], user["id"], body)
    elif action == "assignees":
        ids = I.user_ids_from_form("assignee_ids[]", p["id"])
        if request.form.get("assign_self"):
            ids = [user["id"]] + [a["id"] for a in i["assignees"]]
        I.set_users("issue_assignees", "issue_id", i["id"], ids)
        I.add_note("issue", i["id"], user["id"], "changed the assignees", system=True)
    elif action == "labels":
        valid = {r[0] for r in db.execute("SELECT id FROM labels WHERE project_id = ?", (p["id"],))}
        chosen = [int(v) for v in request.form.getlist("label_ids[]") if v.isdigit() and int(v) in valid]
        db.execute("DELETE FROM issue_labels WHERE issue_id = ?", (i["id"],))
        db.executemany(
            "INSERT INTO issue_labels VALUES (?,?)", [(i["id"], lab) for lab in dict.fromkeys(chosen)]
        )
        I.add_note("issue", i["id"], user["id"], "changed the labels", system=True)
    else:
        value = request.form.get("due_date", "").strip()
        error = _due_date_error(value)
        if error:
            abort(400, error)
        db.execute("UPDATE issues SET due_date = ? WHERE id = ?", (value or None, i["id"]))
        I.add_note("issue", i["id"], user["id"], "changed the due date", system=True)
