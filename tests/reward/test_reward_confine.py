"""The reward actor's browser reaches only the run's sites (issue 12, item 12): a real on-list server redirects a
check's page load, an image and a helper's JSON request to a real off-list loopback server that records hits."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from off_list_server import OffListServer

from common.records import FinalState
from common.tasks import Task


class OnListServer:
    """/redirect?to=URL (a 302), /page?off=BASE (text plus an image that redirects to BASE), and the bundled
    latest-order helper's endpoint, which redirects to `off_base`."""

    def __init__(self, off_base: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                parts = urlsplit(self.path)
                q = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/redirect":
                    return self._redirect(q["to"])
                if parts.path == "/__api__/orders/latest":
                    return self._redirect(off_base + "/api")
                img = f'<img src="/redirect?to={quote(off_base + "/img.png", safe="")}">'
                body = f"<!doctype html><title>On list</title><p id='s'>Canceled</p>{img}".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _redirect(self, to: str) -> None:
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def servers():
    off = OffListServer()
    on = OnListServer(off.base)
    yield on, off
    on.httpd.shutdown()
    on.httpd.server_close()
    off.close()


def _task(url: str, contents: dict) -> Task:
    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": "confine",
            "start_url": "__SHOPPING__",
            "intent": "check",
            "eval": {
                "eval_types": ["program_html"],
                "program_html": [{"url": url, "locator": "", "required_contents": contents}],
            },
        }
    )


def test_checks_never_reach_a_host_off_the_list(servers):
    from reward.actor import RewardActor

    on, off = servers
    with RewardActor(env_urls={"shopping": on.base}, helpers="bundled") as actor:
        # a page whose image redirects off the list: the check still reads the page
        page = actor.score(_task(f"{on.base}/page", {"must_include": ["Canceled"]}), FinalState())
        assert page.score == 1.0, page.checks
        # the check's own page load redirects off the list: refused, so unscorable (never the off-list page)
        hop = actor.score(
            _task(f"{on.base}/redirect?to={quote(off.base + '/nav', safe='')}", {"must_include": ["x"]}),
            FinalState(),
        )
        assert hop.score is None and "could not load" in hop.checks[0].why
        # a helper's JSON request redirected off the list
        helper = actor.score(
            _task("func:shopping_get_latest_order_url()", {"must_include": ["x"]}),
            FinalState(url=on.base + "/"),
        )
        assert helper.score is None and "blocked" in helper.checks[0].why, helper.checks
    time.sleep(0.5)  # anything in flight would have arrived by now
    assert off.hits == []
