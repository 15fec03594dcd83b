"""State-changing and navigation templates of the shop admin and their expert scripts (see `sites.tasks.shop_admin`)."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sites.tasks.base import Instance, SeedData, Template, html_eval, pick, target, url_eval
from sites.tasks.shop_admin import (
    ADMIN,
    COMMENTS,
    HOME,
    MONTHS,
    PHONE_JS,
    PRICE_JS,
    QTY_JS,
    RESET_FORM,
    STATUS_JS,
    _edit_url,
    _filter_orders,
    _grid_products,
    _month,
    _orders,
    _report,
    _to_customer,
    _to_order,
    _to_product,
    _unique_customers,
    inst,
)
from sites.tasks.steps import Answer, Choose, Click, Fill, M


# -- state-changing -----------------------------------------------------------------------------------------------
def _money(x: float) -> str:
    return str(Decimal(str(x)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _set_price_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(221), []
    for p in pick(_grid_products(db), 12, 221):
        new = _money(max(1.0, round(p["price"] * rng.choice([0.8, 0.9, 1.1, 1.25])) - 0.01))
        out.append({"values": {"product": p["name"], "price": new}, "data": {"pid": p["id"]}})
    return inst(221, out)


def _adjust_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(222), []
    for p in pick(_grid_products(db), 12, 222):
        action, pct = rng.choice(["Increase", "Reduce"]), rng.choice([5, 10, 15, 20, 25])
        factor = Decimal(100 + pct if action == "Increase" else 100 - pct) / 100
        new = str((Decimal(str(p["price"])) * factor).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
        out.append({"values": {"action": action, "pct": pct}, "data": {"pid": p["id"], "price": new}})
    return inst(222, out)


def _disable_instances(db: SeedData) -> list[Instance]:
    rows = [p for p in _grid_products(db) if p["status"] == 1]
    return inst(
        223, [{"values": {"product": p["name"]}, "data": {"pid": p["id"]}} for p in pick(rows, 12, 223)]
    )


def _stock_set_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(224), []
    for p in pick(_grid_products(db), 12, 224):
        qty = rng.choice([q for q in (0, 15, 30, 75, 120, 200) if q != p["qty"]])
        out.append({"values": {"product": p["name"], "qty": qty}, "data": {"pid": p["id"]}})
    return inst(224, out)


def _order_action_instances(tid: int, db: SeedData) -> list[Instance]:
    return inst(
        tid,
        [
            {"values": {"increment_id": o["increment_id"]}, "data": {"order_id": o["id"]}}
            for o in pick(_orders(db, ("pending", "processing")), 12, tid)
        ],
    )


def _comment_instances(db: SeedData) -> list[Instance]:
    rng = random.Random(227)
    return inst(
        227,
        [
            {
                "values": {"comment": rng.choice(COMMENTS), "increment_id": o["increment_id"]},
                "data": {"order_id": o["id"]},
            }
            for o in pick(_orders(db), 12, 227)
        ],
    )


def _approve_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for r in conn.execute(
        "SELECT r.*, p.sku FROM review r JOIN product p ON p.id=r.product_id "
        "WHERE r.status='pending' ORDER BY r.id"
    ).fetchall():
        same = conn.execute(
            "SELECT COUNT(*) FROM review WHERE product_id=? AND nickname=?", (r["product_id"], r["nickname"])
        ).fetchone()[0]
        if same == 1:
            out.append(
                {"values": {"nickname": r["nickname"], "sku": r["sku"]}, "data": {"review_id": r["id"]}}
            )
    return inst(228, pick(out, 12, 228))


def _phone_update_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(229), []
    for c in pick(_unique_customers(db), 12, 229):
        phone = f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}"
        out.append(
            {
                "values": {"name": f"{c['firstname']} {c['lastname']}", "phone": phone},
                "data": {"cid": c["id"]},
            }
        )
    return inst(229, out)


def _review_row_js(review_id: int) -> str:
    return (
        "[...document.querySelectorAll('#reviwGrid_table tr.data-row')]"
        f".find(r => r.cells[0].innerText.trim() === '{review_id}').cells[2].innerText"
    )


def _order_url(i: Instance) -> str:
    return f"{ADMIN}/admin/sales/order/view/order_id/{i.data['order_id']}/"


def _order_button(label: str) -> Any:
    return lambda i: [
        *_to_order(i.values["increment_id"]),
        Click(M("button", label), why=f"{label.lower()} the order"),
        Answer(),
    ]


STATE = [
    Template(
        221,
        "shopping_admin",
        "Change the price of {{product}} to ${{price}}",
        "state",
        ("program_html",),
        _set_price_instances,
        lambda i: html_eval(target(_edit_url(i.data["pid"]), PRICE_JS, exact=i.values["price"])),
        lambda i: [
            *_to_product(i.values["product"]),
            Fill(M("input", **{"name": "product[price]"}), i.values["price"], why="enter the new price"),
            Click(M("button", "Save"), why="save the product"),
            Answer(),
        ],
        start_path=HOME,
    ),
    Template(
        222,
        "shopping_admin",
        "{{action}} the price of this product by {{pct}}%",
        "state",
        ("program_html",),
        _adjust_instances,
        lambda i: html_eval(target(_edit_url(i.data["pid"]), PRICE_JS, exact=i.data["price"])),
        lambda i: [
            Fill(
                M("input", **{"name": "product[price]"}),
                i.data["price"],
                why=f"the price {i.values['action'].lower()}d by {i.values['pct']}% is {i.data['price']}",
            ),
            Click(M("button", "Save"), why="save the product"),
            Answer(),
        ],
        start_path=lambda i: f"/admin/catalog/product/edit/id/{i.data['pid']}/",
    ),
    Template(
        223,
        "shopping_admin",
        "Disable the product {{product}}",
        "state",
        ("program_html",),
        _disable_instances,
        lambda i: html_eval(
            target(
                _edit_url(i.data["pid"]),
                "document.querySelector('[name=\"product[status]\"]').value",
                exact="2",
            )
        ),
        lambda i: [
            *_to_product(i.values["product"]),
            Choose(M("select", **{"name": "product[status]"}), "Disabled", why="disable it"),
            Click(M("button", "Save"), why="save the product"),
            Answer(),
        ],
        start_path=HOME,
    ),
    Template(
        224,
        "shopping_admin",
        "Set the stock quantity of {{product}} to {{qty}}",
        "state",
        ("program_html",),
        _stock_set_instances,
        lambda i: html_eval(target("last", QTY_JS, exact=str(i.values["qty"]), prep=[RESET_FORM])),
        lambda i: [
            *_to_product(i.values["product"]),
            Fill(
                M("input", **{"name": "product[quantity_and_stock_status][qty]"}),
                str(i.values["qty"]),
                why="enter the new quantity",
            ),
            Click(M("button", "Save"), why="save the product"),
            Answer(),
        ],
        start_path=HOME,
    ),
    Template(
        225,
        "shopping_admin",
        "Cancel order #{{increment_id}}",
        "state",
        ("program_html",),
        lambda db: _order_action_instances(225, db),
        lambda i: html_eval(target(_order_url(i), STATUS_JS, exact="Canceled")),
        _order_button("Cancel"),
        start_path=HOME,
    ),
    Template(
        226,
        "shopping_admin",
        "Put order #{{increment_id}} on hold",
        "state",
        ("program_html",),
        lambda db: _order_action_instances(226, db),
        lambda i: html_eval(target(_order_url(i), STATUS_JS, exact="On Hold")),
        _order_button("Hold"),
        start_path=HOME,
        held_out=True,
    ),
    Template(
        227,
        "shopping_admin",
        'Add the comment "{{comment}}" to order #{{increment_id}}',
        "state",
        ("url_match", "program_html"),
        _comment_instances,
        lambda i: html_eval(
            target("last", "document.querySelector('.note-list').outerText", include=[i.values["comment"]]),
            reference_url=_order_url(i),
        ),
        lambda i: [
            *_to_order(i.values["increment_id"]),
            Fill(M("textarea", **{"name": "history[comment]"}), i.values["comment"], why="write it"),
            Click(M("button", "Submit Comment"), why="submit the comment"),
            Answer(),
        ],
        start_path=HOME,
    ),
    Template(
        228,
        "shopping_admin",
        "Approve the pending review that {{nickname}} wrote for the product with SKU {{sku}}",
        "state",
        ("program_html",),
        _approve_instances,
        lambda i: html_eval(
            target(
                f"{ADMIN}/admin/review/product/?sku={i.values['sku']}",
                _review_row_js(i.data["review_id"]),
                exact="Approved",
            )
        ),
        lambda i: [
            Click(M("a", "Reviews"), why="open the reviews grid"),
            Fill(M("input", name="sku"), i.values["sku"], why="filter by the SKU"),
            Choose(M("select", name="status"), "Pending", why="only pending reviews"),
            Click(M("button", "Search"), why="apply the filters"),
            Click(
                M("button", "Approve"),
                after=M("td", i.values["nickname"]),
                why=f"approve the review by {i.values['nickname']}",
            ),
            Answer(),
        ],
        start_path=HOME,
    ),
    Template(
        229,
        "shopping_admin",
        "Update the phone number of customer {{name}} to {{phone}}",
        "state",
        ("program_html",),
        _phone_update_instances,
        lambda i: html_eval(
            target(
                f"{ADMIN}/admin/customer/index/edit/id/{i.data['cid']}/", PHONE_JS, exact=i.values["phone"]
            )
        ),
        lambda i: [
            *_to_customer(i.values["name"]),
            Fill(M("input", **{"name": "customer[telephone]"}), i.values["phone"], why="enter the number"),
            Click(M("button", "Save Customer"), why="save the customer"),
            Answer(),
        ],
        start_path=HOME,
    ),
]


# -- navigation -----------------------------------------------------------------------------------------------------
def _orders_nav_instances(db: SeedData) -> list[Instance]:
    combos = [(s, ym) for s in ("pending", "processing", "complete", "canceled") for ym in MONTHS]
    return inst(
        241,
        [
            {"values": {"status": s, "month": _month(*ym)["name"]}, "data": {"month": _month(*ym)}}
            for s, ym in pick(combos, 12, 241)
        ],
    )


def _report_nav_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(244), []
    for y, m in pick([ym for ym in MONTHS if ym[1] <= 10], 12, 244):
        end = _month(y, m + 2)  # a quarter
        out.append(
            {
                "values": {
                    "period": rng.choice(["day", "month", "year"]),
                    "from": f"{m:02d}/01/{y}",
                    "to": end["us_to"],
                }
            }
        )
    return inst(244, out)


NAV = [
    Template(
        241,
        "shopping_admin",
        "Show me the {{status}} orders placed in {{month}}",
        "nav",
        ("url_match",),
        _orders_nav_instances,
        lambda i: url_eval(
            f"{ADMIN}/admin/sales/order/?status={i.values['status']}"
            f"&from={i.data['month']['from']}&to={i.data['month']['to']}"
        ),
        lambda i: [*_filter_orders(i.values["status"], i.data["month"]), Answer()],
        start_path=HOME,
    ),
    Template(
        242,
        "shopping_admin",
        "Open the edit page of the product {{product}}",
        "nav",
        ("url_match",),
        lambda db: inst(
            242,
            [
                {"values": {"product": p["name"]}, "data": {"pid": p["id"]}}
                for p in pick(_grid_products(db), 12, 242)
            ],
        ),
        lambda i: url_eval(_edit_url(i.data["pid"])),
        lambda i: [*_to_product(i.values["product"]), Answer()],
        start_path=HOME,
    ),
    Template(
        243,
        "shopping_admin",
        "Open the customer profile of {{name}}",
        "nav",
        ("url_match",),
        lambda db: inst(
            243,
            [
                {"values": {"name": f"{c['firstname']} {c['lastname']}"}, "data": {"cid": c["id"]}}
                for c in pick(_unique_customers(db), 12, 243)
            ],
        ),
        lambda i: url_eval(f"{ADMIN}/admin/customer/index/edit/id/{i.data['cid']}/"),
        lambda i: [*_to_customer(i.values["name"]), Answer()],
        start_path=HOME,
    ),
    Template(
        244,
        "shopping_admin",
        "Show me the bestsellers report by {{period}} from {{from}} to {{to}}",
        "nav",
        ("url_match",),
        _report_nav_instances,
        lambda i: url_eval(
            f"{ADMIN}/admin/reports/report_sales/bestsellers/?filter=1&period_type="
            f"{i.values['period']}&from={i.values['from']}&to={i.values['to']}"
        ),
        lambda i: [
            *_report("Bestsellers", i.values["period"].title(), i.values["from"], i.values["to"]),
            Answer(),
        ],
        start_path=HOME,
        held_out=True,
    ),
]

TEMPLATES = STATE + NAV
