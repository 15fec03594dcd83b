"""Task templates of the shop admin (site `shopping_admin`, template ids 200-299) and their expert scripts.

The admin reads the same database as the storefront. Reports count every order except canceled ones (as
`sites.shop.queries` does). Held-out templates (all instances in the test split): 206, 226, 244.
"""

from __future__ import annotations

import calendar
import random
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sites.shop import queries as Q
from sites.tasks.base import Instance, SeedData, Template, html_eval, pick, string_eval, target, url_eval
from sites.tasks.steps import Answer, Choose, Click, Fill, M

ADMIN = "__SHOPPING_ADMIN__"
HOME = "/admin/"
STATUS_LABELS = {"pending": "Pending", "processing": "Processing", "complete": "Complete", "canceled": "Canceled",
                 "holded": "On Hold"}
MONTHS = [(y, m) for y in (2022, 2023) for m in range(1, 13)]
STATUS_JS = "document.querySelector('#order_status').outerText"
PRICE_JS = "document.querySelector('[name=\"product[price]\"]').value"
QTY_JS = "document.querySelector('[name=\"product[quantity_and_stock_status][qty]\"]').value"
PHONE_JS = "document.querySelector('[name=\"customer[telephone]\"]').value"
# The check reads the saved value, not unsaved typing: reset the form to what the server rendered first.
RESET_FORM = "document.querySelector('#product_form').reset()"
COMMENTS = ["Customer asked to leave the parcel at the back door.", "Gift wrap requested by phone.",
            "Called the customer to confirm the shipping address.", "Expedite: replacement for a damaged item.",
            "Customer will pick up the order in person.", "Hold shipment until the customer confirms."]


def inst(tid: int, rows: list[dict[str, Any]]) -> list[Instance]:
    return [Instance(tid, i, r["values"], r.get("data", {})) for i, r in enumerate(rows)]


def _month(y: int, m: int) -> dict[str, str]:
    last = calendar.monthrange(y, m)[1]
    return {"name": f"{calendar.month_name[m]} {y}", "from": f"{y}-{m:02d}-01", "to": f"{y}-{m:02d}-{last}",
            "us_from": f"{m:02d}/01/{y}", "us_to": f"{m:02d}/{last}/{y}"}


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
    return [Click(M("a", "Catalog"), why="open the product catalog"),
            Fill(M("input", name="search"), name, enter=True, why=f"search the catalog for {name}"),
            Click(M("a", "Edit"), after=M("td", name), why=f"open the edit page of {name}")]


def _to_customer(name: str, edit: bool = True) -> list[Any]:
    steps: list[Any] = [Click(M("a", "Customers"), why="open the customer grid"),
                        Fill(M("input", name="search"), name, enter=True, why=f"search for {name}")]
    if edit:
        steps.append(Click(M("a", "Edit"), after=M("td", name), why=f"open the profile of {name}"))
    return steps


def _to_order(inc: str, view: bool = True) -> list[Any]:
    steps: list[Any] = [Click(M("a", "Sales"), why="open the orders grid"),
                        Fill(M("input", name="search"), inc, enter=True, why=f"search for order {inc}")]
    if view:
        steps.append(Click(M("a", "View"), after=M("td", inc), why=f"open order #{inc}"))
    return steps


def _filter_orders(status: str, month: dict[str, str]) -> list[Any]:
    return [Click(M("a", "Sales"), why="open the orders grid"),
            Choose(M("select", name="status"), STATUS_LABELS[status], why=f"only {status} orders"),
            Fill(M("input", name="from"), month["from"], why="from the first day of the month"),
            Fill(M("input", name="to"), month["to"], why="to the last day of the month"),
            Click(M("button", "Apply Filters"), why="apply the filters")]


def _report(link: str, period: str, us_from: str, us_to: str) -> list[Any]:
    return [Click(M("a", link), why=f"open the {link} report"),
            Choose(M("select", name="period_type"), period, why=f"group by {period.lower()}"),
            Fill(M("input", name="from"), us_from, why="set the start date"),
            Fill(M("input", name="to"), us_to, why="set the end date"),
            Click(M("button", "Show Report"), why="show the report")]


