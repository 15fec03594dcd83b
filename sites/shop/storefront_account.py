"""Storefront account pages: login, account dashboard, order history and view, addresses, wishlist, JSON helper."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Flask, abort, flash, jsonify, redirect, render_template, request, url_for

from sites.auth import check_password
from sites.core import current_user_id, get_db, login_required, login_user, logout_user, page_of, safe_next
from sites.shop import queries as Q

LOGIN = "customer_login"
ADDRESS_FIELDS = ("firstname", "lastname", "street", "city", "region", "postcode", "country", "telephone")


def register_account(app: Flask) -> None:
    _register_login(app)
    _register_orders(app)
    _register_addresses(app)
    _register_wishlist(app)


def _register_login(app: Flask) -> None:
    @app.get("/customer/account/login/")
    def customer_login() -> str:
        return render_template("shop/login.html", title="Customer Login", next=request.args.get("next", ""))

    @app.post("/customer/account/loginPost/")
    def customer_login_post() -> Any:
        email = request.form.get("login[username]", "")
        cust = Q.customer_by_email(get_db(), email)
        if cust is None or not check_password(cust["password_hash"], request.form.get("login[password]", "")):
            flash(
                "The account sign-in was incorrect or your account is disabled temporarily. "
                "Please wait and try again later.",
                "error",
            )
            return redirect(url_for("customer_login", next=request.form.get("next", "")))
        login_user(cust["id"])
        return redirect(safe_next(url_for("account")))

    @app.get("/customer/account/logout/")
    def customer_logout() -> Any:
        logout_user()
        return redirect("/")

    @app.get("/customer/account/")
    @login_required(LOGIN)
    def account() -> str:
        conn, cid = get_db(), current_user_id()
        recent, _ = Q.customer_orders(conn, cid, limit=5)
        return render_template(
            "shop/account.html", title="My Account", recent=recent, addresses=Q.addresses(conn, cid)
        )


def _register_orders(app: Flask) -> None:
    @app.get("/sales/order/history/")
    @login_required(LOGIN)
    def order_history() -> str:
        conn, cid = get_db(), current_user_id()
        _, total = Q.customer_orders(conn, cid, limit=1)
        page = page_of(total, 10)
        orders, _ = Q.customer_orders(conn, cid, limit=10, offset=page.offset)
        return render_template("shop/history.html", title="My Orders", orders=orders, page=page)

    @app.get("/sales/order/view/order_id/<int:oid>/")
    @login_required(LOGIN)
    def order_view(oid: int) -> str:
        conn = get_db()
        o = Q.order(conn, oid)
        if o is None or o["customer_id"] != current_user_id():
            abort(404)
        return render_template(
            "shop/order.html", title=f"Order # {o['increment_id']}", o=o, items=Q.order_items(conn, oid)
        )

    @app.get("/__api__/orders/latest")
    def api_latest_order() -> Any:
        cid = current_user_id()
        o = Q.latest_order(get_db(), cid) if cid else None
        if o is None:
            return jsonify(error="no order (not logged in, or no orders)"), 404
        url = request.host_url.rstrip("/") + url_for("order_view", oid=o["id"])
        return jsonify(order_id=o["id"], url=url)


def _register_addresses(app: Flask) -> None:
    @app.get("/customer/address/")
    @login_required(LOGIN)
    def address_book() -> str:
        return render_template(
            "shop/addresses.html", title="Address Book", addresses=Q.addresses(get_db(), current_user_id())
        )

    @app.get("/customer/address/new/")
    @app.get("/customer/address/edit/id/<int:aid>/")
    @login_required(LOGIN)
    def address_form(aid: int | None = None) -> str:
        addr = _own_address(aid) if aid else None
        return render_template(
            "shop/address_form.html",
            title="Edit Address" if addr else "Add New Address",
            a=addr,
            fields=ADDRESS_FIELDS,
        )

    @app.post("/customer/address/formPost/")
    @app.post("/customer/address/formPost/id/<int:aid>/")
    @login_required(LOGIN)
    def address_save(aid: int | None = None) -> Any:
        values = {k: request.form.get(k, "").strip() for k in ADDRESS_FIELDS}
        if not all(values.values()):
            flash("Please fill in every required field.", "error")
            return redirect(request.referrer or url_for("address_book"))
        conn, cid = get_db(), current_user_id()
        is_default = int(request.form.get("default_address") == "1")
        if is_default:
            conn.execute("UPDATE address SET is_default=0 WHERE customer_id=?", (cid,))
        if aid:
            _own_address(aid)
            sets = ", ".join(f"{k}=?" for k in values)
            conn.execute(
                f"UPDATE address SET {sets}{', is_default=1' if is_default else ''} WHERE id=?",
                [*values.values(), aid],
            )
        else:
            conn.execute(
                f"INSERT INTO address (customer_id, {', '.join(values)}, is_default) VALUES "
                f"(?, {', '.join('?' for _ in values)}, ?)",
                [cid, *values.values(), is_default],
            )
        conn.commit()
        flash("You saved the address.", "success")
        return redirect(url_for("address_book"))

    @app.post("/customer/address/delete/id/<int:aid>/")
    @login_required(LOGIN)
    def address_delete(aid: int) -> Any:
        _own_address(aid)
        conn = get_db()
        conn.execute("DELETE FROM address WHERE id=?", (aid,))
        conn.commit()
        flash("You deleted the address.", "success")
        return redirect(url_for("address_book"))


def _own_address(aid: int) -> Any:
    addr = (
        get_db()
        .execute("SELECT * FROM address WHERE id=? AND customer_id=?", (aid, current_user_id()))
        .fetchone()
    )
    if addr is None:
        abort(404)
    return addr


def _register_wishlist(app: Flask) -> None:
    @app.get("/wishlist/")
    @login_required(LOGIN)
    def wishlist() -> str:
        return render_template(
            "shop/wishlist.html", title="My Wish List", items=Q.wishlist(get_db(), current_user_id())
        )

    @app.post("/wishlist/index/add/")
    @login_required(LOGIN)
    def wishlist_add() -> Any:
        conn = get_db()
        prod = Q.product(conn, request.form.get("product", 0, type=int)) or abort(404)
        conn.execute(
            "INSERT OR IGNORE INTO wishlist_item (customer_id, product_id, added_at) VALUES (?,?,?)",
            (current_user_id(), prod["id"], datetime.now().strftime("%Y-%m-%d %H:%M:%S")),
        )
        conn.commit()
        flash(f"{prod['name']} has been added to your Wish List.", "success")
        return redirect(url_for("wishlist"))

    @app.post("/wishlist/index/remove/")
    @login_required(LOGIN)
    def wishlist_remove() -> Any:
        conn = get_db()
        conn.execute(
            "DELETE FROM wishlist_item WHERE id=? AND customer_id=?",
            (request.form.get("item", ""), current_user_id()),
        )
        conn.commit()
        return redirect(url_for("wishlist"))
