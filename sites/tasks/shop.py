"""Task templates of the shop storefront (site `shopping`, template ids 100-199) and their expert scripts.

Every instance reads the seeded shop database (customer 1, Emma Lopez, is the logged-in user), so reference
answers are what the pages show. Held-out templates (all instances in the test split): 105, 124.
"""

from __future__ import annotations

from typing import Any

from sites.shop import queries as Q
from sites.tasks.base import Instance, SeedData, Template, pick, string_eval
from sites.tasks.steps import AllPages, Answer, Choose, Click, ClickOrGo, Fill, Go, M, Until

SHOP = "__SHOPPING__"
ME = 1  # Emma Lopez, the default customer
PRICE_RANGES = [(0, 25), (25, 50), (50, 100), (100, 200), (200, 1000)]
ORDERED = 'document.querySelector(".order-details-items.ordered").outerText'
WISHLIST = "document.querySelector('.products-grid.wishlist').outerText"


def _shop(db: SeedData) -> Any:
    return db.conn("shop")


def _findable(db: SeedData) -> list[Any]:
    """Enabled products that the storefront search finds on its first page when searched by full name."""
    return db.memo("shop.findable", lambda: _search_findable(db))


def _search_findable(db: SeedData) -> list[Any]:
    conn = _shop(db)
    out = []
    for p in conn.execute("SELECT id FROM product WHERE status=1 ORDER BY id").fetchall():
        row = Q.product(conn, p["id"])
        rows, _ = Q.search_products(conn, row["name"])
        if any(r["id"] == row["id"] for r in rows):
            out.append(row)
    return out[:400]  # the first 400 by id: candidates enough for every template


def open_product(name: str) -> list[Any]:
    """Search the store for a product by name and open its page."""
    return [
        Fill(M("input", name="q"), name, enter=True, why=f"search the store for '{name}'"),
        Click(M("a", name), why=f"open the product page of {name}"),
    ]


def inst(tid: int, rows: list[dict[str, Any]]) -> list[Instance]:
    return [Instance(tid, i, r["values"], r.get("data", {})) for i, r in enumerate(rows)]


def _price_label(lo: int, hi: int) -> str:
    return f"${lo}.00 - ${hi - 0.01:.2f}"


def _cat_path(slug: str) -> str:
    return f"/{slug}.html"


def _product_page(i: Instance) -> str:
    """The product's own page (where its price, review count and reviews are shown)."""
    return f"/{i.data['slug']}.html"


def _order_page(i: Instance) -> str:
    """My order's page (its items and totals)."""
    return f"/sales/order/view/order_id/{i.data['id']}/"


def _orders_of_me(db: SeedData) -> list[Any]:
    rows, _ = Q.customer_orders(_shop(db), ME, limit=1000)
    return rows


def _to_order(inc: str) -> list[Any]:
    """From any page: My Account -> View All orders -> page until the order -> View Order."""
    return [
        Click(M("a", "My Account"), why="open my account"),
        Click(M("a", "View All"), why="open the full order history"),
        Until(M("td", inc), M("a", "Next"), why=f"order {inc} is not on this page: next page"),
        Click(M("a", "View Order"), after=M("td", inc), why=f"open order #{inc}"),
    ]


# -- information seeking ------------------------------------------------------------------------------------------
def _price_instances(db: SeedData) -> list[Instance]:
    rows = pick(_findable(db), 14, 101)
    return inst(
        101,
        [{"values": {"product": r["name"]}, "data": {"price": r["price"], "slug": r["slug"]}} for r in rows],
    )


def _review_count_instances(db: SeedData) -> list[Instance]:
    rows = pick(_findable(db), 12, 102)
    return inst(
        102,
        [
            {"values": {"product": r["name"]}, "data": {"count": r["review_count"], "slug": r["slug"]}}
            for r in rows
        ],
    )


def _reviewers_instances(db: SeedData) -> list[Instance]:
    conn, out = _shop(db), []
    for r in _findable(db):
        revs = Q.reviews(conn, r["id"])
        for stars in (5, 4, 1):
            names = [v["nickname"] for v in revs if v["rating"] == stars]
            if 2 <= len(names) == len(set(names)):
                values = {"product": r["name"], "stars": stars}
                out.append({"values": values, "data": {"names": names, "slug": r["slug"]}})
                break
    return inst(103, pick(out, 12, 103))


def _range_count_instances(db: SeedData) -> list[Instance]:
    conn = _shop(db)
    cats = conn.execute("SELECT * FROM category WHERE parent_id IS NOT NULL ORDER BY id").fetchall()
    combos = [(c, lo, hi) for c in cats for lo, hi in PRICE_RANGES]
    out = []
    for c, lo, hi in pick(combos, 12, 104):
        _, total = Q.search_products(conn, "", c["id"], lo, hi)
        out.append(
            {
                "values": {"category": c["name"], "lo": lo, "hi": hi},
                "data": {"slug": c["slug"], "count": total},
            }
        )
    return inst(104, out)


def _cheapest_instances(db: SeedData) -> list[Instance]:
    conn, out = _shop(db), []
    for c in conn.execute("SELECT * FROM category ORDER BY id").fetchall():
        rows, _ = Q.search_products(conn, "", c["id"], order="price", limit=2)
        if len(rows) == 2 and rows[0]["price"] < rows[1]["price"]:
            out.append(
                {"values": {"category": c["name"]}, "data": {"slug": c["slug"], "name": rows[0]["name"]}}
            )
    return inst(105, pick(out, 12, 105))


