"""Local fixture pages for program_html checks, served by werkzeug on a free port, plus a shared RewardActor."""

from __future__ import annotations

import threading

import pytest

PAGES = {
    "/plain": """<html><body><h1>Order</h1><div id="status">Canceled</div><p class="dish">Fish &amp; Chips</p>
<input name="product[price]" value="27.00"><div class="count">1,024</div>
<script>document.title = 'ready';</script></body></html>""",
    "/f/books/123/": """<html><body><div class="submission__inner"><h1 class="submission__title">Big Little Lies</h1>
<div class="submission__body">can't stop it</div><a href="/img/abc.jpg">pic</a></div></body></html>""",
    "/members": """<html><body><table>
<tr><td data-label="Account"><span class="gl-avatar-labeled-sublabel">@vinta</span></td>
    <td class="col-max-role"><span>Guest</span></td></tr>
<tr><td data-label="Account"><span class="gl-avatar-labeled-sublabel">@lahwaacz</span></td>
    <td class="col-max-role"><span>Maintainer</span></td></tr></table></body></html>""",
    "/form": """<html><body><textarea title="What's on your mind?"></textarea>
<div class="hidden" style="display:none">secret</div></body></html>""",
    "/late": """<html><body><div id="late"></div>
<script>setTimeout(() => { document.getElementById('late').textContent = 'arrived'; }, 50);
fetch('/slow-json').then(r => r.json()).then(j => { document.getElementById('late').textContent += ' ' + j.v; });
</script></body></html>""",
    # `window.seen`: what earlier visits left in the browser (local and session storage, a script's cookie,
    # IndexedDB; read before this visit's own), then the page leaves all four behind
    "/traces": """<html><body><script>
const before = [localStorage.getItem('t'), sessionStorage.getItem('t'), document.cookie];
window.seen = new Promise(done => {
  const req = indexedDB.open('traces', 1);
  req.onupgradeneeded = () => req.result.createObjectStore('t');
  req.onsuccess = () => {
    const store = req.result.transaction('t', 'readwrite').objectStore('t'), got = store.get('t');
    got.onsuccess = () => {
      done([...before, got.result].map(v => v || '-').join('|'));
      store.put('I', 't');
    };
  };
});
localStorage.setItem('t', 'L'); sessionStorage.setItem('t', 'S'); document.cookie = 't=C; path=/';
</script></body></html>""",
}


def make_app():
    import time

    from flask import Flask, jsonify, request

    app = Flask("reward-fixtures")

    @app.get("/<path:path>")
    @app.get("/", defaults={"path": ""})
    def page(path: str):
        key = "/" + path
        HITS.append(key)
        if key in PAGES:
            return PAGES[key]
        if key.startswith("/f/books/123/"):
            return PAGES["/f/books/123/"]
        return "<html><body>not here</body></html>", 404

    @app.get("/cookies")
    def cookies():
        sb, sess = request.cookies.get("wa_sandbox", "-"), request.cookies.get("shopping_session", "-")
        return f'<html><body><div id="sb">{sb}</div><div id="sess">{sess}</div></body></html>'

    @app.get("/cached")
    def cached():  # a page the browser may keep for ten minutes: whether it is asked again shows the cache
        HITS.append("/cached")
        return '<html><body><div id="c">cached</div></body></html>', 200, {"Cache-Control": "max-age=600"}

    @app.get("/slow-json")
    def slow_json():
        time.sleep(0.3)
        return jsonify(v="json")

    @app.get("/__api__/orders/latest")
    def latest_order():
        if request.cookies.get("wa_sandbox") != "sb-1":
            return jsonify(error="no orders"), 404
        return jsonify(order_id=7, url=request.host_url.rstrip("/") + "/sales/order/view/order_id/7/")

    @app.get("/sales/order/view/order_id/7/")
    def order():
        return (
            '<html><body><div class="order-details-items ordered"><table><tr><td>Candles</td>'
            "<td>B0738JQG6Q</td></tr></table></div></body></html>"
        )

    @app.get("/__api__/reviews/latest")
    def review():
        if request.args.get("sku") != "SKU-1":
            return jsonify(error="none"), 404
        return jsonify(author="Jane Doe", rating=4)

    return app


HITS: list[str] = []  # every path the catch-all page route served, in order


@pytest.fixture
def page_hits() -> list[str]:
    """The paths the fixture site's pages served from now on, in order."""
    HITS.clear()
    return HITS


@pytest.fixture(scope="session")
def fixture_site():
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, make_app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="session")
def fixture_urls(fixture_site):
    return {k: fixture_site for k in ("shopping", "shopping_admin", "reddit", "gitlab")}


@pytest.fixture(scope="session")
def reward_actor(fixture_urls):
    from reward.actor import RewardActor

    actor = RewardActor(env_urls=fixture_urls, helpers="bundled")
    yield actor
    actor.close()
