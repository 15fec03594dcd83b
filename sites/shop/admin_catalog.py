"""Admin grids and edit forms: products, customers, reviews."""

from __future__ import annotations

from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request, url_for

from sites.core import get_db, login_required, page_of
from sites.shop import queries as Q
from sites.shop.constants import ADMIN_LOGIN

CUSTOMER_FIELDS = ("firstname", "lastname", "email", "telephone")


def _grid(
    base_sql: str, count_sql: str, where: list[str], args: list[Any], order: str, per_page: int = 20
) -> tuple:
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    conn = get_db()
    total = conn.execute(count_sql + clause, args).fetchone()[0]
    page = page_of(total, per_page)
    rows = conn.execute(
        f"{base_sql}{clause} ORDER BY {order} LIMIT ? OFFSET ?", [*args, per_page, page.offset]
    ).fetchall()
    return rows, page


def register_catalog(app: Flask) -> None:
    _register_products(app)
    _register_customers(app)
    _register_reviews(app)


def _register_products(app: Flask) -> None:
    @app.get("/admin/catalog/product/")
    @login_required(ADMIN_LOGIN)
    def admin_products() -> str:
        a, where, args = request.args, [], []
        for word in a.get("search", "").split():
            where.append("(p.name LIKE ? OR p.sku LIKE ?)")
            args += [f"%{word}%", f"%{word}%"]
        if a.get("status") in ("1", "2"):
            where.append("p.status = ?")
            args.append(int(a["status"]))
        rows, page = _grid(
            "SELECT p.*, c.name AS category_name FROM product p JOIN category c ON c.id=p.category_id",
            "SELECT COUNT(*) FROM product p",
            where,
            args,
            "p.id",
        )
        return render_template("admin/products.html", title="Products", products=rows, page=page)

    @app.get("/admin/catalog/product/edit/id/<int:pid>/")
    @login_required(ADMIN_LOGIN)
    def admin_product_edit(pid: int) -> str:
        p = Q.product(get_db(), pid) or abort(404)
        return render_template("admin/product_edit.html", title=p["name"], p=p)

    @app.post("/admin/catalog/product/save/id/<int:pid>/")
    @login_required(ADMIN_LOGIN)
    def admin_product_save(pid: int) -> Any:
        conn = get_db()
        Q.product(conn, pid) or abort(404)
        f = request.form
        name, sku = f.get("product[name]", "").strip(), f.get("product[sku]", "").strip()
        try:
            price = round(float(f.get("product[price]", "")), 2)
            qty = int(float(f.get("product[quantity_and_stock_status][qty]", "")))
            status = int(f.get("product[status]", ""))
        except ValueError:
            price = qty = status = -1
        if not name or not sku or price < 0 or qty < 0 or status not in (1, 2):
            flash(
                "Please correct the data: name, SKU, a price >= 0, a quantity >= 0 and a status are required.",
                "error",
            )
            return redirect(url_for("admin_product_edit", pid=pid))
        if conn.execute("SELECT 1 FROM product WHERE sku=? AND id!=?", (sku, pid)).fetchone():
            flash("The value specified in the SKU field is already used by another product.", "error")
            return redirect(url_for("admin_product_edit", pid=pid))
        conn.execute(
            "UPDATE product SET name=?, sku=?, price=?, qty=?, status=?, description=? WHERE id=?",
            (name, sku, price, qty, status, f.get("product[description]", "").strip(), pid),
        )
        conn.commit()
        flash("You saved the product.", "success")
        return redirect(url_for("admin_product_edit", pid=pid))


