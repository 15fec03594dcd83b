"""State-changing and navigation templates of the storefront and their expert scripts (see `sites.tasks.shop`)."""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import quote_plus

from sites.shop import catalog_data as CD
from sites.shop import queries as Q
from sites.tasks.base import Instance, SeedData, Template, html_eval, pick, target, url_eval
from sites.tasks.shop import (
    ME,
    ORDERED,
    PRICE_RANGES,
    SHOP,
    WISHLIST,
    _findable,
    _orders_of_me,
    _price_label,
    _shop,
    _to_order,
    inst,
    open_product,
)
from sites.tasks.steps import Answer, Choose, Click, ClickOrGo, Fill, M


# -- state-changing -----------------------------------------------------------------------------------------------
def _in_stock(db: SeedData) -> list[Any]:
    return [r for r in _findable(db) if r["qty"] > 0]


def _cart_instances(db: SeedData) -> list[Instance]:
    rows = pick(_in_stock(db), 12, 121)
    rng = random.Random(121)
    return inst(121, [{"values": {"qty": rng.choice([1, 2, 3]), "product": r["name"]}} for r in rows])


def _buy_instances(db: SeedData) -> list[Instance]:
    conn = _shop(db)
    latest = Q.latest_order(conn, ME)
    skus = {i["sku"] for i in Q.order_items(conn, latest["id"])}  # a do-nothing episode must not pass
    addrs = Q.addresses(conn, ME)
    rows = pick([r for r in _in_stock(db) if r["sku"] not in skus], 12, 122)
    return inst(
        122,
        [
            {
                "values": {"product": r["name"], "city": addrs[k % len(addrs)]["city"]},
                "data": {"sku": r["sku"], "address_id": addrs[k % len(addrs)]["id"]},
            }
            for k, r in enumerate(rows)
        ],
    )


def _wish_add_instances(db: SeedData) -> list[Instance]:
    have = {w["product_id"] for w in Q.wishlist(_shop(db), ME)}
    rows = pick([r for r in _findable(db) if r["id"] not in have], 12, 123)
    return inst(123, [{"values": {"product": r["name"]}} for r in rows])


def _wish_remove_instances(db: SeedData) -> list[Instance]:
    return inst(124, [{"values": {"product": w["name"]}} for w in Q.wishlist(_shop(db), ME)])


REVIEW_LINES = {
    5: ("Just what I needed", "Sturdy, well made and easy to use."),
    4: ("Pretty good overall", "Works nicely, a few small flaws."),
    3: ("Middle of the road", "Fine for the price but nothing more."),
    2: ("Not impressed", "It feels flimsy and wore out fast."),
    1: ("Would not recommend", "It failed within the first few days."),
}


def _review_instances(db: SeedData) -> list[Instance]:
    conn, rng, out = _shop(db), random.Random(125), []
    for r in pick(_findable(db), 12, 125):
        last = Q.latest_review(conn, r["sku"])
        if last is not None and last["nickname"] == "Emma":
            continue
        stars = rng.randint(1, 5)
        title, text = REVIEW_LINES[stars]
        out.append(
            {
                "values": {"stars": stars, "product": r["name"], "title": title, "text": text},
                "data": {"sku": r["sku"]},
            }
        )
    return inst(125, out)


def _address_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(126), []
    for _ in range(12):
        city, region, zip3 = rng.choice(CD.CITIES)
        street = f"{rng.randrange(100, 9999)} {rng.choice(CD.STREETS)}"
        out.append(
            {
                "values": {
                    "street": street,
                    "city": city,
                    "region": region,
                    "zip": f"{zip3}{rng.randrange(10, 99)}",
                }
            }
        )
    return inst(126, out)


def _review_steps(i: Instance) -> list[Any]:
    v = i.values
    return [
        *open_product(v["product"]),
        Click(
            M("input", type="radio", **{"name": "ratings[1]", "value": str(v["stars"])}),
            why=f"rate it {v['stars']} stars",
        ),
        Fill(M("input", name="title"), v["title"], why="write the summary"),
        Fill(M("textarea", name="detail"), v["text"], why="write the review text"),
        Click(M("button", "Submit Review"), why="submit the review"),
        Answer(),
    ]


