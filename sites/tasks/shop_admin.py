"""Task templates of the shop admin (site `shopping_admin`, template ids 200-299) and their expert scripts.

The admin reads the same database as the storefront. Reports count every order except canceled ones (as
`sites.shop.queries` does). Held-out templates (all instances in the test split): 206, 226, 244.
"""

from __future__ import annotations

import calendar
import random
from typing import Any

from sites.shop import queries as Q
from sites.tasks.base import Instance, SeedData, Template, pick, string_eval
from sites.tasks.steps import Answer, Choose, Click, Fill, M

ADMIN = "__SHOPPING_ADMIN__"
HOME = "/admin/"
STATUS_LABELS = {
    "pending": "Pending",
    "processing": "Processing",
    "complete": "Complete",
    "canceled": "Canceled",
    "holded": "On Hold",
}
MONTHS = [(y, m) for y in (2022, 2023) for m in range(1, 13)]
STATUS_JS = "document.querySelector('#order_status').outerText"
PRICE_JS = "document.querySelector('[name=\"product[price]\"]').value"
QTY_JS = "document.querySelector('[name=\"product[quantity_and_stock_status][qty]\"]').value"
PHONE_JS = "document.querySelector('[name=\"customer[telephone]\"]').value"
# The check reads the saved value, not unsaved typing: reset the form to what the server rendered first.
RESET_FORM = "document.querySelector('#product_form').reset()"
COMMENTS = [
    "Customer asked to leave the parcel at the back door.",
    "Gift wrap requested by phone.",
    "Called the customer to confirm the shipping address.",
    "Expedite: replacement for a damaged item.",
    "Customer will pick up the order in person.",
    "Hold shipment until the customer confirms.",
]


def inst(tid: int, rows: list[dict[str, Any]]) -> list[Instance]:
    return [Instance(tid, i, r["values"], r.get("data", {})) for i, r in enumerate(rows)]


def _month(y: int, m: int) -> dict[str, str]:
    last = calendar.monthrange(y, m)[1]
    return {
        "name": f"{calendar.month_name[m]} {y}",
        "from": f"{y}-{m:02d}-01",
        "to": f"{y}-{m:02d}-{last}",
        "us_from": f"{m:02d}/01/{y}",
        "us_to": f"{m:02d}/{last}/{y}",
    }


def _grid_products(db: SeedData) -> list[Any]:
    """Products that the admin grid shows on its first page when searched by full name."""
    return db.memo("shop_admin.grid_products", lambda: _search_grid(db))


def _search_grid(db: SeedData) -> list[Any]:
    conn, out = db.conn("shop"), []
    for p in conn.execute("SELECT * FROM product ORDER BY id").fetchall():
        words = p["name"].split()
        where = " AND ".join("(name LIKE ? OR sku LIKE ?)" for _ in words)
        args = [a for w in words for a in (f"%{w}%", f"%{w}%")]
        ids = [r[0] for r in conn.execute(f"SELECT id FROM product WHERE {where} ORDER BY id LIMIT 20", args)]
        if p["id"] in ids:
            out.append(p)
    return out


def _unique_customers(db: SeedData) -> list[Any]:
    rows = db.conn("shop").execute("SELECT * FROM customer ORDER BY id").fetchall()
    names: dict[str, int] = {}
    for r in rows:
        names[f"{r['firstname']} {r['lastname']}"] = names.get(f"{r['firstname']} {r['lastname']}", 0) + 1
    return [r for r in rows if names[f"{r['firstname']} {r['lastname']}"] == 1]


def _to_product(name: str) -> list[Any]:
    return [
        Click(M("a", "Catalog"), why="open the product catalog"),
        Fill(M("input", name="search"), name, enter=True, why=f"search the catalog for {name}"),
        Click(M("a", "Edit"), after=M("td", name), why=f"open the edit page of {name}"),
    ]


def _to_customer(name: str, edit: bool = True) -> list[Any]:
    steps: list[Any] = [
        Click(M("a", "Customers"), why="open the customer grid"),
        Fill(M("input", name="search"), name, enter=True, why=f"search for {name}"),
    ]
    if edit:
        steps.append(Click(M("a", "Edit"), after=M("td", name), why=f"open the profile of {name}"))
    return steps