def _edit_url(pid: int) -> str:
    return f"{ADMIN}/admin/catalog/product/edit/id/{pid}/"


# -- information seeking ------------------------------------------------------------------------------------------
def _order_count_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    combos = [(s, ym) for s in ("pending", "processing", "complete", "canceled") for ym in MONTHS]
    for status, (y, m) in pick(combos, 12, 201):
        mo = _month(y, m)
        n = conn.execute("SELECT COUNT(*) FROM sales_order WHERE status=? AND date(created_at) BETWEEN ? AND ?",
                         (status, mo["from"], mo["to"])).fetchone()[0]
        out.append({"values": {"status": status, "month": mo["name"]}, "data": {"month": mo, "count": n}})
    return inst(201, out)


def _bestseller_instances(db: SeedData) -> list[Instance]:
    conn, out, rng = db.conn("shop"), [], random.Random(202)
    for y, m in MONTHS:
        mo, n = _month(y, m), rng.choice([1, 2, 3])
        rows = Q.bestsellers(conn, "month", mo["from"], mo["to"], top=10)
        if len(rows) > n and rows[n - 1]["qty"] > rows[n]["qty"]:
            out.append({"values": {"n": n, "month": mo["name"]},
                        "data": {"month": mo, "names": [r["name"] for r in rows[:n]]}})
    return inst(202, pick(out, 12, 202))


def _items_sold_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for y, m in pick(MONTHS, 12, 203):
        mo = _month(y, m)
        rows = Q.sales_totals(conn, "month", mo["from"], mo["to"])
        out.append({"values": {"month": mo["name"]}, "data": {"month": mo, "items": rows[0]["items"] if rows else 0}})
    return inst(203, out)


def _stock_instances(db: SeedData) -> list[Instance]:
    return inst(204, [{"values": {"product": p["name"]}, "data": {"qty": p["qty"]}}
                      for p in pick(_grid_products(db), 12, 204)])


def _phone_instances(db: SeedData) -> list[Instance]:
    return inst(205, [{"values": {"name": f"{c['firstname']} {c['lastname']}"}, "data": {"phone": c["telephone"]}}
                      for c in pick(_unique_customers(db), 12, 205)])


def _orders(db: SeedData, statuses: tuple[str, ...] | None = None) -> list[Any]:
    rows = db.conn("shop").execute("SELECT o.*, c.firstname, c.lastname FROM sales_order o JOIN customer c "
                                   "ON c.id=o.customer_id ORDER BY o.id").fetchall()
    return [r for r in rows if statuses is None or r["status"] in statuses]


def _who_instances(db: SeedData) -> list[Instance]:
    return inst(206, [{"values": {"increment_id": o["increment_id"]},
                       "data": {"name": f"{o['firstname']} {o['lastname']}"}} for o in pick(_orders(db), 12, 206)])


def _review_count_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for status in ("pending", "approved"):
        for stars in range(1, 6):
            n = conn.execute("SELECT COUNT(*) FROM review WHERE status=? AND rating=?", (status, stars)).fetchone()[0]
            out.append({"values": {"status": status, "stars": stars}, "data": {"count": n}})
    return inst(207, out)


def _address_instances(db: SeedData) -> list[Instance]:
    return inst(208, [{"values": {"increment_id": o["increment_id"]},
                       "data": {"address": f"{o['ship_street']}, {o['ship_city']}, {o['ship_region']} "
                                           f"{o['ship_postcode']}"}} for o in pick(_orders(db), 4, 208)])