def _address_steps(i: Instance) -> list[Any]:
    v = i.values
    fields = [("street", v["street"]), ("city", v["city"]), ("region", v["region"]), ("postcode", v["zip"])]
    return [
        Click(M("a", "My Account"), why="open my account"),
        Click(M("a", "Address Book"), why="open the address book"),
        Click(M("a", "Add New Address"), why="start a new address"),
        *[Fill(M("input", name=k), val, why=f"fill in the {k}") for k, val in fields],
        Click(M("button", "Save Address"), why="save the address"),
        Answer(),
    ]


STATE = [
    Template(
        121,
        "shopping",
        "Add {{qty}} of {{product}} to my shopping cart",
        "state",
        ("program_html",),
        _cart_instances,
        lambda i: html_eval(
            target(
                f"{SHOP}/checkout/cart/",
                "document.querySelector('#shopping-cart-table').outerText",
                include=[i.values["product"]],
            ),
            target(
                "last",
                "document.querySelector('#shopping-cart-table input.qty').value",
                exact=str(i.values["qty"]),
            ),
        ),
        lambda i: [
            *open_product(i.values["product"]),
            Fill(M("input", name="qty"), str(i.values["qty"]), why="set the quantity"),
            Click(M("button", "Add to Cart"), why="add it to the cart"),
            Answer(),
        ],
    ),
    Template(
        122,
        "shopping",
        "Buy {{product}} and ship it to my address in {{city}}",
        "state",
        ("program_html",),
        _buy_instances,
        lambda i: html_eval(
            target("func:shopping_get_latest_order_url()", ORDERED, include=[i.data["sku"]]),
            target(
                "last",
                "document.querySelector('.box-order-shipping-address').outerText",
                include=[i.values["city"]],
            ),
        ),
        lambda i: [
            *open_product(i.values["product"]),
            Click(M("button", "Add to Cart"), why="add it to the cart"),
            Click(M("a", contains="My Cart"), why="open the cart"),
            Click(M("a", "Proceed to Checkout"), why="go to checkout"),
            Click(
                M("input", type="radio", name="address_id", value=str(i.data["address_id"])),
                why=f"ship to the {i.values['city']} address",
            ),
            Click(M("button", "Place Order"), why="place the order"),
            Answer(),
        ],
    ),
    Template(
        123,
        "shopping",
        "Add {{product}} to my wish list",
        "state",
        ("program_html",),
        _wish_add_instances,
        lambda i: html_eval(target(f"{SHOP}/wishlist/", WISHLIST, include=[i.values["product"]])),
        lambda i: [
            *open_product(i.values["product"]),
            Click(M("button", "Add to Wish List"), why="add it to the wish list"),
            Answer(),
        ],
    ),
    Template(
        124,
        "shopping",
        "Remove {{product}} from my wish list",
        "state",
        ("program_html",),
        _wish_remove_instances,
        lambda i: html_eval(target(f"{SHOP}/wishlist/", WISHLIST, exclude=[i.values["product"]])),
        lambda i: [
            Click(M("a", "My Wish List"), why="open my wish list"),
            Click(
                M("button", "Remove item"),
                after=M("a", i.values["product"]),
                why=f"remove {i.values['product']}",
            ),
            Answer(),
        ],
        held_out=True,
    ),
    Template(
        125,
        "shopping",
        'Write a {{stars}}-star review of {{product}} with the summary "{{title}}" and the text "{{text}}"',
        "state",
        ("program_html",),
        _review_instances,
        lambda i: html_eval(
            target(
                "last",
                f"func:shopping_get_sku_latest_review_rating('{i.data['sku']}')",
                exact=str(20 * i.values["stars"]),
            ),
            target("last", f"func:shopping_get_sku_latest_review_author('{i.data['sku']}')", exact="Emma"),
        ),
        _review_steps,
    ),
    Template(
        126,
        "shopping",
        "Add a new address to my address book: {{street}}, {{city}}, {{region}} {{zip}}",
        "state",
        ("program_html",),
        _address_instances,
        lambda i: html_eval(
            target(
                f"{SHOP}/customer/address/",
                "document.querySelector('.block-addresses-list').outerText",
                include=[i.values["street"], i.values["city"], i.values["zip"]],
            )
        ),
        _address_steps,
    ),
]