def _to_order(inc: str, view: bool = True) -> list[Any]:
    steps: list[Any] = [
        Click(M("a", "Sales"), why="open the orders grid"),
        Fill(M("input", name="search"), inc, enter=True, why=f"search for order {inc}"),
    ]
    if view:
        steps.append(Click(M("a", "View"), after=M("td", inc), why=f"open order #{inc}"))
    return steps


def _filter_orders(status: str, month: dict[str, str]) -> list[Any]:
    return [
        Click(M("a", "Sales"), why="open the orders grid"),
        Choose(M("select", name="status"), STATUS_LABELS[status], why=f"only {status} orders"),
        Fill(M("input", name="from"), month["from"], why="from the first day of the month"),
        Fill(M("input", name="to"), month["to"], why="to the last day of the month"),
        Click(M("button", "Apply Filters"), why="apply the filters"),
    ]


def _report(link: str, period: str, us_from: str, us_to: str) -> list[Any]:
    return [
        Click(M("a", link), why=f"open the {link} report"),
        Choose(M("select", name="period_type"), period, why=f"group by {period.lower()}"),
        Fill(M("input", name="from"), us_from, why="set the start date"),
        Fill(M("input", name="to"), us_to, why="set the end date"),
        Click(M("button", "Show Report"), why="show the report"),
    ]


def _edit_url(pid: int) -> str:
    return f"{ADMIN}/admin/catalog/product/edit/id/{pid}/"


# -- information seeking ------------------------------------------------------------------------------------------
def _order_count_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    combos = [(s, ym) for s in ("pending", "processing", "complete", "canceled") for ym in MONTHS]
    for status, (y, m) in pick(combos, 12, 201):
        mo = _month(y, m)
        n = conn.execute(
            "SELECT COUNT(*) FROM sales_order WHERE status=? AND date(created_at) BETWEEN ? AND ?",
            (status, mo["from"], mo["to"]),
        ).fetchone()[0]
        out.append({"values": {"status": status, "month": mo["name"]}, "data": {"month": mo, "count": n}})
    return inst(201, out)


def _bestseller_instances(db: SeedData) -> list[Instance]:
    conn, out, rng = db.conn("shop"), [], random.Random(202)
    for y, m in MONTHS:
        mo, n = _month(y, m), rng.choice([1, 2, 3])
        rows = Q.bestsellers(conn, "month", mo["from"], mo["to"], top=10)
        if len(rows) > n and rows[n - 1]["qty"] > rows[n]["qty"]:
            out.append(
                {
                    "values": {"n": n, "month": mo["name"]},
                    "data": {"month": mo, "names": [r["name"] for r in rows[:n]]},
                }
            )
    return inst(202, pick(out, 12, 202))


def _items_sold_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for y, m in pick(MONTHS, 12, 203):
        mo = _month(y, m)
        rows = Q.sales_totals(conn, "month", mo["from"], mo["to"])
        out.append(
            {"values": {"month": mo["name"]}, "data": {"month": mo, "items": rows[0]["items"] if rows else 0}}
        )
    return inst(203, out)


def _stock_instances(db: SeedData) -> list[Instance]:
    return inst(
        204,
        [
            {"values": {"product": p["name"]}, "data": {"qty": p["qty"]}}
            for p in pick(_grid_products(db), 12, 204)
        ],
    )


def _phone_instances(db: SeedData) -> list[Instance]:
    return inst(
        205,
        [
            {"values": {"name": f"{c['firstname']} {c['lastname']}"}, "data": {"phone": c["telephone"]}}
            for c in pick(_unique_customers(db), 12, 205)
        ],
    )


def _orders(db: SeedData, statuses: tuple[str, ...] | None = None) -> list[Any]:
    rows = (
        db.conn("shop")
        .execute(
            "SELECT o.*, c.firstname, c.lastname FROM sales_order o JOIN customer c "
            "ON c.id=o.customer_id ORDER BY o.id"
        )
        .fetchall()
    )
    return [r for r in rows if statuses is None or r["status"] in statuses]


def _who_instances(db: SeedData) -> list[Instance]:
    return inst(
        206,
        [
            {
                "values": {"increment_id": o["increment_id"]},
                "data": {"name": f"{o['firstname']} {o['lastname']}"},
            }
            for o in pick(_orders(db), 12, 206)
        ],
    )


