"""Order writes shared by the storefront (placing) and the admin (status changes)."""

from __future__ import annotations

import sqlite3

from sites.shop import queries as Q
from sites.shop.seed import SHIPPING_PER_ITEM

# admin action -> (statuses it applies to, new status). Like Magento: invoice -> processing, ship -> complete.
TRANSITIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "invoice": (("pending",), "processing"),
    "ship": (("pending", "processing"), "complete"),
    "hold": (("pending", "processing"), "holded"),
    "unhold": (("holded",), "processing"),
    "cancel": (("pending", "processing", "holded"), "canceled"),
}


def place_order(conn: sqlite3.Connection, customer_id: int, address_id: str, now: str) -> int | None:
    """Turns the customer's cart into a pending order; returns its id, or None (empty cart / bad address)."""
    items = Q.cart(conn, customer_id)
    addrs = {str(a["id"]): a for a in Q.addresses(conn, customer_id)}
    addr = addrs.get(address_id) or (next(iter(addrs.values())) if addrs and not address_id else None)
    if not items or addr is None:
        return None
    subtotal = round(sum(i["row_total"] for i in items), 2)
    shipping = SHIPPING_PER_ITEM * sum(i["qty"] for i in items)
    next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM sales_order").fetchone()[0]
    conn.execute(
        "INSERT INTO sales_order VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            next_id,
            f"{next_id:09d}",
            customer_id,
            "pending",
            now,
            subtotal,
            shipping,
            round(subtotal + shipping, 2),
            f"{addr['firstname']} {addr['lastname']}",
            addr["street"],
            addr["city"],
            addr["region"],
            addr["postcode"],
            addr["country"],
            "Check / Money order",
            "Flat Rate - Fixed",
        ),
    )
    for i in items:
        conn.execute(
            "INSERT INTO order_item (order_id, product_id, sku, name, price, qty) VALUES (?,?,?,?,?,?)",
            (next_id, i["product_id"], i["sku"], i["name"], i["price"], i["qty"]),
        )
        conn.execute("UPDATE product SET qty = MAX(0, qty - ?) WHERE id=?", (i["qty"], i["product_id"]))
    conn.execute(
        "INSERT INTO order_status_history (order_id, status, comment, created_at) VALUES (?,?,?,?)",
        (next_id, "pending", "Order placed.", now),
    )
    conn.execute("DELETE FROM cart_item WHERE customer_id=?", (customer_id,))
    conn.commit()
    return int(next_id)


def change_status(conn: sqlite3.Connection, order_id: int, action: str, now: str, comment: str = "") -> str:
    """Applies an admin action; returns the new status. Raises ValueError when the action does not apply."""
    o = Q.order(conn, order_id)
    if o is None:
        raise ValueError("This order no longer exists.")
    if action not in TRANSITIONS:
        raise ValueError(f"Unknown action {action!r}.")
    allowed, new = TRANSITIONS[action]
    if o["status"] not in allowed:
        raise ValueError(f"You cannot {action} an order that is {o['status']}.")
    conn.execute("UPDATE sales_order SET status=? WHERE id=?", (new, order_id))
    conn.execute(
        "INSERT INTO order_status_history (order_id, status, comment, created_at) VALUES (?,?,?,?)",
        (order_id, new, comment, now),
    )
    conn.commit()
    return new
