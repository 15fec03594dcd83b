"""Read helpers over the shop database, shared by the storefront, the admin and reference-answer code.

Every function takes a sqlite3 connection with `row_factory = sqlite3.Row` (the sites' connections, or
`open_db(path)` on a seeded file). Schema: `sites/shop/schema.sql`. Conventions the pages use, so that task
authors compute the same numbers the pages show:
  - a product's rating = mean of its *approved* reviews' stars, shown as a percentage (stars * 20);
  - reports count every order except `canceled` ones; periods are by the order's `created_at` (site time);
  - best sellers rank products by quantity ordered within each period, ties by name.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SORTS = {"relevance": "p.id", "name": "p.name COLLATE NOCASE", "price": "p.price"}
PERIOD_FORMATS = {"day": "%Y-%m-%d", "month": "%Y-%m", "year": "%Y"}


def open_db(path: Path | str) -> sqlite3.Connection:
    """A read-only connection on a shop database file (for reference answers)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    return conn


# -- catalog ------------------------------------------------------------------------------------------------------
def top_categories(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return conn.execute("SELECT * FROM category WHERE parent_id IS NULL ORDER BY position").fetchall()


def subcategories(conn: sqlite3.Connection, parent_id: int) -> list[sqlite3.Row]:
    return conn.execute("SELECT * FROM category WHERE parent_id=? ORDER BY position", (parent_id,)).fetchall()


def category_by_slug(conn: sqlite3.Connection, slug: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM category WHERE slug=?", (slug,)).fetchone()


def category(conn: sqlite3.Connection, cat_id: int) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM category WHERE id=?", (cat_id,)).fetchone()


def product_by_slug(conn: sqlite3.Connection, slug: str) -> sqlite3.Row | None:
    return conn.execute(f"{_PRODUCT_SELECT} WHERE p.slug=?", (slug,)).fetchone()


def product(conn: sqlite3.Connection, pid: int) -> sqlite3.Row | None:
    return conn.execute(f"{_PRODUCT_SELECT} WHERE p.id=?", (pid,)).fetchone()


def product_by_sku(conn: sqlite3.Connection, sku: str) -> sqlite3.Row | None:
    return conn.execute(f"{_PRODUCT_SELECT} WHERE p.sku=?", (sku,)).fetchone()


# rating_pct / review_count come from approved reviews only (what the storefront shows).
_PRODUCT_SELECT = """
SELECT p.*, c.name AS category_name, c.slug AS category_slug,
       (SELECT ROUND(AVG(r.rating) * 20) FROM review r WHERE r.product_id=p.id AND r.status='approved') AS rating_pct,
       (SELECT COUNT(*) FROM review r WHERE r.product_id=p.id AND r.status='approved') AS review_count
FROM product p JOIN category c ON c.id = p.category_id"""


def search_products(
    conn: sqlite3.Connection,
    q: str = "",
    category_id: int | None = None,
    price_from: float | None = None,
    price_to: float | None = None,
    order: str = "relevance",
    direction: str = "asc",
    limit: int = 12,
    offset: int = 0,
    include_disabled: bool = False,
) -> tuple[list[sqlite3.Row], int]:
    """Storefront search/listing: (rows of the page, total matches). Words of `q` must all match name or
    description; a top category includes its subcategories; the price range is inclusive."""
    where, args = ([] if include_disabled else ["p.status = 1"]), []
    for word in q.split():
        where.append("(p.name LIKE ? OR p.description LIKE ? OR p.sku = ?)")
        args += [f"%{word}%", f"%{word}%", word]
    if category_id is not None:
        where.append("(p.category_id = ? OR c.parent_id = ?)")
        args += [category_id, category_id]
    if price_from is not None:
        where.append("p.price >= ?")
        args.append(price_from)
    if price_to is not None:
        where.append("p.price <= ?")
        args.append(price_to)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    total = conn.execute(
        f"SELECT COUNT(*) FROM product p JOIN category c ON c.id=p.category_id{clause}", args
    ).fetchone()[0]
    sort = SORTS.get(order, SORTS["relevance"])
    dirn = "DESC" if direction.lower() == "desc" else "ASC"
    rows = conn.execute(
        f"{_PRODUCT_SELECT}{clause} ORDER BY {sort} {dirn}, p.id LIMIT ? OFFSET ?", [*args, limit, offset]
    ).fetchall()
    return rows, total


def reviews(conn: sqlite3.Connection, product_id: int, approved_only: bool = True) -> list[sqlite3.Row]:
    cond = " AND status='approved'" if approved_only else ""
    return conn.execute(
        f"SELECT * FROM review WHERE product_id=?{cond} ORDER BY created_at DESC, id DESC", (product_id,)
    ).fetchall()


def latest_review(conn: sqlite3.Connection, sku: str) -> sqlite3.Row | None:
    """The most recently written review of a product (any status), or None."""
    return conn.execute(
        "SELECT r.* FROM review r JOIN product p ON p.id=r.product_id WHERE p.sku=? "
        "ORDER BY r.created_at DESC, r.id DESC LIMIT 1",
        (sku,),
    ).fetchone()


# -- customers and orders -----------------------------------------------------------------------------------------
def customer_by_email(conn: sqlite3.Connection, email: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM customer WHERE email=? COLLATE NOCASE", (email.strip(),)).fetchone()


def customer(conn: sqlite3.Connection, cid: int) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM customer WHERE id=?", (cid,)).fetchone()


def addresses(conn: sqlite3.Connection, cid: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM address WHERE customer_id=? ORDER BY is_default DESC, id", (cid,)
    ).fetchall()


def customer_orders(conn: sqlite3.Connection, cid: int, limit: int = 10, offset: int = 0) -> tuple[list, int]:
    total = conn.execute("SELECT COUNT(*) FROM sales_order WHERE customer_id=?", (cid,)).fetchone()[0]
    rows = conn.execute(
        "SELECT * FROM sales_order WHERE customer_id=? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?",
        (cid, limit, offset),
    ).fetchall()
    return rows, total


def order(conn: sqlite3.Connection, oid: int) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT o.*, c.firstname, c.lastname, c.email FROM sales_order o "
        "JOIN customer c ON c.id=o.customer_id WHERE o.id=?",
        (oid,),
    ).fetchone()


def order_items(conn: sqlite3.Connection, oid: int) -> list[sqlite3.Row]:
    return conn.execute("SELECT * FROM order_item WHERE order_id=? ORDER BY id", (oid,)).fetchall()


def order_history(conn: sqlite3.Connection, oid: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM order_status_history WHERE order_id=? ORDER BY created_at DESC, id DESC", (oid,)
    ).fetchall()


def latest_order(conn: sqlite3.Connection, cid: int) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM sales_order WHERE customer_id=? ORDER BY created_at DESC, id DESC LIMIT 1", (cid,)
    ).fetchone()


def cart(conn: sqlite3.Connection, cid: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT ci.id, ci.qty, p.id AS product_id, p.name, p.sku, p.slug, p.price, "
        "ROUND(p.price * ci.qty, 2) AS row_total FROM cart_item ci JOIN product p ON "
        "p.id=ci.product_id WHERE ci.customer_id=? ORDER BY ci.id",
        (cid,),
    ).fetchall()


def wishlist(conn: sqlite3.Connection, cid: int) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT w.id, w.added_at, p.id AS product_id, p.name, p.sku, p.slug, p.price "
        "FROM wishlist_item w JOIN product p ON p.id=w.product_id WHERE w.customer_id=? "
        "ORDER BY w.added_at DESC, w.id DESC",
        (cid,),
    ).fetchall()


