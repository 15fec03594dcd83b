"""Code host routes for people: profiles (/<user>, /users/<user>/...), groups (/<group>), follows, profile
settings, personal access tokens, the RSS feed token, and to-do items."""

from __future__ import annotations

import secrets
import string
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request, session

from sites.core import get_db
from sites.gitlab.util import now_ts
from sites.gitlab.view_helpers import current_user, require_user, visible_projects

SCOPES = ("api", "read_api", "read_user", "create_runner", "read_repository", "write_repository")
STATUS_EMOJI = {
    "": "",
    "coffee": "\u2615",
    "palm_tree": "\U0001f334",
    "speech_balloon": "\U0001f4ac",
    "smiley": "\U0001f603",
    "house": "\U0001f3e0",
    "thinking": "\U0001f914",
}


def _user_or_404(name: str) -> Any:
    row = get_db().execute("SELECT * FROM users WHERE username = ?", (name,)).fetchone()
    if row is None:
        abort(404)
    return row


def _profile(u: Any, tab: str) -> Any:
    db = get_db()
    me = current_user()
    ctx: dict[str, Any] = {"u": u, "tab": tab, "emoji": STATUS_EMOJI.get(u["status_emoji"], "")}
    ctx["n_followers"] = db.execute(
        "SELECT count(*) FROM follows WHERE followee_id = ?", (u["id"],)
    ).fetchone()[0]
    ctx["n_following"] = db.execute(
        "SELECT count(*) FROM follows WHERE follower_id = ?", (u["id"],)
    ).fetchone()[0]
    ctx["i_follow"] = (
        me is not None
        and db.execute(
            "SELECT 1 FROM follows WHERE follower_id = ? AND followee_id = ?", (me["id"], u["id"])
        ).fetchone()
        is not None
    )
    where = {
        "overview": ("p.namespace_id = ?", (u["id"],)),
        "projects": ("p.namespace_id = ?", (u["id"],)),
        "contributed": (
            "EXISTS (SELECT 1 FROM project_members m WHERE m.project_id = p.id AND m.user_id = ?) "
            "AND p.namespace_id != ?",
            (u["id"], u["id"]),
        ),
        "starred": ("EXISTS (SELECT 1 FROM stars s WHERE s.project_id = p.id AND s.user_id = ?)", (u["id"],)),
    }
    if tab in where:
        ctx["projects"], ctx["page"] = visible_projects(*where[tab], "latest_activity_desc")
    else:
        col, other = ("follower_id", "followee_id") if tab == "followers" else ("followee_id", "follower_id")
        ctx["people"] = db.execute(
            f"SELECT u.username, u.name FROM follows f JOIN users u ON u.id = f.{col} "  # noqa: S608
            f"WHERE f.{other} = ? ORDER BY u.name",
            (u["id"],),
        ).fetchall()
    return render_template("gitlab/user.html", **ctx)


def register(app: Flask) -> None:
    _register_profiles(app)
    _register_settings(app)


def _register_profiles(app: Flask) -> None:
    @app.get("/<name>")
    def namespace(name: str) -> Any:
        ns = get_db().execute("SELECT * FROM namespaces WHERE path = ?", (name,)).fetchone()
        if ns is None:
            abort(404)
        if ns["kind"] == "user":
            return _profile(_user_or_404(name), "overview")
        projects, page = visible_projects("p.namespace_id = ?", (ns["id"],), "name_asc")
        return render_template("gitlab/group.html", g=ns, projects=projects, page=page)

    @app.get("/users/<name>")
    @app.get("/users/<name>/<any(projects,contributed,starred,followers,following):tab>")
    def user_tab(name: str, tab: str = "overview") -> Any:
        return _profile(_user_or_404(name), tab)

    @app.post("/users/<name>/<any(follow,unfollow):action>")
    def follow(name: str, action: str) -> Any:
        me = require_user()
        u = _user_or_404(name)
        if u["id"] == me["id"]:
            abort(400, "You cannot follow yourself.")
        db = get_db()
        if action == "follow":
            db.execute("INSERT OR IGNORE INTO follows VALUES (?,?)", (me["id"], u["id"]))
        else:
            db.execute("DELETE FROM follows WHERE follower_id = ? AND followee_id = ?", (me["id"], u["id"]))
        db.commit()
        return redirect(f"/{u['username']}")

    @app.get("/dashboard/todos")
    def todos() -> Any:
        me = require_user()
        state = "done" if request.args.get("state") == "done" else "pending"
        rows = (
            get_db()
            .execute(
                "SELECT t.*, a.name AS author_name, n.path || '/' || p.path AS full_path, "
                "coalesce(i.title, m.title) AS title, coalesce(i.iid, m.iid) AS iid FROM todos t "
                "JOIN users a ON a.id = t.author_id JOIN projects p ON p.id = t.project_id "
                "JOIN namespaces n ON n.id = p.namespace_id "
                "LEFT JOIN issues i ON t.target_type = 'issue' AND i.id = t.target_id "
                "LEFT JOIN merge_requests m ON t.target_type = 'merge_request' AND m.id = t.target_id "
                "WHERE t.user_id = ? AND t.state = ? ORDER BY t.created_at DESC",
                (me["id"], state),
            )
            .fetchall()
        )
        return render_template("gitlab/todos.html", todos=rows, state=state)

    @app.post("/dashboard/todos/<int:todo_id>/done")
    def todo_done(todo_id: int) -> Any:
        me = require_user()
        db = get_db()
        if (
            db.execute(
                "UPDATE todos SET state = 'done' WHERE id = ? AND user_id = ?", (todo_id, me["id"])
            ).rowcount
            == 0
        ):
            abort(404)
        db.commit()
        return redirect("/dashboard/todos")


