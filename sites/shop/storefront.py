"""The shopping storefront (like WebArena's OneStopShop): catalog, search, product pages, cart, checkout.

Account pages (login, orders, addresses, wishlist) are in `storefront_account.py`. URLs follow Magento's.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from flask import Flask, abort, flash, redirect, render_template, request, url_for

from sites.core import current_user_id, get_db, login_required, make_site_app, page_of
from sites.sandbox import SandboxStore
from sites.shop import queries as Q
from sites.shop.orders import place_order as place
from sites.shop.seed import SHIPPING_PER_ITEM
from sites.shop.storefront_account import register_account

TEMPLATES = Path(__file__).with_name("templates")
PAGE_SIZES = (12, 24, 36)


def create_app(store: SandboxStore) -> Flask:
    app = make_site_app("shopping", "shop", store, TEMPLATES, __name__)

    @app.context_processor
    def _globals() -> dict[str, Any]:
        cid = current_user_id()
        conn = get_db()
        me = Q.customer(conn, cid) if cid else None
        count = (
            conn.execute("SELECT COALESCE(SUM(qty),0) FROM cart_item WHERE customer_id=?", (cid,)).fetchone()[
                0
            ]
            if me
            else 0
        )
        return {"me": me, "cart_count": count, "nav": Q.top_categories(conn)}

    _register_catalog(app)
    _register_cart(app)
    register_account(app)
    return app


def _listing_args() -> dict[str, Any]:
    a = request.args
    price_from = price_to = None
    if "-" in a.get("price", ""):
        lo, hi = a["price"].split("-", 1)
        price_from, price_to = _num(lo), _num(hi)
    limit = int(a["product_list_limit"]) if a.get("product_list_limit", "").isdigit() else PAGE_SIZES[0]
    return {
        "price_from": price_from,
        "price_to": price_to,
        "order": a.get("order", "relevance"),
        "direction": a.get("dir", "asc"),
        "limit": limit if limit in PAGE_SIZES else PAGE_SIZES[0],
    }


def _num(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _render_listing(title: str, q: str, category_id: int | None, **extra: Any) -> str:
    conn = get_db()
    args = _listing_args()
    _, total = Q.search_products(conn, q, category_id, args["price_from"], args["price_to"], limit=1)
    page = page_of(total, args["limit"])
    rows, _ = Q.search_products(
        conn,
        q,
        category_id,
        args["price_from"],
        args["price_to"],
        args["order"],
        args["direction"],
        args["limit"],
        page.offset,
    )
    return render_template(
        "shop/listing.html",
        title=title,
        products=rows,
        page=page,
        q=q,
        args=args,
        category_id=category_id,
        **extra,
    )


def _register_catalog(app: Flask) -> None:
    @app.get("/")
    def home() -> str:
        conn = get_db()
        featured, _ = Q.search_products(conn, order="relevance", limit=8, offset=40)
        return render_template(
            "shop/home.html",
            title="One Stop Market",
            featured=featured,
            tops=[(c, Q.subcategories(conn, c["id"])) for c in Q.top_categories(conn)],
        )

    @app.get("/catalogsearch/result/")
    def search() -> str:
        q = request.args.get("q", "").strip()
        cat = request.args.get("cat", "")
        return _render_listing(f"Search results for: '{q}'", q, int(cat) if cat.isdigit() else None)

    @app.get("/<path:slug>.html")
    def slug_page(slug: str) -> str:
        conn = get_db()
        cat = Q.category_by_slug(conn, slug)
        if cat is not None:
            subs = Q.subcategories(conn, cat["id"])
            parent = Q.category(conn, cat["parent_id"]) if cat["parent_id"] else None
            return _render_listing(cat["name"], "", cat["id"], category=cat, subs=subs, parent=parent)
        prod = Q.product_by_slug(conn, slug)
        if prod is None or prod["status"] != 1:
            abort(404)
        return render_template(
            "shop/product.html", title=prod["name"], p=prod, reviews=Q.reviews(conn, prod["id"])
        )

    @app.post("/review/product/post/id/<int:pid>/")
    def post_review(pid: int) -> Any:
        conn = get_db()
        prod = Q.product(conn, pid) or abort(404)
        f = request.form
        rating = f.get("ratings[1]", "")
        nickname, title, detail = (f.get(k, "").strip() for k in ("nickname", "title", "detail"))
        if not (rating.isdigit() and 1 <= int(rating) <= 5 and nickname and title and detail):
            flash("Please select a rating and fill in nickname, summary and review.", "error")
            return redirect(f"/{prod['slug']}.html#reviews")
        conn.execute(
            "INSERT INTO review (product_id, customer_id, nickname, title, detail, rating, status, "
            "created_at) VALUES (?,?,?,?,?,?,?,?)",
            (pid, current_user_id(), nickname, title, detail, int(rating), "pending", _now()),
        )
        conn.commit()
        flash("You submitted your review for moderation.", "success")
        return redirect(f"/{prod['slug']}.html#reviews")


def _now() -> str:
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def _register_cart(app: Flask) -> None:
    login = "customer_login"

    @app.post("/checkout/cart/add/")
    @login_required(login)
    def cart_add() -> Any:
        conn = get_db()
        prod = Q.product(conn, request.form.get("product", 0, type=int))
        if prod is None or prod["status"] != 1:
            abort(404)  # disabled products are not sold
        qty = max(1, int(request.form.get("qty", "1") or 1)) if request.form.get("qty", "1").isdigit() else 1
        conn.execute(
            "INSERT INTO cart_item (customer_id, product_id, qty) VALUES (?,?,?) ON CONFLICT"
            "(customer_id, product_id) DO UPDATE SET qty = qty + excluded.qty",
            (current_user_id(), prod["id"], qty),
        )
        conn.commit()
        flash(f"You added {prod['name']} to your shopping cart.", "success")
        return redirect(f"/{prod['slug']}.html")

    @app.get("/checkout/cart/")
    @login_required(login)
    def cart_view() -> str:
        items = Q.cart(get_db(), current_user_id())
        return render_template("shop/cart.html", title="Shopping Cart", items=items, **_totals(items))

    @app.post("/checkout/cart/updatePost/")
    @login_required(login)
    def cart_update() -> Any:
        conn, cid = get_db(), current_user_id()
        for item in Q.cart(conn, cid):
            raw = request.form.get(f"cart[{item['id']}][qty]", "").strip()
            if not raw.isdigit():
                continue
            if int(raw) == 0:
                conn.execute("DELETE FROM cart_item WHERE id=? AND customer_id=?", (item["id"], cid))
            else:
                conn.execute(
                    "UPDATE cart_item SET qty=? WHERE id=? AND customer_id=?", (int(raw), item["id"], cid)
                )
        conn.commit()
        return redirect(url_for("cart_view"))

    @app.post("/checkout/cart/delete/")
    @login_required(login)
    def cart_delete() -> Any:
        conn = get_db()
        conn.execute(
            "DELETE FROM cart_item WHERE id=? AND customer_id=?",
            (request.form.get("id", ""), current_user_id()),
        )
        conn.commit()
        return redirect(url_for("cart_view"))

    @app.get("/checkout/")
    @login_required(login)
    def checkout() -> Any:
        conn, cid = get_db(), current_user_id()
        items = Q.cart(conn, cid)
        if not items:
            flash("Your shopping cart is empty.", "error")
            return redirect(url_for("cart_view"))
        return render_template(
            "shop/checkout.html",
            title="Checkout",
            items=items,
            addresses=Q.addresses(conn, cid),
            **_totals(items),
        )

    @app.post("/checkout/placeOrder/")
    @login_required(login)
    def place_order() -> Any:
        conn, cid = get_db(), current_user_id()
        oid = place(conn, cid, request.form.get("address_id", ""), _now())
        if oid is None:
            flash("Your shopping cart is empty or the address is invalid.", "error")
            return redirect(url_for("cart_view"))
        return redirect(url_for("checkout_success", order_id=oid))

    @app.get("/checkout/onepage/success/")
    @login_required(login)
    def checkout_success() -> str:
        o = Q.order(get_db(), request.args.get("order_id", 0, type=int))
        if o is None or o["customer_id"] != current_user_id():
            abort(404)
        return render_template("shop/success.html", title="Success Page", order=o)


def _totals(items: list) -> dict[str, float]:
    subtotal = round(sum(i["row_total"] for i in items), 2)
    shipping = SHIPPING_PER_ITEM * sum(i["qty"] for i in items)
    return {"subtotal": subtotal, "shipping": shipping, "grand_total": round(subtotal + shipping, 2)}