# -- reports ------------------------------------------------------------------------------------------------------
def _period_clause(date_from: str | None, date_to: str | None) -> tuple[str, list[Any]]:
    where, args = ["o.status != 'canceled'"], []
    if date_from:
        where.append("date(o.created_at) >= date(?)")
        args.append(date_from)
    if date_to:
        where.append("date(o.created_at) <= date(?)")
        args.append(date_to)
    return " AND ".join(where), args


def bestsellers(
    conn: sqlite3.Connection,
    period: str = "month",
    date_from: str | None = None,
    date_to: str | None = None,
    top: int = 5,
) -> list[dict[str, Any]]:
    """[{period, rank, product_id, name, sku, price, qty}], the `top` products by quantity in each period."""
    fmt = PERIOD_FORMATS[period]
    where, args = _period_clause(date_from, date_to)
    rows = conn.execute(
        f"SELECT strftime('{fmt}', o.created_at) AS period, i.product_id, p.name, p.sku, p.price, "
        f"SUM(i.qty) AS qty FROM order_item i JOIN sales_order o ON o.id=i.order_id "
        f"JOIN product p ON p.id=i.product_id WHERE {where} GROUP BY period, i.product_id "
        f"ORDER BY period, qty DESC, p.name",
        args,
    ).fetchall()
    out: list[dict[str, Any]] = []
    rank_in: dict[str, int] = {}
    for r in rows:
        rank = rank_in.get(r["period"], 0) + 1
        rank_in[r["period"]] = rank
        if rank <= top:
            out.append({**dict(r), "rank": rank})
    return out


def sales_totals(
    conn: sqlite3.Connection, period: str = "month", date_from: str | None = None, date_to: str | None = None
) -> list[dict[str, Any]]:
    """[{period, orders, items, subtotal, shipping, total}] per period over non-canceled orders."""
    fmt = PERIOD_FORMATS[period]
    where, args = _period_clause(date_from, date_to)
    rows = conn.execute(
        f"SELECT strftime('{fmt}', o.created_at) AS period, COUNT(*) AS orders, "
        f"SUM((SELECT SUM(qty) FROM order_item i WHERE i.order_id=o.id)) AS items, "
        f"ROUND(SUM(o.subtotal), 2) AS subtotal, ROUND(SUM(o.shipping_amount), 2) AS shipping, "
        f"ROUND(SUM(o.grand_total), 2) AS total FROM sales_order o WHERE {where} "
        f"GROUP BY period ORDER BY period",
        args,
    ).fetchall()
    return [dict(r) for r in rows]