INFO = [
    Template(201, "shopping_admin", "How many {{status}} orders were placed in {{month}}?", "info",
             ("string_match",), _order_count_instances, lambda i: string_eval(exact=str(i.data["count"])),
             lambda i: [*_filter_orders(i.values["status"], i.data["month"]), Answer(str(i.data["count"]))],
             start_path=HOME),
    Template(202, "shopping_admin", "What were the top {{n}} best-selling products in {{month}}?", "info",
             ("string_match",), _bestseller_instances, lambda i: string_eval(include=i.data["names"]),
             lambda i: [*_report("Bestsellers", "Month", i.data["month"]["us_from"], i.data["month"]["us_to"]),
                        Answer("; ".join(i.data["names"]))], start_path=HOME),
    Template(203, "shopping_admin", "According to the sales report, how many items were sold in {{month}}?", "info",
             ("string_match",), _items_sold_instances, lambda i: string_eval(exact=str(i.data["items"])),
             lambda i: [*_report("Sales Report", "Month", i.data["month"]["us_from"], i.data["month"]["us_to"]),
                        Answer(str(i.data["items"]))], start_path=HOME),
    Template(204, "shopping_admin", "How many units of {{product}} are in stock?", "info", ("string_match",),
             _stock_instances, lambda i: string_eval(exact=str(i.data["qty"])),
             lambda i: [*_to_product(i.values["product"]), Answer(str(i.data["qty"]))], start_path=HOME),
    Template(205, "shopping_admin", "What is the phone number of the customer {{name}}?", "info", ("string_match",),
             _phone_instances, lambda i: string_eval(include=[i.data["phone"]]),
             lambda i: [*_to_customer(i.values["name"], edit=False), Answer(i.data["phone"])], start_path=HOME),
    Template(206, "shopping_admin", "Who placed order #{{increment_id}}?", "info", ("string_match",),
             _who_instances, lambda i: string_eval(include=[i.data["name"]]),
             lambda i: [*_to_order(i.values["increment_id"], view=False), Answer(i.data["name"])],
             start_path=HOME, held_out=True),
    Template(207, "shopping_admin", "How many {{status}} reviews have a rating of {{stars}} out of 5 stars?", "info", ("string_match",),
             _review_count_instances, lambda i: string_eval(exact=str(i.data["count"])),
             lambda i: [Click(M("a", "Reviews"), why="open the reviews grid"),
                        Choose(M("select", name="status"), i.values["status"].title(), why="filter by status"),
                        Choose(M("select", name="rating"), str(i.values["stars"]), why="filter by rating"),
                        Click(M("button", "Search"), why="apply the filters"), Answer(str(i.data["count"]))],
             start_path=HOME),
    Template(208, "shopping_admin", "What is the shipping address of order #{{increment_id}}?", "info",
             ("string_match",), _address_instances, lambda i: string_eval(fuzzy=[i.data["address"]]),
             lambda i: [*_to_order(i.values["increment_id"]), Answer(i.data["address"])], start_path=HOME),
]


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
    return inst(223, [{"values": {"product": p["name"]}, "data": {"pid": p["id"]}} for p in pick(rows, 12, 223)])


def _stock_set_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(224), []
    for p in pick(_grid_products(db), 12, 224):
        qty = rng.choice([q for q in (0, 15, 30, 75, 120, 200) if q != p["qty"]])
        out.append({"values": {"product": p["name"], "qty": qty}, "data": {"pid": p["id"]}})
    return inst(224, out)


def _order_action_instances(tid: int, db: SeedData) -> list[Instance]:
    return inst(tid, [{"values": {"increment_id": o["increment_id"]}, "data": {"order_id": o["id"]}}
                      for o in pick(_orders(db, ("pending", "processing")), 12, tid)])


def _comment_instances(db: SeedData) -> list[Instance]:
    rng = random.Random(227)
    return inst(227, [{"values": {"comment": rng.choice(COMMENTS), "increment_id": o["increment_id"]},
                       "data": {"order_id": o["id"]}} for o in pick(_orders(db), 12, 227)])


def _approve_instances(db: SeedData) -> list[Instance]:
    conn, out = db.conn("shop"), []
    for r in conn.execute("SELECT r.*, p.sku FROM review r JOIN product p ON p.id=r.product_id "
                          "WHERE r.status='pending' ORDER BY r.id").fetchall():
        same = conn.execute("SELECT COUNT(*) FROM review WHERE product_id=? AND nickname=?",
                            (r["product_id"], r["nickname"])).fetchone()[0]
        if same == 1:
            out.append({"values": {"nickname": r["nickname"], "sku": r["sku"]}, "data": {"review_id": r["id"]}})
    return inst(228, pick(out, 12, 228))


def _phone_update_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(229), []
    for c in pick(_unique_customers(db), 12, 229):
        phone = f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}"
        out.append({"values": {"name": f"{c['firstname']} {c['lastname']}", "phone": phone},
                    "data": {"cid": c["id"]}})
    return inst(229, out)