def _register_settings(app: Flask) -> None:
    @app.route("/-/profile", methods=["GET", "POST"])
    def profile_settings() -> Any:
        me = require_user()
        if request.method == "GET":
            return render_template("gitlab/profile.html", me=me, emojis=STATUS_EMOJI)
        f = {
            k: request.form.get(f"user[{k}]", "").strip() for k in ("name", "website_url", "location", "bio")
        }
        emoji = request.form.get("user[status][emoji]", "")
        message = request.form.get("user[status][message]", "").strip()
        if not f["name"] or emoji not in STATUS_EMOJI or len(message) > 100:
            flash("Name can't be blank; status message at most 100 characters.", "alert")
            return render_template("gitlab/profile.html", me=me, emojis=STATUS_EMOJI), 400
        website = f["website_url"]
        if website and "://" not in website:
            website = "https://" + website
        db = get_db()
        db.execute(
            "UPDATE users SET name = ?, website = ?, location = ?, bio = ?, status_emoji = ?, "
            "status_message = ? WHERE id = ?",
            (
                f["name"],
                website,
                f["location"],
                f["bio"],
                emoji if message or emoji else "",
                message,
                me["id"],
            ),
        )
        db.commit()
        flash("Profile was successfully updated", "notice")
        return redirect("/-/profile")

    @app.get("/-/profile/personal_access_tokens")
    def personal_access_tokens() -> Any:
        me = require_user()
        rows = (
            get_db()
            .execute(
                "SELECT * FROM personal_access_tokens WHERE user_id = ? AND revoked = 0 "
                "ORDER BY created_at DESC",
                (me["id"],),
            )
            .fetchall()
        )
        new_id = session.pop("new_pat_id", None)
        created = next((r for r in rows if r["id"] == new_id), None)
        return render_template("gitlab/tokens.html", me=me, tokens=rows, created=created, scopes=SCOPES)

    @app.post("/-/profile/personal_access_tokens")
    def create_token() -> Any:
        me = require_user()
        name = request.form.get("personal_access_token[name]", "").strip()
        scopes = [s for s in request.form.getlist("personal_access_token[scopes][]") if s in SCOPES]
        expires = request.form.get("personal_access_token[expires_at]", "").strip() or None
        if not name or not scopes:
            flash("Name can't be blank and at least one scope must be selected.", "alert")
            return redirect("/-/profile/personal_access_tokens")
        db = get_db()
        tid = db.execute(
            "INSERT INTO personal_access_tokens (user_id, name, scopes, token, created_at, expires_at) "
            "VALUES (?,?,?,?,?,?)",
            (me["id"], name, ",".join(scopes), "glpat-" + _random_token(20), now_ts(), expires),
        ).lastrowid
        db.commit()
        session["new_pat_id"] = tid  # shown once, on the next page view, like GitLab
        flash("Your new personal access token has been created.", "notice")
        return redirect("/-/profile/personal_access_tokens")

    @app.post("/-/profile/personal_access_tokens/<int:token_id>/revoke")
    def revoke_token(token_id: int) -> Any:
        me = require_user()
        db = get_db()
        if (
            db.execute(
                "UPDATE personal_access_tokens SET revoked = 1 WHERE id = ? AND user_id = ?",
                (token_id, me["id"]),
            ).rowcount
            == 0
        ):
            abort(404)
        db.commit()
        flash("Revoked personal access token.", "notice")
        return redirect("/-/profile/personal_access_tokens")

    @app.get("/-/profile/account")
    def account() -> Any:
        return render_template("gitlab/account.html", me=require_user())

    @app.post("/-/profile/reset_feed_token")
    def reset_feed_token() -> Any:
        me = require_user()
        db = get_db()
        db.execute("UPDATE users SET feed_token = ? WHERE id = ?", (_random_token(20), me["id"]))
        db.commit()
        flash("Feed token was successfully reset", "notice")
        return redirect(
            request.form.get("return_to")
            if request.form.get("return_to", "").startswith("/-/profile")
            else "/-/profile/account"
        )


def _random_token(n: int) -> str:
    alphabet = string.ascii_letters + string.digits + "_-"
    return "".join(secrets.choice(alphabet) for _ in range(n))