# -- navigation -----------------------------------------------------------------------------------------------------
def _sort_instances(db: SeedData) -> list[Instance]:
    cats = _shop(db).execute("SELECT * FROM category ORDER BY id").fetchall()
    out = [
        {"values": {"category": c["name"], "which": which}, "data": {"slug": c["slug"], "dir": d}}
        for c in cats
        for which, d in (("cheapest", "asc"), ("most expensive", "desc"))
    ]
    return inst(131, pick(out, 12, 131))


def _search_instances(db: SeedData) -> list[Instance]:
    nouns = sorted({n for subs in CD.CATALOG.values() for nouns, _ in subs.values() for n in nouns})
    pairs = zip(pick(CD.BRANDS, 4, 1320), pick(CD.ADJECTIVES, 4, 1321), strict=True)
    words = [n.lower() for n in pick(nouns, 8, 132)] + [f"{b} {a}".lower() for b, a in pairs]
    return inst(132, [{"values": {"query": w}} for w in words])


def _range_nav_instances(db: SeedData) -> list[Instance]:
    cats = _shop(db).execute("SELECT * FROM category WHERE parent_id IS NOT NULL ORDER BY id").fetchall()
    combos = [
        {"values": {"category": c["name"], "lo": lo, "hi": hi}, "data": {"slug": c["slug"]}}
        for c in cats
        for lo, hi in PRICE_RANGES
    ]
    return inst(133, pick(combos, 12, 133))


def _order_nav_instances(db: SeedData) -> list[Instance]:
    return inst(
        134,
        [
            {"values": {"increment_id": o["increment_id"]}, "data": {"order_id": o["id"]}}
            for o in pick(_orders_of_me(db), 12, 134)
        ],
    )


def _sort_steps(i: Instance) -> list[Any]:
    return [
        ClickOrGo(
            M("a", i.values["category"]),
            f"/{i.data['slug']}.html",
            why=f"open the {i.values['category']} category",
        ),
        Choose(M("select", name="order"), "Price", why="sort by price"),
        Choose(
            M("select", name="dir"),
            "Ascending" if i.data["dir"] == "asc" else "Descending",
            why=f"{i.values['which']} first",
        ),
        Click(M("button", "Apply"), why="apply the sort order"),
        Answer(),
    ]


NAV = [
    Template(
        131,
        "shopping",
        "Show me the products in {{category}} sorted by price, {{which}} first",
        "nav",
        ("url_match",),
        _sort_instances,
        lambda i: url_eval(f"{SHOP}/{i.data['slug']}.html?order=price&dir={i.data['dir']}"),
        _sort_steps,
    ),
    Template(
        132,
        "shopping",
        'Search the store for "{{query}}"',
        "nav",
        ("url_match",),
        _search_instances,
        lambda i: url_eval(f"{SHOP}/catalogsearch/result/?q={quote_plus(i.values['query'])}"),
        lambda i: [
            Fill(M("input", name="q"), i.values["query"], enter=True, why="search the store"),
            Answer(),
        ],
    ),
    Template(
        133,
        "shopping",
        "Show me the {{category}} products priced from ${{lo}} to ${{hi}}",
        "nav",
        ("url_match",),
        _range_nav_instances,
        lambda i: url_eval(f"{SHOP}/{i.data['slug']}.html?price={i.values['lo']}-{i.values['hi']}"),
        lambda i: [
            ClickOrGo(
                M("a", i.values["category"]),
                f"/{i.data['slug']}.html",
                why=f"open the {i.values['category']} category",
            ),
            Click(M("a", _price_label(i.values["lo"], i.values["hi"])), why="filter by the price range"),
            Answer(),
        ],
    ),
    Template(
        134,
        "shopping",
        "Open the details page of my order #{{increment_id}}",
        "nav",
        ("url_match",),
        _order_nav_instances,
        lambda i: url_eval(f"{SHOP}/sales/order/view/order_id/{i.data['order_id']}/"),
        lambda i: [*_to_order(i.values["increment_id"]), Answer()],
    ),
]

TEMPLATES = STATE + NAV