def _register_customers(app: Flask) -> None:
    @app.get("/admin/customer/index/")
    @login_required(ADMIN_LOGIN)
    def admin_customers() -> str:
        where, args = [], []
        for word in request.args.get("search", "").split():
            where.append("(c.firstname LIKE ? OR c.lastname LIKE ? OR c.email LIKE ? OR c.telephone LIKE ?)")
            args += [f"%{word}%"] * 4
        rows, page = _grid(
            "SELECT c.*, a.postcode, a.country, a.region, a.city FROM customer c LEFT JOIN address a "
            "ON a.customer_id=c.id AND a.is_default=1",
            "SELECT COUNT(*) FROM customer c",
            where,
            args,
            "c.id",
        )
        return render_template("admin/customers.html", title="Customers", customers=rows, page=page)

    @app.get("/admin/customer/index/edit/id/<int:cid>/")
    @login_required(ADMIN_LOGIN)
    def admin_customer_edit(cid: int) -> str:
        conn = get_db()
        c = Q.customer(conn, cid) or abort(404)
        orders, _ = Q.customer_orders(conn, cid, limit=100)
        return render_template(
            "admin/customer_edit.html",
            title=f"{c['firstname']} {c['lastname']}",
            c=c,
            orders=orders,
            addresses=Q.addresses(conn, cid),
            fields=CUSTOMER_FIELDS,
        )

    @app.post("/admin/customer/index/save/id/<int:cid>/")
    @login_required(ADMIN_LOGIN)
    def admin_customer_save(cid: int) -> Any:
        conn = get_db()
        Q.customer(conn, cid) or abort(404)
        values = {k: request.form.get(f"customer[{k}]", "").strip() for k in CUSTOMER_FIELDS}
        if not all(values.values()) or "@" not in values["email"]:
            flash("Please fill in first name, last name, a valid email and a phone number.", "error")
            return redirect(url_for("admin_customer_edit", cid=cid))
        if conn.execute(
            "SELECT 1 FROM customer WHERE email=? COLLATE NOCASE AND id!=?", (values["email"], cid)
        ).fetchone():
            flash("A customer with the same email address already exists.", "error")
            return redirect(url_for("admin_customer_edit", cid=cid))
        conn.execute(
            "UPDATE customer SET firstname=?, lastname=?, email=?, telephone=? WHERE id=?",
            (*values.values(), cid),
        )
        conn.commit()
        flash("You saved the customer.", "success")
        return redirect(url_for("admin_customer_edit", cid=cid))


def _register_reviews(app: Flask) -> None:
    @app.get("/admin/review/product/")
    @login_required(ADMIN_LOGIN)
    def admin_reviews() -> str:
        a, where, args = request.args, [], []
        if a.get("sku"):
            where.append("p.sku = ?")
            args.append(a["sku"].strip())
        if a.get("status") in ("approved", "pending"):
            where.append("r.status = ?")
            args.append(a["status"])
        if a.get("rating", "").isdigit():
            where.append("r.rating = ?")
            args.append(int(a["rating"]))
        for word in a.get("search", "").split():
            where.append("(r.title LIKE ? OR r.detail LIKE ? OR r.nickname LIKE ? OR p.name LIKE ?)")
            args += [f"%{word}%"] * 4
        rows, page = _grid(
            "SELECT r.*, p.name AS product_name, p.sku FROM review r JOIN product p ON p.id=r.product_id",
            "SELECT COUNT(*) FROM review r JOIN product p ON p.id=r.product_id",
            where,
            args,
            "r.created_at DESC, r.id DESC",
        )
        return render_template("admin/reviews.html", title="Reviews", reviews=rows, page=page)

    @app.post("/admin/review/product/<action>/id/<int:rid>/")
    @login_required(ADMIN_LOGIN)
    def admin_review_action(action: str, rid: int) -> Any:
        conn = get_db()
        if action == "delete":
            conn.execute("DELETE FROM review WHERE id=?", (rid,))
            msg = "The review has been deleted."
        elif action == "approve":
            conn.execute("UPDATE review SET status='approved' WHERE id=?", (rid,))
            msg = "You saved the review."
        else:
            abort(404)
        conn.commit()
        flash(msg, "success")
        return redirect(request.referrer or url_for("admin_reviews"))
