"""The shop admin (like WebArena's Magento admin): login, dashboard, orders grid and order actions.

Catalog, customers and reviews are in `admin_catalog.py`; reports and the review JSON helper in `admin_reports.py`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request, session, url_for

from sites.auth import check_password
from sites.core import (
    current_user_id,
    get_db,
    login_required,
    login_user,
    logout_user,
    make_site_app,
    page_of,
    safe_next,
)
from sites.sandbox import SandboxStore
from sites.shop import queries as Q
from sites.shop.admin_catalog import register_catalog
from sites.shop.admin_reports import register_reports
from sites.shop.constants import ADMIN_LOGIN
from sites.shop.orders import TRANSITIONS, change_status

TEMPLATES = Path(__file__).with_name("templates")
ORDER_STATUSES = ("pending", "processing", "complete", "canceled", "holded")
ORDER_SORTS = {
    "created_at": "o.created_at",
    "grand_total": "o.grand_total",
    "increment_id": "o.increment_id",
    "name": "c.lastname",
}


def create_app(store: SandboxStore) -> Flask:
    app = make_site_app("shopping_admin", "shop", store, TEMPLATES, __name__)

    @app.context_processor
    def _globals() -> dict[str, Any]:
        uid = current_user_id()
        admin = get_db().execute("SELECT * FROM admin_user WHERE id=?", (uid,)).fetchone() if uid else None
        return {"admin": admin, "status_label": status_label}

    _register_home(app)
    _register_orders(app)
    register_catalog(app)
    register_reports(app)
    return app


def status_label(status: str) -> str:
    return "On Hold" if status == "holded" else status.title()


def now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _register_home(app: Flask) -> None:
    @app.route("/admin/", methods=["GET", "POST"])
    def admin_home() -> Any:
        conn = get_db()
        if request.method == "POST":
            user = conn.execute(
                "SELECT * FROM admin_user WHERE username=?",
                (request.form.get("login[username]", "").strip(),),
            ).fetchone()
            if user is None or not check_password(
                user["password_hash"], request.form.get("login[password]", "")
            ):
                flash(
                    "The account sign-in was incorrect or your account is disabled temporarily. "
                    "Please wait and try again later.",
                    "error",
                )
                return redirect(url_for("admin_home"))
            login_user(user["id"])
            session["admin"] = True
            return redirect(safe_next(url_for("admin_home")))
        if current_user_id() is None:
            return render_template(
                "admin/login.html", title="Magento Admin", next=request.args.get("next", "")
            )
        stats = conn.execute(
            "SELECT ROUND(SUM(grand_total), 2) AS lifetime, ROUND(AVG(grand_total), 2) AS average, "
            "COUNT(*) AS n FROM sales_order WHERE status != 'canceled'"
        ).fetchone()
        last = conn.execute(
            "SELECT o.*, c.firstname, c.lastname, (SELECT SUM(qty) FROM order_item i WHERE "
            "i.order_id=o.id) AS items FROM sales_order o JOIN customer c ON c.id=o.customer_id "
            "ORDER BY o.created_at DESC, o.id DESC LIMIT 5"
        ).fetchall()
        best = Q.bestsellers(conn, "year", top=5)
        best = [b for b in best if b["period"] == max((x["period"] for x in best), default="")]
        return render_template("admin/dashboard.html", title="Dashboard", stats=stats, last=last, best=best)

    @app.get("/admin/admin/auth/logout/")
    def admin_logout() -> Any:
        logout_user()
        return redirect(url_for("admin_home"))


def _orders_query() -> tuple[str, list[Any]]:
    a = request.args
    where, args = [], []
    if a.get("status") in ORDER_STATUSES:
        where.append("o.status = ?")
        args.append(a["status"])
    for word in a.get("search", "").split():
        where.append("(o.increment_id LIKE ? OR c.firstname LIKE ? OR c.lastname LIKE ? OR c.email LIKE ?)")
        args += [f"%{word}%"] * 4
    if a.get("from"):
        where.append("date(o.created_at) >= date(?)")
        args.append(a["from"])
    if a.get("to"):
        where.append("date(o.created_at) <= date(?)")
        args.append(a["to"])
    return (" WHERE " + " AND ".join(where)) if where else "", args


def _register_orders(app: Flask) -> None:
    @app.get("/admin/sales/order/")
    @login_required(ADMIN_LOGIN)
    def admin_orders() -> str:
        conn = get_db()
        clause, args = _orders_query()
        base = "FROM sales_order o JOIN customer c ON c.id=o.customer_id" + clause
        total = conn.execute(f"SELECT COUNT(*) {base}", args).fetchone()[0]
        limit = int(request.args["limit"]) if request.args.get("limit") in ("20", "50", "100", "200") else 20
        page = page_of(total, limit)
        sort = ORDER_SORTS.get(request.args.get("sort", ""), "o.created_at")
        dirn = "ASC" if request.args.get("dir") == "asc" else "DESC"
        rows = conn.execute(
            f"SELECT o.*, c.firstname, c.lastname, c.email {base} ORDER BY {sort} {dirn}, o.id "
            f"{dirn} LIMIT ? OFFSET ?",
            [*args, limit, page.offset],
        ).fetchall()
        return render_template(
            "admin/orders.html", title="Orders", orders=rows, page=page, statuses=ORDER_STATUSES, limit=limit
        )

    @app.get("/admin/sales/order/view/order_id/<int:oid>/")
    @login_required(ADMIN_LOGIN)
    def admin_order_view(oid: int) -> str:
        conn = get_db()
        o = Q.order(conn, oid) or abort(404)
        actions = [a for a, (allowed, _) in TRANSITIONS.items() if o["status"] in allowed]
        return render_template(
            "admin/order_view.html",
            title=f"# {o['increment_id']}",
            o=o,
            items=Q.order_items(conn, oid),
            history=Q.order_history(conn, oid),
            actions=actions,
        )

    @app.post("/admin/sales/order/<action>/order_id/<int:oid>/")
    @login_required(ADMIN_LOGIN)
    def admin_order_action(action: str, oid: int) -> Any:
        try:
            change_status(get_db(), oid, action, now(), request.form.get("comment", "").strip())
        except ValueError as exc:
            flash(str(exc), "error")
        else:
            flash(
                {
                    "cancel": "You canceled the order.",
                    "hold": "You put the order on hold.",
                    "unhold": "You released the order from holding status.",
                    "invoice": "The invoice has been created.",
                    "ship": "The shipment has been created.",
                }[action],
                "success",
            )
        return redirect(url_for("admin_order_view", oid=oid))

    @app.post("/admin/sales/order/addComment/order_id/<int:oid>/")
    @login_required(ADMIN_LOGIN)
    def admin_order_comment(oid: int) -> Any:
        conn = get_db()
        o = Q.order(conn, oid) or abort(404)
        comment = request.form.get("history[comment]", "").strip()
        if not comment:
            flash("Please enter a comment.", "error")
        else:
            conn.execute(
                "INSERT INTO order_status_history (order_id, status, comment, created_at) VALUES (?,?,?,?)",
                (oid, o["status"], comment, now()),
            )
            conn.commit()
        return redirect(url_for("admin_order_view", oid=oid))
