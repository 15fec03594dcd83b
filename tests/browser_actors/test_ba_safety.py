"""Navigation confinement (links, redirects, pop-ups, window.open, file:/data:/chrome:), downloads, the guard."""

from __future__ import annotations

import pytest
from conftest import fast_cfg, make_task
from test_ba_observation import _id_of

from browser_actors.safety import AllowList, Guard, resolve_url
from common import records as R


def _popups(actor, server):
    return actor.reset(make_task(server.url("popup.html")))


def test_off_host_link_is_blocked_and_not_followed(actor, server):
    obs = _popups(actor, server)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Off-host link")))
    assert obs.url == server.url("popup.html")
    assert "navigation to http://203.0.113.9/away blocked" in obs.last_action_error
    assert "not in the allow-list" in obs.last_action_error


def test_file_and_data_navigations_are_not_followed(actor, server):
    obs = _popups(actor, server)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "File link")))
    assert obs.url == server.url("popup.html")  # Chromium refuses file: from http pages; we stay put
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Data navigation")))
    assert obs.url == server.url("popup.html") and "data page" not in obs.text
    for url in (
        "file:///etc/passwd",
        "data:text/html,<h1>x</h1>",
        "chrome://version",
        "javascript:alert(1)",
        "http://203.0.113.9/",
        f"http://user:pw@{server.base[7:]}/index.html",
    ):
        obs = actor.step(R.Goto(url=url))
        assert obs.url == server.url("popup.html") and "blocked" in obs.last_action_error, url


def test_redirect_off_host_is_undone(actor, server):
    obs = _popups(actor, server)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Redirect off-host")))
    assert obs.url == server.url("popup.html")
    assert "http://203.0.113.9/redirected (a redirect) blocked" in obs.last_action_error


def test_popups_same_host_open_as_active_tab(actor, server):
    obs = _popups(actor, server)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Open second in new tab")))
    assert obs.tabs == ["Popups", "Second Page"] and obs.active_tab == 1 and obs.url.endswith("/page2.html")
    obs = actor.step(R.TabFocus(tab_index=0))
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "window.open same host")))
    assert len(obs.tabs) == 3 and obs.active_tab == 2 and "Nothing much here" in obs.text


def test_popup_to_other_host_is_closed_and_reported(actor, server):
    obs = _popups(actor, server)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "window.open other host")))
    assert obs.tabs == ["Popups"] and obs.active_tab == 0
    assert "http://203.0.113.9/evil blocked" in obs.last_action_error


def test_downloads_are_refused(actor, server):
    obs = actor.reset(make_task(server.url("page2.html")))
    js = (
        "const a = document.createElement('a'); a.href = 'index.html'; a.download = 'x.html';"
        "a.textContent = 'Download me'; document.body.append(a);"
    )
    actor.call(lambda p: p.evaluate(js))
    obs = actor.observe()
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Download me")))
    assert obs.infra_error is None and obs.url.endswith("/page2.html")


def test_guard_refuses_high_impact_actions(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(blocked_patterns=[r"/account/delete", r"delete my account"]))
    try:
        before = server.hits.get("/account/delete", 0)
        obs = a.reset(make_task(server.url("popup.html")))
        obs = a.step(R.Click(element_id=_id_of(obs.text, "Delete my account")))
        assert "refused by the safety guard" in obs.last_action_error
        obs = a.step(R.Click(element_id=_id_of(obs.text, "Confirm deletion")))  # form action matches
        assert "refused by the safety guard" in obs.last_action_error
        obs = a.step(R.Goto(url=server.url("account/delete")))
        assert "refused by the safety guard" in obs.last_action_error
        # a navigation the page starts by itself is caught by the route guard
        a.call(lambda p: p.evaluate("setTimeout(() => { location.href = '/account/delete?x=1'; }, 0)"))
        obs = a.step(R.Scroll(direction="down"))
        assert obs.url == server.url("popup.html")
        assert server.hits.get("/account/delete", 0) == before
    finally:
        a.close()


def test_allow_list_unit():
    allow = AllowList(["http://127.0.0.1:7770", "http://shop.example.com/", "https://127.0.0.1:9999/x"])
    assert allow.check("http://127.0.0.1:7770/a?b=1") is None
    assert (
        allow.check("http://shop.example.com/p") is None
        and allow.check("http://shop.example.com:80/") is None
    )
    assert allow.check("about:blank") is None
    assert "not in the allow-list" in allow.check("http://127.0.0.1:7771/")
    assert "scheme" in allow.check("file:///etc/passwd") and "scheme" in allow.check("data:text/html,x")
    assert "credentials" in allow.check("http://u:p@127.0.0.1:7770/")
    rx = allow.block_regex()
    for ok in (
        "http://127.0.0.1:7770/",
        "http://127.0.0.1:7770",
        "http://shop.example.com/x",
        "https://127.0.0.1:9999/x",
    ):
        assert not rx.search(ok), ok
    for bad in (
        "http://127.0.0.1:77701/",
        "http://127.0.0.1:7770.evil.com/",
        "http://evil.com/?http://127.0.0.1:7770/",
        "ws://127.0.0.1:7770/",
        "http://u@127.0.0.1:7770/",
        "https://127.0.0.1:7770/",
    ):
        assert rx.search(bad), bad
    assert AllowList([]).block_regex().search("http://anything/")


def test_guard_and_resolve_unit():
    g = Guard([r"delete\s+account"])
    assert g.check("Delete  Account now") and g.check("fine", None) is None and not Guard([])
    with pytest.raises(ValueError, match="bad regex"):
        Guard(["("])
    assert resolve_url("/a", "http://h:1/b/c") == "http://h:1/a"
    assert resolve_url("file:///x", "http://h:1/") == "file:///x"