def _order_total_instances(db: SeedData) -> list[Instance]:
    rows = [o for o in _orders_of_me(db) if o["grand_total"] < 1000]
    return inst(
        106,
        [
            {
                "values": {"increment_id": o["increment_id"]},
                "data": {"total": o["grand_total"], "id": o["id"]},
            }
            for o in pick(rows, 12, 106)
        ],
    )


def _order_items_instances(db: SeedData) -> list[Instance]:
    conn = _shop(db)
    rows = [o for o in _orders_of_me(db) if len(Q.order_items(conn, o["id"])) >= 2]
    return inst(
        107,
        [
            {
                "values": {"increment_id": o["increment_id"]},
                "data": {"names": [i["name"] for i in Q.order_items(conn, o["id"])], "id": o["id"]},
            }
            for o in pick(rows, 4, 107)
        ],
    )


def _status_count_instances(db: SeedData) -> list[Instance]:
    orders, out = _orders_of_me(db), []
    for year in ("2022", "2023"):
        for status in ("complete", "canceled", "pending", "processing"):
            n = sum(1 for o in orders if o["created_at"].startswith(year) and o["status"] == status)
            out.append({"values": {"status": status, "year": year}, "data": {"count": n}})
    return inst(108, out)


INFO = [
    Template(
        101,
        "shopping",
        "What is the price of {{product}}?",
        "info",
        ("string_match",),
        _price_instances,
        lambda i: string_eval(include=[f"{i.data['price']:.2f}"]),
        lambda i: [*open_product(i.values["product"]), Answer(f"${i.data['price']:.2f}", _product_page(i))],
    ),
    Template(
        102,
        "shopping",
        "How many reviews does {{product}} have?",
        "info",
        ("string_match",),
        _review_count_instances,
        lambda i: string_eval(exact=str(i.data["count"])),
        lambda i: [*open_product(i.values["product"]), Answer(str(i.data["count"]), _product_page(i))],
    ),
    Template(
        103,
        "shopping",
        "Which reviewers gave {{product}} a {{stars}}-star rating? List their names.",
        "info",
        ("string_match",),
        _reviewers_instances,
        lambda i: string_eval(include=i.data["names"]),
        lambda i: [*open_product(i.values["product"]), Answer(", ".join(i.data["names"]), _product_page(i))],
    ),
    Template(
        104,
        "shopping",
        "How many products in the {{category}} category are priced from ${{lo}} to ${{hi}}?",
        "info",
        ("string_match",),
        _range_count_instances,
        lambda i: string_eval(exact=str(i.data["count"])),
        lambda i: [
            ClickOrGo(
                M("a", i.values["category"]),
                _cat_path(i.data["slug"]),
                why=f"open the {i.values['category']} category",
            ),
            Click(M("a", _price_label(i.values["lo"], i.values["hi"])), why="filter by the price range"),
            Answer(
                str(i.data["count"]),
                f"{_cat_path(i.data['slug'])}?price={i.values['lo']}-{i.values['hi']}",
            ),
        ],
    ),
    Template(
        105,
        "shopping",
        "What is the cheapest product in the {{category}} category?",
        "info",
        ("string_match",),
        _cheapest_instances,
        lambda i: string_eval(include=[i.data["name"]]),
        lambda i: [
            ClickOrGo(
                M("a", i.values["category"]),
                _cat_path(i.data["slug"]),
                why=f"open the {i.values['category']} category",
            ),
            Choose(M("select", name="order"), "Price", why="sort by price"),
            Choose(M("select", name="dir"), "Ascending", why="cheapest first"),
            Click(M("button", "Apply"), why="apply the sort order"),
            Answer(i.data["name"], f"{_cat_path(i.data['slug'])}?order=price&dir=asc"),
        ],
        held_out=True,
    ),
    Template(
        106,
        "shopping",
        "What was the grand total of my order #{{increment_id}}?",
        "info",
        ("string_match",),
        _order_total_instances,
        lambda i: string_eval(include=[f"{i.data['total']:.2f}"]),
        lambda i: [*_to_order(i.values["increment_id"]), Answer(f"${i.data['total']:.2f}", _order_page(i))],
    ),
    Template(
        107,
        "shopping",
        "Which products did I buy in order #{{increment_id}}?",
        "info",
        ("string_match",),
        _order_items_instances,
        lambda i: string_eval(fuzzy=i.data["names"]),
        lambda i: [*_to_order(i.values["increment_id"]), Answer("; ".join(i.data["names"]), _order_page(i))],
    ),
    Template(
        108,
        "shopping",
        "How many of the orders I placed in {{year}} have the status {{status}}?",
        "info",
        ("string_match",),
        _status_count_instances,
        lambda i: string_eval(exact=str(i.data["count"])),
        lambda i: [
            Go("/sales/order/history/", why="open my order history"),
            AllPages(M("a", "Next"), why="count the matching orders here, then open the next page"),
            Answer(str(i.data["count"]), "/sales/order/history/"),
        ],
    ),
]


TEMPLATES = INFO
