"""Code host routes for a project: overview, star/unstar and starrers, members (invite, change role, remove),
and creating a project."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request

from sites.core import get_db
from sites.gitlab.util import ROLES, now_ts, project_path_from_name
from sites.gitlab.view_helpers import access_level, current_user, project_or_404, require_level, require_user

TEMPLATES = {
    "": None,
    "android": "Android",
    "rails": "Ruby on Rails",
    "express": "NodeJS Express",
    "spring": "Spring",
    "iosswift": "iOS (Swift)",
    "plainhtml": "Pages/Plain HTML",
}


def _members(project_id: int) -> list[Any]:
    return (
        get_db()
        .execute(
            "SELECT m.*, u.username, u.name FROM project_members m JOIN users u ON u.id = m.user_id "
            "WHERE m.project_id = ? ORDER BY m.access_level DESC, u.name COLLATE NOCASE",
            (project_id,),
        )
        .fetchall()
    )


def register(app: Flask) -> None:
    _register_project(app)
    _register_members(app)
    _register_new_project(app)


def _register_project(app: Flask) -> None:
    @app.get("/<ns>/<project>")
    def project(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        db = get_db()
        user = current_user()
        starred = (
            user is not None
            and db.execute(
                "SELECT 1 FROM stars WHERE user_id = ? AND project_id = ?", (user["id"], p["id"])
            ).fetchone()
            is not None
        )
        stats = db.execute(
            "SELECT (SELECT count(*) FROM commits WHERE project_id = ?1 AND branch = ?2), "
            "(SELECT count(*) FROM branches WHERE project_id = ?1)",
            (p["id"], p["default_branch"]),
        ).fetchone()
        files = db.execute(
            "SELECT path, content FROM files WHERE project_id = ? AND branch = ? ORDER BY path",
            (p["id"], p["default_branch"]),
        ).fetchall()
        readme = next((f["content"] for f in files if f["path"].lower() == "readme.md"), None)
        return render_template(
            "gitlab/project.html",
            p=p,
            starred=starred,
            n_commits=stats[0],
            n_branches=stats[1],
            files=files,
            readme=readme,
            level=access_level(p["id"]),
        )

    @app.post("/<ns>/<project>/-/star")
    @app.post("/<ns>/<project>/toggle_star")
    def toggle_star(ns: str, project: str) -> Any:
        user = require_user()
        p = project_or_404(ns, project)
        db = get_db()
        if (
            db.execute(
                "DELETE FROM stars WHERE user_id = ? AND project_id = ?", (user["id"], p["id"])
            ).rowcount
            == 0
        ):
            db.execute("INSERT INTO stars VALUES (?,?,?)", (user["id"], p["id"], now_ts()))
        db.commit()
        return redirect(f"/{p['full_path']}")

    @app.get("/<ns>/<project>/-/starrers")
    def starrers(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        rows = (
            get_db()
            .execute(
                "SELECT u.username, u.name, s.created_at FROM stars s JOIN users u ON u.id = s.user_id "
                "WHERE s.project_id = ? ORDER BY s.created_at DESC",
                (p["id"],),
            )
            .fetchall()
        )
        return render_template("gitlab/starrers.html", p=p, starrers=rows)


def _register_members(app: Flask) -> None:
    @app.get("/<ns>/<project>/-/project_members")
    def project_members(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        return render_template(
            "gitlab/members.html",
            p=p,
            members=_members(p["id"]),
            level=access_level(p["id"]),
            search=request.args.get("search", ""),
        )

    @app.post("/<ns>/<project>/-/project_members")
    def invite_member(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        require_level(p, 40)
        names = [
            n.strip().lstrip("@") for n in re.split(r"[,\s]+", request.form.get("user_ids", "")) if n.strip()
        ]
        level = _level_arg(p)
        if not names:
            return _member_error(p, "Enter at least one username.")
        db = get_db()
        users = [
            db.execute("SELECT id, username FROM users WHERE username = ?", (n,)).fetchone() for n in names
        ]
        missing = [n for n, u in zip(names, users, strict=True) if u is None]
        if missing:
            return _member_error(p, f"No user named {', '.join(missing)}.")
        for u in users:
            db.execute(
                "INSERT INTO project_members (project_id, user_id, access_level, created_at) VALUES (?,?,?,?) "
                "ON CONFLICT (project_id, user_id) DO UPDATE SET access_level = excluded.access_level",
                (p["id"], u["id"], level, now_ts()),
            )
        db.commit()
        flash("Members were successfully added.", "notice")
        return redirect(f"/{p['full_path']}/-/project_members")

    @app.post("/<ns>/<project>/-/project_members/<int:member_id>")
    def update_member(ns: str, project: str, member_id: int) -> Any:
        p = project_or_404(ns, project)
        require_level(p, 40)
        member = _member_or_404(p["id"], member_id)
        level = _level_arg(p)
        if member["access_level"] == 50 and level < 50 and _owner_count(p["id"]) == 1:
            return _member_error(p, "A project needs at least one Owner.")
        db = get_db()
        db.execute("UPDATE project_members SET access_level = ? WHERE id = ?", (level, member_id))
        db.commit()
        flash(f"Role updated to {ROLES[level]}.", "notice")
        return redirect(f"/{p['full_path']}/-/project_members")

    @app.post("/<ns>/<project>/-/project_members/<int:member_id>/remove")
    def remove_member(ns: str, project: str, member_id: int) -> Any:
        p = project_or_404(ns, project)
        require_level(p, 40)
        member = _member_or_404(p["id"], member_id)
        if member["access_level"] == 50 and _owner_count(p["id"]) == 1:
            return _member_error(p, "A project needs at least one Owner.")
        db = get_db()
        db.execute("DELETE FROM project_members WHERE id = ?", (member_id,))
        db.commit()
        flash("Member was removed.", "notice")
        return redirect(f"/{p['full_path']}/-/project_members")


def _level_arg(p: Any) -> int:
    try:
        level = int(request.form.get("access_level", ""))
    except ValueError:
        level = 0
    if level not in ROLES:
        abort(400, "access_level must be one of 10, 20, 30, 40, 50")
    if level == 50 and access_level(p["id"]) < 50:
        abort(403, "Only an Owner can make someone an Owner.")
    return level


def _member_or_404(project_id: int, member_id: int) -> Any:
    row = (
        get_db()
        .execute("SELECT * FROM project_members WHERE id = ? AND project_id = ?", (member_id, project_id))
        .fetchone()
    )
    if row is None:
        abort(404)
    return row


def _owner_count(project_id: int) -> int:
    return (
        get_db()
        .execute(
            "SELECT count(*) FROM project_members WHERE project_id = ? AND access_level = 50", (project_id,)
        )
        .fetchone()[0]
    )


def _member_error(p: Any, message: str) -> Any:
    flash(message, "alert")
    return render_template(
        "gitlab/members.html", p=p, members=_members(p["id"]), level=access_level(p["id"]), search=""
    ), 400


def _register_new_project(app: Flask) -> None:
    @app.route("/projects/new", methods=["GET", "POST"])
    @app.post("/projects")
    def new_project() -> Any:
        user = require_user()
        if request.method == "GET":
            return render_template("gitlab/new_project.html", form={}, templates=TEMPLATES)
        form = {
            k: request.form.get(f"project[{k}]", "").strip()
            for k in (
                "name",
                "path",
                "description",
                "visibility_level",
                "template_name",
                "initialize_with_readme",
            )
        }
        form["path"] = form["path"] or project_path_from_name(form["name"])
        error = _new_project_error(form, user["id"])
        if error:
            flash(error, "alert")
            return render_template("gitlab/new_project.html", form=form, templates=TEMPLATES), 400
        _create_project(user, form)
        flash(f"Project '{form['name']}' was successfully created.", "notice")
        return redirect(f"/{user['username']}/{form['path']}")


def _new_project_error(form: dict[str, str], user_id: int) -> str | None:
    if not form["name"]:
        return "Project name can't be blank."
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}", form["path"]):
        return "Project path can contain only letters, digits, '_', '-' and '.'."
    if form["visibility_level"] not in ("private", "internal", "public"):
        return "Choose a visibility level."
    if form["template_name"] not in TEMPLATES:
        return "Unknown project template."
    if (
        get_db()
        .execute("SELECT 1 FROM projects WHERE namespace_id = ? AND path = ?", (user_id, form["path"]))
        .fetchone()
    ):
        return "Path has already been taken."
    return None


def _create_project(user: Any, form: dict[str, str]) -> None:
    db = get_db()
    ts = now_ts()
    pid = db.execute(
        "INSERT INTO projects (namespace_id, path, name, description, visibility, created_at, "
        "last_activity_at) VALUES (?,?,?,?,?,?,?)",
        (user["id"], form["path"], form["name"], form["description"], form["visibility_level"], ts, ts),
    ).lastrowid
    db.execute(
        "INSERT INTO project_members (project_id, user_id, access_level, created_at) VALUES (?,?,50,?)",
        (pid, user["id"], ts),
    )
    template = TEMPLATES[form["template_name"]]
    files: dict[str, str] = {}
    message = ""
    if template:
        message = f"Initialized from '{template}' project template"
        files = {
            "README.md": f"# {form['name']}\n\nA project created from the {template} template.\n",
            ".gitignore": "build/\n",
        }
    elif form["initialize_with_readme"]:
        message = "Initial commit"
        files = {"README.md": f"# {form['name']}\n\n{form['description']}\n"}
    for name, content in files.items():
        db.execute("INSERT INTO files VALUES (?,?,?,?)", (pid, "main", name, content))
    for label, color in (("bug", "#d9534f"), ("enhancement", "#5cb85c"), ("question", "#428bca")):
        db.execute("INSERT INTO labels (project_id, name, color) VALUES (?,?,?)", (pid, label, color))
    if message:
        sha = hashlib.sha1(f"{pid}-{ts}-{message}".encode()).hexdigest()  # noqa: S324 - an id, not security
        db.execute(
            "INSERT INTO commits (project_id, branch, sha, message, author_name, author_email, authored_at) "
            "VALUES (?,?,?,?,?,?,?)",
            (pid, "main", sha, message, user["name"], user["email"], ts),
        )
        db.execute("INSERT INTO branches VALUES (?,?,?)", (pid, "main", sha))
    db.commit()
