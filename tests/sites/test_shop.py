"""The shop (storefront + admin on one database) in real Chromium: search, product, cart, checkout, order history,
admin order and price edits; 4 rollouts of the same write task in parallel stay isolated; the default stays
read-only and the seed file never changes; queries.py agrees with the pages; storage states log in."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sqlite3

import httpx
import pytest
from page_forms import asubmit
from prometheus_client.parser import text_string_to_metric_families

from common.chromium import CHROMIUM_ARGS, chromium_executable
from common.sites import SANDBOX_COOKIE
from sites.server import SiteServer
from sites.shop import queries as Q
from sites.shop.seed import N_ORDERS, seed


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    srv = SiteServer(
        base_port=0, data_dir=tmp_path_factory.mktemp("shopdata"), sites=["shopping", "shopping_admin"]
    )
    srv.start()
    yield srv
    srv.stop()


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run_in_chromium(fn):
    """Runs `await fn(browser)` with a fresh headless Chromium (async API: rollouts really run concurrently)."""
    from playwright.async_api import async_playwright

    async def main():
        async with async_playwright() as p:
            browser = await p.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
            try:
                return await fn(browser)
            finally:
                await browser.close()

    return asyncio.run(main())


async def _context(browser, srv: SiteServer, site: str, token: str | None):
    ctx = await browser.new_context(storage_state=str(srv.storage_state_path(site)))
    if token:
        await ctx.add_cookies([srv.sandbox_cookie(token)])
    ctx.set_default_timeout(15_000)
    return ctx


def test_health_storage_states_and_unknown_token(shop):
    for site in ("shopping", "shopping_admin"):
        assert httpx.get(shop.urls[site] + "/__health__").json()["ok"] is True
        state = json.loads(shop.storage_state_path(site).read_text())
        cookies = {c["name"]: c["value"] for c in state["cookies"]}
        assert list(cookies) == [f"{site}_session"]
        page = "/customer/account/" if site == "shopping" else "/admin/"
        resp = httpx.get(shop.urls[site] + page, cookies=cookies)
        assert resp.status_code == 200 and ("Emma Lopez" in resp.text or "Lifetime Sales" in resp.text)
    resp = httpx.get(shop.urls["shopping"] + "/", cookies={SANDBOX_COOKIE: "x" * 22})
    assert resp.status_code == 403 and "Unknown sandbox" in resp.text
    assert httpx.get(shop.urls["shopping"] + "/checkout/cart/", follow_redirects=False).status_code == 302


def test_main_flows_in_chromium(shop):
    shop_url, admin_url = shop.urls["shopping"], shop.urls["shopping_admin"]
    token = shop.new_sandbox()

    async def flow(browser):
        page = await (await _context(browser, shop, "shopping", token)).new_page()
        await page.goto(shop_url + "/")
        await page.fill("#search", "wireless headphones")
        await asubmit(page, "#search", key="Enter")
        await page.select_option("#sorter", "price")
        await asubmit(page, ".sorter button")
        assert "order=price" in page.url
        prices = [
            float(t.strip("$").replace(",", ""))
            for t in await page.locator(".product-items .price").all_inner_texts()
        ]
        assert prices == sorted(prices) and len(prices) > 1
        await asubmit(page, page.locator("a.product-item-link").first)
        sku = (await page.inner_text(".product.attribute.sku .value")).strip()
        await page.fill("#qty", "2")
        await asubmit(page, "#product-addtocart-button")
        assert "You added" in await page.inner_text(".messages")
        # A review, then the admin's JSON helper reports it as the latest one for this SKU.
        await page.check("#Rating_4")
        await page.fill("#nickname_field", "Tester")
        await page.fill("#summary_field", "Nice")
        await page.fill("#review_field", "Works for me")
        await asubmit(page, "#review-form button[type=submit]")
        latest = await page.context.request.get(f"{admin_url}/__api__/reviews/latest?sku={sku}")
        data = await latest.json()
        assert (data["author"], data["rating"]) == ("Tester", 4)

        await asubmit(page, "a.showcart")
        price = float(
            (await page.inner_text("#shopping-cart-table .col.price .price")).strip("$").replace(",", "")
        )
        await page.locator("#shopping-cart-table input.qty").fill("3")
        await asubmit(page, "button.update")
        assert f"${price * 3:,.2f}".replace(",", "") in (await page.inner_text(".cart-summary")).replace(
            ",", ""
        )
        await asubmit(page, "a.checkout")
        await asubmit(page, "button.checkout")
        await asubmit(page, "a.order-number")
        assert sku in await page.inner_text(".order-details-items.ordered")
        assert "Ordered: 3" in await page.inner_text(".order-details-items.ordered")
        order_url = page.url
        api = await (await page.context.request.get(shop_url + "/__api__/orders/latest")).json()
        assert api["url"] == order_url and api["order_id"] == N_ORDERS + 1
        await page.goto(shop_url + "/sales/order/history/")
        assert f"{N_ORDERS + 1:09d}" in await page.inner_text("#my-orders-table tbody tr >> nth=0")

        admin = await (await _context(browser, shop, "shopping_admin", token)).new_page()
        await admin.goto(f"{admin_url}/admin/sales/order/?search={N_ORDERS + 1:09d}")
        assert "Pending" in await admin.inner_text("#sales_order_grid tbody")
        await asubmit(admin, "#sales_order_grid a.action-menu-item")
        await asubmit(admin, "#order-view-cancel-button")
        assert await admin.inner_text("#order_status") == "Canceled"
        pid = Q.product_by_sku(Q.open_db(shop.store.db_path(token, "shop")), sku)["id"]
        await admin.goto(f"{admin_url}/admin/catalog/product/edit/id/{pid}/")
        await admin.fill('[name="product[price]"]', "12.34")
        await asubmit(admin, "#save-button")
        assert "You saved the product." in await admin.inner_text(".messages")
        await page.goto(f"{shop_url}/catalogsearch/result/?q={sku}")
        assert "$12.34" in await page.inner_text(".product-items")

    _run_in_chromium(flow)


def test_parallel_rollouts_are_isolated_and_default_is_read_only(shop):
    seed_file = shop.store.seeds["shop"]
    seed_hash = _sha(seed_file)
    url, admin_url = shop.urls["shopping"], shop.urls["shopping_admin"]
    prod = Q.product(Q.open_db(seed_file), 7)
    tokens = [shop.new_sandbox() for _ in range(4)]

    async def rollout(browser, i: int, token: str) -> dict:
        page = await (await _context(browser, shop, "shopping", token)).new_page()
        await page.goto(f"{url}/{prod['slug']}.html")
        await page.fill("#qty", str(i + 1))
        await asubmit(page, "#product-addtocart-button")
        await page.goto(url + "/checkout/")
        await asubmit(page, "button.checkout")
        admin = await (await _context(browser, shop, "shopping_admin", token)).new_page()
        await admin.goto(f"{admin_url}/admin/catalog/product/edit/id/{prod['id']}/")
        await admin.fill('[name="product[price]"]', f"{10 + i}.50")
        await asubmit(admin, "#save-button")
        api = await (await page.context.request.get(url + "/__api__/orders/latest")).json()
        await page.goto(api["url"])
        ordered = await page.inner_text(".order-details-items.ordered")
        await page.goto(f"{url}/{prod['slug']}.html")
        return {
            "order_id": api["order_id"],
            "ordered": ordered,
            "price": await page.inner_text(".product-info-price .price"),
        }

    async def all_rollouts(browser):
        results = await asyncio.gather(*(rollout(browser, i, t) for i, t in enumerate(tokens)))
        default = await (await _context(browser, shop, "shopping", None)).new_page()
        await default.goto(f"{url}/{prod['slug']}.html")
        resp_text = await _click_and_text(default, "#product-addtocart-button")
        default_price = await (await default.context.request.get(f"{url}/{prod['slug']}.html")).text()
        latest = await (await default.context.request.get(url + "/__api__/orders/latest")).json()
        return results, resp_text, default_price, latest

    results, denied, default_page, default_latest = _run_in_chromium(all_rollouts)
    for i, r in enumerate(results):
        assert r["order_id"] == N_ORDERS + 1  # every sandbox has exactly one new order: its own
        assert f"Ordered: {i + 1}" in r["ordered"] and prod["sku"] in r["ordered"]
        assert r["price"] == f"${10 + i}.50"
        conn = Q.open_db(shop.store.db_path(tokens[i], "shop"))
        assert conn.execute("SELECT COUNT(*) FROM sales_order").fetchone()[0] == N_ORDERS + 1
    assert "read-only default; open a sandbox" in denied
    assert f"${prod['price']:.2f}" in default_page
    assert default_latest["order_id"] < N_ORDERS + 1
    assert _sha(seed_file) == seed_hash
    assert Q.open_db(seed_file).execute("SELECT COUNT(*) FROM sales_order").fetchone()[0] == N_ORDERS


async def _click_and_text(page, selector: str) -> str:
    async with page.expect_response(lambda r: r.request.method == "POST") as info:
        await asubmit(page, selector)
    resp = await info.value
    assert resp.status == 403
    return await page.inner_text("body")


def test_seed_is_deterministic(tmp_path):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    seed(a)
    seed(b)
    assert list(sqlite3.connect(a).iterdump()) == list(sqlite3.connect(b).iterdump())
    conn = Q.open_db(a)
    counts = {
        t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        for t in ("category", "product", "customer", "sales_order", "review", "wishlist_item", "address")
    }
    assert counts["product"] >= 500 and counts["category"] >= 20 and counts["customer"] == 200
    assert counts["sales_order"] == N_ORDERS and counts["review"] > 1000
    statuses = {r[0] for r in conn.execute("SELECT DISTINCT status FROM sales_order")}
    assert statuses == {"pending", "processing", "complete", "canceled"}
    years = {r[0] for r in conn.execute("SELECT DISTINCT substr(created_at, 1, 4) FROM sales_order")}
    assert years == {"2022", "2023"}


def test_queries_agree_with_pages(shop):
    conn = Q.open_db(shop.store.seeds["shop"])
    url, admin_url = shop.urls["shopping"], shop.urls["shopping_admin"]
    _, total = Q.search_products(conn, "camera", price_from=50, price_to=200)
    html = httpx.get(f"{url}/catalogsearch/result/?q=camera&price=50-200").text
    assert re.search(rf"of <span class=\"toolbar-number\">{total}</span>", html)
    admin_cookies = {
        c["name"]: c["value"]
        for c in json.loads(shop.storage_state_path("shopping_admin").read_text())["cookies"]
    }
    best = Q.bestsellers(conn, "month", "2023-01-01", "2023-01-31")
    html = httpx.get(
        f"{admin_url}/admin/reports/report_sales/bestsellers/?filter=1&period_type=month"
        f"&from=01/01/2023&to=01/31/2023",
        cookies=admin_cookies,
    ).text
    assert best and best[0]["name"] in html and f"<td>{best[0]['qty']}</td>" in html
    year = Q.sales_totals(conn, "year")
    direct = conn.execute(
        "SELECT ROUND(SUM(grand_total), 2) FROM sales_order WHERE status != 'canceled'"
    ).fetchone()[0]
    assert round(sum(r["total"] for r in year), 2) == direct
    html = httpx.get(
        f"{admin_url}/admin/reports/report_sales/sales/?filter=1&period_type=year", cookies=admin_cookies
    ).text
    assert f"${direct:,.2f}" in html


def test_metrics_endpoint(shop):
    httpx.get(shop.urls["shopping"] + "/")
    text = httpx.get(shop.urls["shopping"] + "/metrics").text
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    counts = [s for s in fams["wa_site_request_seconds"].samples if s.name.endswith("_count")]
    assert (
        counts and all(s.labels["site"] == "shopping" for s in counts) and sum(s.value for s in counts) >= 1
    )
    assert fams["wa_site_live_sandboxes"].samples[0].value == len(shop.store)