def _review_row_js(review_id: int) -> str:
    return ("[...document.querySelectorAll('#reviwGrid_table tr.data-row')]"
            f".find(r => r.cells[0].innerText.trim() === '{review_id}').cells[2].innerText")


def _order_url(i: Instance) -> str:
    return f"{ADMIN}/admin/sales/order/view/order_id/{i.data['order_id']}/"


def _order_button(label: str) -> Any:
    return lambda i: [*_to_order(i.values["increment_id"]),
                      Click(M("button", label), why=f"{label.lower()} the order"), Answer()]


STATE = [
    Template(221, "shopping_admin", "Change the price of {{product}} to ${{price}}", "state", ("program_html",),
             _set_price_instances,
             lambda i: html_eval(target(_edit_url(i.data["pid"]), PRICE_JS, exact=i.values["price"])),
             lambda i: [*_to_product(i.values["product"]),
                        Fill(M("input", **{"name": "product[price]"}), i.values["price"], why="enter the new price"),
                        Click(M("button", "Save"), why="save the product"), Answer()], start_path=HOME),
    Template(222, "shopping_admin", "{{action}} the price of this product by {{pct}}%", "state", ("program_html",),
             _adjust_instances,
             lambda i: html_eval(target(_edit_url(i.data["pid"]), PRICE_JS, exact=i.data["price"])),
             lambda i: [Fill(M("input", **{"name": "product[price]"}), i.data["price"],
                             why=f"the price {i.values['action'].lower()}d by {i.values['pct']}% is {i.data['price']}"),
                        Click(M("button", "Save"), why="save the product"), Answer()],
             start_path=lambda i: f"/admin/catalog/product/edit/id/{i.data['pid']}/"),
    Template(223, "shopping_admin", "Disable the product {{product}}", "state", ("program_html",), _disable_instances,
             lambda i: html_eval(target(_edit_url(i.data["pid"]),
                                        "document.querySelector('[name=\"product[status]\"]').value", exact="2")),
             lambda i: [*_to_product(i.values["product"]),
                        Choose(M("select", **{"name": "product[status]"}), "Disabled", why="disable it"),
                        Click(M("button", "Save"), why="save the product"), Answer()], start_path=HOME),
    Template(224, "shopping_admin", "Set the stock quantity of {{product}} to {{qty}}", "state", ("program_html",),
             _stock_set_instances,
             lambda i: html_eval(target("last", QTY_JS, exact=str(i.values["qty"]), prep=[RESET_FORM])),
             lambda i: [*_to_product(i.values["product"]),
                        Fill(M("input", **{"name": "product[quantity_and_stock_status][qty]"}), str(i.values["qty"]),
                             why="enter the new quantity"),
                        Click(M("button", "Save"), why="save the product"), Answer()], start_path=HOME),
    Template(225, "shopping_admin", "Cancel order #{{increment_id}}", "state", ("program_html",),
             lambda db: _order_action_instances(225, db),
             lambda i: html_eval(target(_order_url(i), STATUS_JS, exact="Canceled")), _order_button("Cancel"),
             start_path=HOME),
    Template(226, "shopping_admin", "Put order #{{increment_id}} on hold", "state", ("program_html",),
             lambda db: _order_action_instances(226, db),
             lambda i: html_eval(target(_order_url(i), STATUS_JS, exact="On Hold")), _order_button("Hold"),
             start_path=HOME, held_out=True),
    Template(227, "shopping_admin", 'Add the comment "{{comment}}" to order #{{increment_id}}', "state",
             ("url_match", "program_html"), _comment_instances,
             lambda i: html_eval(target("last", "document.querySelector('.note-list').outerText",
                                        include=[i.values["comment"]]), reference_url=_order_url(i)),
             lambda i: [*_to_order(i.values["increment_id"]),
                        Fill(M("textarea", **{"name": "history[comment]"}), i.values["comment"], why="write it"),
                        Click(M("button", "Submit Comment"), why="submit the comment"), Answer()], start_path=HOME),
    Template(228, "shopping_admin", "Approve the pending review that {{nickname}} wrote for the product with SKU "
             "{{sku}}", "state", ("program_html",), _approve_instances,
             lambda i: html_eval(target(f"{ADMIN}/admin/review/product/?sku={i.values['sku']}",
                                        _review_row_js(i.data["review_id"]), exact="Approved")),
             lambda i: [Click(M("a", "Reviews"), why="open the reviews grid"),
                        Fill(M("input", name="sku"), i.values["sku"], why="filter by the SKU"),
                        Choose(M("select", name="status"), "Pending", why="only pending reviews"),
                        Click(M("button", "Search"), why="apply the filters"),
                        Click(M("button", "Approve"), after=M("td", i.values["nickname"]),
                              why=f"approve the review by {i.values['nickname']}"), Answer()], start_path=HOME),
    Template(229, "shopping_admin", "Update the phone number of customer {{name}} to {{phone}}", "state",
             ("program_html",), _phone_update_instances,
             lambda i: html_eval(target(f"{ADMIN}/admin/customer/index/edit/id/{i.data['cid']}/", PHONE_JS,
                                        exact=i.values["phone"])),
             lambda i: [*_to_customer(i.values["name"]),
                        Fill(M("input", **{"name": "customer[telephone]"}), i.values["phone"], why="enter the number"),
                        Click(M("button", "Save Customer"), why="save the customer"), Answer()], start_path=HOME),
]


