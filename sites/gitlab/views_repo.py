"""Code host routes for a project's repository: commits, branches, contributors, files (raw and blob)."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from flask import Flask, Response, abort, render_template, request

from sites.core import get_db, page_of
from sites.gitlab.util import short_date
from sites.gitlab.view_helpers import project_or_404

COMMITS_PER_PAGE = 40


def register(app: Flask) -> None:
    @app.get("/<ns>/<project>/-/commits")
    @app.get("/<ns>/<project>/-/commits/<path:branch>")
    def commits(ns: str, project: str, branch: str = "") -> Any:
        p = project_or_404(ns, project)
        branch = branch or p["default_branch"]
        where, args = "project_id = ? AND branch = ?", [p["id"], branch]
        author = request.args.get("author", "").strip()
        search = request.args.get("search", "").strip()
        if author:
            where += " AND (author_name = ? OR author_email = ?)"
            args += [author, author]
        if search:
            where += " AND message LIKE ?"
            args.append(f"%{search}%")
        db = get_db()
        total = db.execute(f"SELECT count(*) FROM commits WHERE {where}", args).fetchone()[0]  # noqa: S608
        page = page_of(total, COMMITS_PER_PAGE, "page")
        rows = db.execute(
            f"SELECT * FROM commits WHERE {where} ORDER BY authored_at DESC, id DESC "  # noqa: S608
            "LIMIT ? OFFSET ?",
            (*args, page.per_page, page.offset),
        ).fetchall()
        days = [
            (day, list(items)) for day, items in groupby(rows, key=lambda r: short_date(r["authored_at"]))
        ]
        return render_template(
            "gitlab/commits.html",
            p=p,
            branch=branch,
            days=days,
            page=page,
            author=author,
            search=search,
            total=total,
        )

    @app.get("/<ns>/<project>/-/branches")
    def branches(ns: str, project: str) -> Any:
        p = project_or_404(ns, project)
        rows = (
            get_db()
            .execute(
                "SELECT b.name, c.message, c.authored_at, c.sha FROM branches b LEFT JOIN commits c "
                "ON c.project_id = b.project_id AND c.sha = b.commit_sha WHERE b.project_id = ? "
                "ORDER BY b.name = ? DESC, b.name",
                (p["id"], p["default_branch"]),
            )
            .fetchall()
        )
        return render_template("gitlab/branches.html", p=p, branches=rows)

    @app.get("/<ns>/<project>/-/graphs/<branch>")
    def contributors(ns: str, project: str, branch: str) -> Any:
        p = project_or_404(ns, project)
        rows = (
            get_db()
            .execute(
                "SELECT author_name, author_email, count(*) AS n FROM commits WHERE project_id = ? "
                "AND branch = ? GROUP BY author_name, author_email ORDER BY n DESC, author_name",
                (p["id"], branch),
            )
            .fetchall()
        )
        return render_template("gitlab/contributors.html", p=p, branch=branch, authors=rows)

    @app.get("/<ns>/<project>/-/raw/<branch>/<path:file_path>")
    def raw(ns: str, project: str, branch: str, file_path: str) -> Any:
        f = _file_or_404(ns, project, branch, file_path)[1]
        return Response(f["content"], content_type="text/plain; charset=utf-8")

    @app.get("/<ns>/<project>/-/blob/<branch>/<path:file_path>")
    def blob(ns: str, project: str, branch: str, file_path: str) -> Any:
        p, f = _file_or_404(ns, project, branch, file_path)
        return render_template("gitlab/blob.html", p=p, f=f, branch=branch)


def _file_or_404(ns: str, project: str, branch: str, file_path: str) -> tuple[Any, Any]:
    p = project_or_404(ns, project)
    f = (
        get_db()
        .execute(
            "SELECT * FROM files WHERE project_id = ? AND branch = ? AND path = ?",
            (p["id"], branch, file_path),
        )
        .fetchone()
    )
    if f is None:
        abort(404)
    return p, f
