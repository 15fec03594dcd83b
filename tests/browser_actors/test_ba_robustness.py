"""Settling on slow pages, hung and crashed pages, login state, sandbox cookies, debug artefacts."""

from __future__ import annotations

import asyncio
import json
import time
import zipfile

import pytest
from conftest import fast_cfg, make_task
from test_ba_observation import _id_of

from common import records as R


def test_settles_on_late_dom_and_slow_requests_without_fixed_sleep(actor, server):
    obs = actor.reset(make_task(server.url("slow.html")))
    assert "arrived late" in obs.text  # a 30 ms timer after load, then a 400 ms request
    # an 800 ms fetch, then a DOM change
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Fetch slowly")))
    assert "slow done" in obs.text
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Slow navigation")))  # a 1.2 s navigation
    assert obs.url.endswith("/slow?ms=1200&page=1") and "waited" in obs.text


def test_every_document_times_its_mutations_and_a_timer_soon_after_the_action_is_seen(actor, server):
    obs = actor.reset(make_task(server.url("slow.html")))
    # the init script's mutation clock is on the document (settle counts the quiet time from the action's start)
    clock = actor._loop.run(actor._page.evaluate("() => typeof window.__waMutations.last"))
    assert clock == "number"
    # a fetch or XHR the page starts (and ends) moves the clock at once, before Playwright's request event reaches
    # Python: a timer's request inside the quiet window keeps the wait going
    starts = actor._loop.run(
        actor._page.evaluate(
            """async () => {
                 const c = window.__waMutations; const marks = [];
                 c.last = 0; const p = fetch('/slow?ms=50'); marks.push(c.last > 0);
                 c.last = 0; await p; await null; marks.push(c.last > 0);
                 c.last = 0; const x = new XMLHttpRequest(); x.open('GET', '/slow?ms=10'); x.send();
                 marks.push(c.last > 0);
                 return marks; }"""
        )
    )
    assert starts == [True, True, True]
    # a DOM change 60 ms after the click, with no request: inside the quiet window, so in this observation
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Timer")))
    assert "timer fired" in obs.text


def test_settle_timeout_bounds_the_wait(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(settle_timeout_s=0.5))
    try:
        obs = a.reset(make_task(server.url("slow.html")))
        obs = a.step(R.Click(element_id=_id_of(obs.text, "Fetch slowly")))  # 800 ms > the 0.5 s bound
        assert "nothing yet" in obs.text and obs.infra_error is None and obs.last_action_error is None
    finally:
        a.close()


def test_hung_page_hits_step_timeout_and_is_replaced(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(step_timeout_s=2.0, settle_timeout_s=1.0))
    try:
        obs = a.reset(make_task(server.url("hang.html")))
        hung_page = a.page
        t0 = time.monotonic()
        obs = a.step(R.Click(element_id=_id_of(obs.text, "Freeze the page")))
        assert time.monotonic() - t0 < 30  # the 2 s step time-out plus closing and reopening the page
        assert "step time-out of 2 s" in obs.infra_error and "did not complete" in obs.last_action_error
        assert a.page is not hung_page and hung_page.is_closed() and obs.url.endswith("/hang.html")
        obs = a.step(R.Goto(url=server.url("index.html")))  # the episode goes on
        assert obs.infra_error is None and "Fixture Home" in obs.text
    finally:
        a.close()


def test_crashed_page_is_replaced_and_reported(actor, server):
    obs = actor.reset(make_task(server.url("index.html")))
    inc = _id_of(obs.text, "Increment")

    async def crash(page):  # a real renderer crash, injected on purpose through CDP
        cdp = await page.context.new_cdp_session(page)
        try:
            await asyncio.wait_for(cdp.send("Page.crash"), 2)
        except Exception:  # noqa: BLE001 - the session dies with the renderer
            pass

    actor.call(crash, timeout=10)
    obs = actor.step(R.Click(element_id=inc))
    assert obs.infra_error == "page crashed" and obs.url.endswith("/index.html")
    obs = actor.step(R.Click(element_id=inc))
    assert obs.infra_error is None and obs.last_action_error is None


def test_login_state_and_sandbox_cookie(server, tmp_path):
    from browser_actors.actor import BrowserActor

    auth = tmp_path / ".auth"
    auth.mkdir()
    cookie = {
        "name": "shopping_session",
        "value": "logged-in-emma",
        "domain": "127.0.0.1",
        "path": "/",
        "expires": -1,
        "httpOnly": True,
        "secure": False,
        "sameSite": "Lax",
    }
    (auth / "shopping_state.json").write_text(json.dumps({"cookies": [cookie], "origins": []}))
    env = {"shopping": server.base}
    task = make_task(
        "__SHOPPING__/echo-cookies",
        sites=["shopping"],
        require_login=True,
        storage_state="./.auth/shopping_state.json",
    ).with_urls(env)  # filled where tasks are loaded; the actor only checks
    a = BrowserActor(fast_cfg(), auth_dir=str(auth), env_urls=env)
    try:
        obs = a.reset(task, sandbox="tok-123")
        assert "shopping_session=logged-in-emma" in obs.text and "wa_sandbox=tok-123" in obs.text
        fs = a.final_state()
        assert fs.sandbox == "tok-123" and fs.env_urls == env and fs.url == server.url("echo-cookies")
        names = {c["name"]: c["value"] for c in fs.storage_state["cookies"]}
        assert names == {"shopping_session": "logged-in-emma", "wa_sandbox": "tok-123"}
        obs = a.reset(make_task(server.url("echo-cookies")))  # a new episode starts from a clean context
        assert "logged-in-emma" not in obs.text and "wa_sandbox" not in obs.text
        with pytest.raises(FileNotFoundError, match="missing_state.json"):
            a.reset(task.model_copy(update={"storage_state": "./.auth/missing_state.json"}))
        with pytest.raises(ValueError, match="not allowed"):
            a.reset(make_task("file:///etc/passwd"))
    finally:
        a.close()


def test_multi_tab_start_urls(actor, server):
    obs = actor.reset(make_task(f"{server.url('index.html')} |AND| {server.url('page2.html')}"))
    assert obs.tabs == ["Fixture Home", "Second Page"] and obs.active_tab == 0


def test_screenshots_and_trace_per_episode(server, tmp_path):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(screenshots=True, traces=True), output_dir=str(tmp_path))
    try:
        obs = a.reset(make_task(server.url("index.html")), episode_id="ep-1")
        obs = a.step(R.Click(element_id=_id_of(obs.text, "Increment")))
        assert obs.screenshot == str(tmp_path / "ep-1" / "step_001.png")
    finally:
        a.close()
    for name in ("step_000.png", "step_001.png"):
        assert (tmp_path / "ep-1" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with zipfile.ZipFile(tmp_path / "ep-1" / "trace.zip") as z:
        assert any(n.endswith(".trace") for n in z.namelist())


def test_step_before_reset_is_a_clear_error():
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg())
    try:
        with pytest.raises(RuntimeError, match="before reset"):
            a.step(R.Scroll(direction="down"))
    finally:
        a.close()
    with pytest.raises(RuntimeError, match="closed"):
        a.step(R.Scroll(direction="down"))