def _review_count_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for status in ("pending", "approved"):
        for stars in range(1, 6):
            n = conn.execute(
                "SELECT COUNT(*) FROM review WHERE status=? AND rating=?", (status, stars)
            ).fetchone()[0]
            out.append({"values": {"status": status, "stars": stars}, "data": {"count": n}})
    return inst(207, out)


def _address_instances(db: SeedData) -> list[Instance]:
    return inst(
        208,
        [
            {
                "values": {"increment_id": o["increment_id"]},
                "data": {
                    "address": f"{o['ship_street']}, {o['ship_city']}, {o['ship_region']} "
                    f"{o['ship_postcode']}"
                },
            }
            for o in pick(_orders(db), 4, 208)
        ],
    )


INFO = [
    Template(
        201,
        "shopping_admin",
        "How many {{status}} orders were placed in {{month}}?",
        "info",
        ("string_match",),
        _order_count_instances,
        lambda i: string_eval(exact=str(i.data["count"])),
        lambda i: [*_filter_orders(i.values["status"], i.data["month"]), Answer(str(i.data["count"]))],
        start_path=HOME,
    ),
    Template(
        202,
        "shopping_admin",
        "What were the top {{n}} best-selling products in {{month}}?",
        "info",
        ("string_match",),
        _bestseller_instances,
        lambda i: string_eval(include=i.data["names"]),
        lambda i: [
            *_report("Bestsellers", "Month", i.data["month"]["us_from"], i.data["month"]["us_to"]),
            Answer("; ".join(i.data["names"])),
        ],
        start_path=HOME,
    ),
    Template(
        203,
        "shopping_admin",
        "According to the sales report, how many items were sold in {{month}}?",
        "info",
        ("string_match",),
        _items_sold_instances,
        lambda i: string_eval(exact=str(i.data["items"])),
        lambda i: [
            *_report("Sales Report", "Month", i.data["month"]["us_from"], i.data["month"]["us_to"]),
            Answer(str(i.data["items"])),
        ],
        start_path=HOME,
    ),
    Template(
        204,
        "shopping_admin",
        "How many units of {{product}} are in stock?",
        "info",
        ("string_match",),
        _stock_instances,
        lambda i: string_eval(exact=str(i.data["qty"])),
        lambda i: [*_to_product(i.values["product"]), Answer(str(i.data["qty"]))],
        start_path=HOME,
    ),
    Template(
        205,
        "shopping_admin",
        "What is the phone number of the customer {{name}}?",
        "info",
        ("string_match",),
        _phone_instances,
        lambda i: string_eval(include=[i.data["phone"]]),
        lambda i: [*_to_customer(i.values["name"], edit=False), Answer(i.data["phone"])],
        start_path=HOME,
    ),
    Template(
        206,
        "shopping_admin",
        "Who placed order #{{increment_id}}?",
        "info",
        ("string_match",),
        _who_instances,
        lambda i: string_eval(include=[i.data["name"]]),
        lambda i: [*_to_order(i.values["increment_id"], view=False), Answer(i.data["name"])],
        start_path=HOME,
        held_out=True,
    ),
    Template(
        207,
        "shopping_admin",
        "How many {{status}} reviews have a rating of {{stars}} out of 5 stars?",
        "info",
        ("string_match",),
        _review_count_instances,
        lambda i: string_eval(exact=str(i.data["count"])),
        lambda i: [
            Click(M("a", "Reviews"), why="open the reviews grid"),
            Choose(M("select", name="status"), i.values["status"].title(), why="filter by status"),
            Choose(M("select", name="rating"), str(i.values["stars"]), why="filter by rating"),
            Click(M("button", "Search"), why="apply the filters"),
            Answer(str(i.data["count"])),
        ],
        start_path=HOME,
    ),
    Template(
        208,
        "shopping_admin",
        "What is the shipping address of order #{{increment_id}}?",
        "info",
        ("string_match",),
        _address_instances,
        lambda i: string_eval(fuzzy=[i.data["address"]]),
        lambda i: [*_to_order(i.values["increment_id"]), Answer(i.data["address"])],
        start_path=HOME,
    ),
]


TEMPLATES = INFO