# -- navigation -----------------------------------------------------------------------------------------------------
def _orders_nav_instances(db: SeedData) -> list[Instance]:
    combos = [(s, ym) for s in ("pending", "processing", "complete", "canceled") for ym in MONTHS]
    return inst(241, [{"values": {"status": s, "month": _month(*ym)["name"]}, "data": {"month": _month(*ym)}}
                      for s, ym in pick(combos, 12, 241)])


def _report_nav_instances(db: SeedData) -> list[Instance]:
    rng, out = random.Random(244), []
    for y, m in pick([ym for ym in MONTHS if ym[1] <= 10], 12, 244):
        end = _month(y, m + 2)  # a quarter
        out.append({"values": {"period": rng.choice(["day", "month", "year"]), "from": f"{m:02d}/01/{y}",
                               "to": end["us_to"]}})
    return inst(244, out)


NAV = [
    Template(241, "shopping_admin", "Show me the {{status}} orders placed in {{month}}", "nav", ("url_match",),
             _orders_nav_instances,
             lambda i: url_eval(f"{ADMIN}/admin/sales/order/?status={i.values['status']}"
                                f"&from={i.data['month']['from']}&to={i.data['month']['to']}"),
             lambda i: [*_filter_orders(i.values["status"], i.data["month"]), Answer()], start_path=HOME),
    Template(242, "shopping_admin", "Open the edit page of the product {{product}}", "nav", ("url_match",),
             lambda db: inst(242, [{"values": {"product": p["name"]}, "data": {"pid": p["id"]}}
                                   for p in pick(_grid_products(db), 12, 242)]),
             lambda i: url_eval(_edit_url(i.data["pid"])),
             lambda i: [*_to_product(i.values["product"]), Answer()], start_path=HOME),
    Template(243, "shopping_admin", "Open the customer profile of {{name}}", "nav", ("url_match",),
             lambda db: inst(243, [{"values": {"name": f"{c['firstname']} {c['lastname']}"}, "data": {"cid": c["id"]}}
                                   for c in pick(_unique_customers(db), 12, 243)]),
             lambda i: url_eval(f"{ADMIN}/admin/customer/index/edit/id/{i.data['cid']}/"),
             lambda i: [*_to_customer(i.values["name"]), Answer()], start_path=HOME),
    Template(244, "shopping_admin", "Show me the bestsellers report by {{period}} from {{from}} to {{to}}", "nav",
             ("url_match",), _report_nav_instances,
             lambda i: url_eval(f"{ADMIN}/admin/reports/report_sales/bestsellers/?filter=1&period_type="
                                f"{i.values['period']}&from={i.values['from']}&to={i.values['to']}"),
             lambda i: [*_report("Bestsellers", i.values["period"].title(), i.values["from"], i.values["to"]),
                        Answer()], start_path=HOME, held_out=True),
]

TEMPLATES = INFO + STATE + NAV
