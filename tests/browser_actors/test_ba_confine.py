"""Redirects are confined before the request (issue 12, item 12): a real page on the fixture server redirects a
navigation, an image and a fetch() to a real off-list loopback server that records hits; none may reach it.
Before the fix the off-list server received the navigation before the actor undid it."""

from __future__ import annotations

import re
import time
from urllib.parse import quote

import pytest
from conftest import make_task
from off_list_server import OffListServer

from common import records as R


@pytest.fixture
def off():
    srv = OffListServer()
    yield srv
    srv.close()


def test_redirect_hops_and_sub_resources_never_leave_the_browser(actor, server, off):
    obs = actor.reset(make_task(server.url(f"confine.html?off={quote(off.base)}")))
    link = re.search(r'<a id="(\d+)"[^>]*> Redirecting link', obs.text).group(1)
    obs = actor.step(R.Click(element_id=link))
    assert obs.url.startswith(server.url("confine.html"))  # the click did not leave the page
    assert f"navigation to {off.base}/link (a redirect) blocked" in obs.last_action_error
    obs = actor.step(R.Goto(url=server.url("redirect?to=" + quote(off.base + "/goto"))))
    assert f"{off.base}/goto (a redirect) blocked" in obs.last_action_error
    time.sleep(0.5)  # anything in flight would have arrived by now
    assert off.hits == []  # not the navigation, the image, the fetch nor the typed redirect


def test_a_popup_that_redirects_off_the_list_is_stopped_too(actor, server, off):
    obs = actor.reset(make_task(server.url("popup.html")))
    actor._loop.run(  # a script opens a tab whose first request redirects (what a page of a real site can do)
        actor._page.evaluate(f"() => window.open('/redirect?to={quote(off.base + '/popup', safe='')}')"),
        timeout=10,
    )
    obs = actor.step(R.Scroll(direction="down"))
    time.sleep(0.5)
    assert off.hits == [] and not any(off.base in t for t in obs.tabs)
