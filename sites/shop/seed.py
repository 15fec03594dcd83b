"""Deterministic seed of the shop database (storefront + admin share it).

Volume: 5 top categories x 4 subcategories, ~520 products, 200 customers (customer 1 is the default user
emma.lopez@gmail.com), 1000 orders over 2022-2023, ~2000 reviews, addresses, wishlists, 3 admin users.
Everything comes from random.Random(SEED) and fixed dates, so the same code gives the same rows.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

from sites.auth import hash_password
from sites.core import slugify
from sites.shop import catalog_data as cd

SEED = 20240817
SCHEMA_PATH = Path(__file__).with_name("schema.sql")
DEFAULT_CUSTOMER = ("emma.lopez@gmail.com", "Password.123")
ADMIN_USER = ("admin", "admin1234")
N_CUSTOMERS = 200
N_ORDERS = 1000
START, END = datetime(2022, 1, 1), datetime(2023, 12, 31, 23, 59, 59)
STATUS_WEIGHTS = {"complete": 55, "processing": 12, "pending": 15, "canceled": 18}
SHIPPING_PER_ITEM = 5.0


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def _rand_time(rng: random.Random, start: datetime, end: datetime) -> datetime:
    return start + timedelta(seconds=rng.randrange(int((end - start).total_seconds())))


def seed(db_path: Path) -> None:
    rng = random.Random(SEED)
    conn = sqlite3.connect(db_path)
    conn.executescript(SCHEMA_PATH.read_text())
    products = _seed_catalog(conn, rng)
    customers = _seed_customers(conn, rng)
    _seed_orders(conn, rng, products, customers)
    _seed_reviews(conn, rng, products, customers)
    _seed_wishlists(conn, rng, products, customers)
    _seed_admins(conn)
    conn.commit()
    conn.execute("VACUUM")
    conn.close()


def _seed_catalog(conn: sqlite3.Connection, rng: random.Random) -> list[tuple[int, str, str, float]]:
    products: list[tuple[int, str, str, float]] = []  # (id, sku, name, price)
    cat_id = 0
    used: set[str] = set()
    for top_pos, (top, subs) in enumerate(cd.CATALOG.items()):
        cat_id += 1
        top_id, top_slug = cat_id, slugify(top)
        conn.execute("INSERT INTO category VALUES (?,?,?,?,?)", (top_id, top, top_slug, None, top_pos))
        for sub_pos, (sub, (nouns, (lo, hi))) in enumerate(subs.items()):
            cat_id += 1
            conn.execute(
                "INSERT INTO category VALUES (?,?,?,?,?)",
                (cat_id, sub, f"{top_slug}/{slugify(sub)}", top_id, sub_pos),
            )
            for _ in range(26):
                name = _product_name(rng, nouns, used)
                pid = len(products) + 1
                sku = f"{''.join(w[0] for w in sub.split() if w[0].isalpha()).upper()}-{pid:04d}-{rng.randrange(100, 999)}"
                price = (
                    round(rng.uniform(lo, hi), 0) - 0.01
                    if rng.random() < 0.6
                    else round(rng.uniform(lo, hi), 2)
                )
                f1, f2 = rng.sample(cd.FEATURES, 2)
                desc = f"The {name} is built for everyday use in {sub.lower()}. It features {f1} and {f2}."
                created = _rand_time(rng, datetime(2021, 1, 1), datetime(2021, 12, 31))
                qty = (
                    rng.choice([0, 5, 12, 25, 40, 60, 100, 150])
                    if rng.random() < 0.9
                    else rng.randrange(1, 5)
                )
                status = 2 if rng.random() < 0.04 else 1
                conn.execute(
                    "INSERT INTO product VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (pid, sku, name, slugify(name), cat_id, round(price, 2), qty, status, desc, _ts(created)),
                )
                products.append((pid, sku, name, round(price, 2)))
    return products


def _product_name(rng: random.Random, nouns: list[str], used: set[str]) -> str:
    while True:
        name = f"{rng.choice(cd.BRANDS)} {rng.choice(cd.ADJECTIVES)} {rng.choice(nouns)}"
        if rng.random() < 0.5:
            name += f", {rng.choice(cd.COLORS)}"
        if slugify(name) not in used:
            used.add(slugify(name))
            return name


def _seed_customers(conn: sqlite3.Connection, rng: random.Random) -> list[int]:
    emails: set[str] = set()
    for cid in range(1, N_CUSTOMERS + 1):
        if cid == 1:
            first, last, email, pw = "Emma", "Lopez", DEFAULT_CUSTOMER[0], DEFAULT_CUSTOMER[1]
        else:
            first, last = rng.choice(cd.FIRST_NAMES), rng.choice(cd.LAST_NAMES)
            email = f"{first}.{last}@{rng.choice(cd.EMAIL_DOMAINS)}".lower()
            n = 2
            while email in emails:
                email = f"{first}.{last}{n}@{rng.choice(cd.EMAIL_DOMAINS)}".lower()
                n += 1
            pw = f"{first}{rng.randrange(1000, 9999)}!"
        emails.add(email)
        phone = f"{rng.randrange(200, 999)}-{rng.randrange(200, 999)}-{rng.randrange(1000, 9999)}"
        created = _rand_time(rng, datetime(2021, 1, 1), datetime(2021, 12, 31))
        conn.execute(
            "INSERT INTO customer VALUES (?,?,?,?,?,?,?)",
            (cid, email, first, last, hash_password(pw, f"c{cid}"), phone, _ts(created)),
        )
        for k in range(2 if cid == 1 else 1):
            city, region, zip3 = rng.choice(cd.CITIES)
            street = f"{rng.randrange(10, 9999)} {rng.choice(cd.STREETS)}"
            conn.execute(
                "INSERT INTO address (customer_id, firstname, lastname, street, city, region, postcode,"
                " country, telephone, is_default) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    cid,
                    first,
                    last,
                    street,
                    city,
                    region,
                    f"{zip3}{rng.randrange(10, 99)}",
                    "United States",
                    phone,
                    int(k == 0),
                ),
            )
    return list(range(1, N_CUSTOMERS + 1))


def _seed_orders(conn: sqlite3.Connection, rng: random.Random, products: list, customers: list[int]) -> None:
    # The default customer gets a long history (pagination on "My Orders"); the rest share the remainder.
    buyers = [1] * 26 + [rng.choice(customers[1:]) for _ in range(N_ORDERS - 26)]
    dates = sorted(_rand_time(rng, START, END) for _ in range(N_ORDERS))
    rng.shuffle(buyers)
    statuses, weights = list(STATUS_WEIGHTS), list(STATUS_WEIGHTS.values())
    for oid, (cid, when) in enumerate(zip(buyers, dates, strict=True), start=1):
        items = rng.sample(products, rng.choice([1, 1, 1, 2, 2, 3, 4]))
        lines = [(p, rng.choice([1, 1, 1, 2, 3])) for p in items]
        subtotal = round(sum(p[3] * q for p, q in lines), 2)
        shipping = SHIPPING_PER_ITEM * sum(q for _, q in lines)
        status = rng.choices(statuses, weights)[0]
        if when > END - timedelta(days=20) and status == "complete":
            status = "processing"  # recent orders have not all shipped yet
        addr = conn.execute("SELECT * FROM address WHERE customer_id=? AND is_default=1", (cid,)).fetchone()
        conn.execute(
            "INSERT INTO sales_order VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                oid,
                f"{oid:09d}",
                cid,
                status,
                _ts(when),
                subtotal,
                shipping,
                round(subtotal + shipping, 2),
                f"{addr[2]} {addr[3]}",
                addr[4],
                addr[5],
                addr[6],
                addr[7],
                addr[8],
                "Check / Money order",
                "Flat Rate - Fixed",
            ),
        )
        for p, q in lines:
            conn.execute(
                "INSERT INTO order_item (order_id, product_id, sku, name, price, qty) VALUES (?,?,?,?,?,?)",
                (oid, p[0], p[1], p[2], p[3], q),
            )
        conn.execute(
            "INSERT INTO order_status_history (order_id, status, comment, created_at) VALUES (?,?,?,?)",
            (oid, "pending", "Order placed.", _ts(when)),
        )
        if status != "pending":
            conn.execute(
                "INSERT INTO order_status_history (order_id, status, comment, created_at) VALUES (?,?,?,?)",
                (oid, status, "", _ts(when + timedelta(days=rng.randrange(1, 6)))),
            )


def _seed_reviews(conn: sqlite3.Connection, rng: random.Random, products: list, customers: list[int]) -> None:
    names = {r[0]: r[1] for r in conn.execute("SELECT id, firstname FROM customer")}
    for pid, *_ in products:
        for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 6, 8])):
            rating = rng.choices([1, 2, 3, 4, 5], [6, 8, 14, 32, 40])[0]
            cid = rng.choice(customers) if rng.random() < 0.7 else None
            nickname = names[cid] if cid else f"{rng.choice(cd.FIRST_NAMES)}{rng.randrange(1, 99)}"
            status = "approved" if rng.random() < 0.93 else "pending"
            conn.execute(
                "INSERT INTO review (product_id, customer_id, nickname, title, detail, rating, status,"
                " created_at) VALUES (?,?,?,?,?,?,?,?)",
                (
                    pid,
                    cid,
                    nickname,
                    rng.choice(cd.REVIEW_TITLES[rating]),
                    rng.choice(cd.REVIEW_BODIES[rating]),
                    rating,
                    status,
                    _ts(_rand_time(rng, datetime(2021, 6, 1), END)),
                ),
            )


def _seed_wishlists(
    conn: sqlite3.Connection, rng: random.Random, products: list, customers: list[int]
) -> None:
    for cid in customers:
        n = 4 if cid == 1 else rng.choice([0, 0, 0, 1, 2, 3])
        for p in rng.sample(products, n):
            conn.execute(
                "INSERT INTO wishlist_item (customer_id, product_id, added_at) VALUES (?,?,?)",
                (cid, p[0], _ts(_rand_time(rng, START, END))),
            )


def _seed_admins(conn: sqlite3.Connection) -> None:
    for i, (user, pw, first, last) in enumerate(
        [
            (*ADMIN_USER, "Admin", "User"),
            ("jsmith", "Store2023!", "Jane", "Smith"),
            ("mchen", "Catalog#42", "Ming", "Chen"),
        ],
        start=1,
    ):
        conn.execute(
            "INSERT INTO admin_user VALUES (?,?,?,?,?,?)",
            (i, user, hash_password(pw, f"a{i}"), first, last, f"{user}@onestopshop.example"),
        )
