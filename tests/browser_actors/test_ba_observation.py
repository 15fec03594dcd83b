"""Observations on real pages: ids, visibility rules, both modes, frames, shadow DOM, budget, short form."""

from __future__ import annotations

import re

from conftest import fast_cfg, make_task

from browser_actors.observation import TRUNCATION_MARKER, approx_tokens, render, truncate
from common import records as R


def _id_of(text: str, pattern: str) -> str:
    """The id on the first observation line matching `pattern` (html: id="N"; axtree: [N])."""
    for line in text.splitlines():
        if re.search(pattern, line):
            m = re.search(r'id="(\d+)"[^<]*' + pattern, line) or re.search(r"\[(\d+)\][^\[]*" + pattern, line)
            if m:
                return m.group(1)
    raise AssertionError(f"no id for {pattern!r} in:\n{text}")


def test_html_ids_visibility_and_header(actor, server):
    obs = actor.reset(make_task(server.url("index.html")))
    assert obs.mode == "html" and obs.url.endswith("/index.html") and obs.title == "Fixture Home"
    assert obs.text.startswith('<h1 id="1"> Fixture Home </h1>')  # content only; URL and tabs are fields
    assert render(obs) == f"URL: {obs.url}\nTabs: [0] Fixture Home (active)\n----\n" + obs.text
    assert obs.tabs == ["Fixture Home"] and obs.active_tab == 0 and obs.last_action_error is None
    body = obs.text
    for shown in (
        "Fixture Home",
        "Second page",
        "Increment",
        'placeholder="Search words"',
        "<textarea",
        '<option selected value="r">Red</option>',
        "Bottom of page",
        'role="button"',
        "Pointer card",
    ):
        assert shown in body, shown
    # invisible things never reach the model; the password is masked; hidden inputs are dropped
    for hidden in (
        "display none text",
        "visibility hidden text",
        "opacity zero text",
        "Skip to content",
        "do-not-show",
        "secret123",
        "<script",
        "<style",
        "keydown",
    ):
        assert hidden not in body, hidden
    assert 'type="password" name="pw" value="********"' in body
    for t in (
        "email",
        "number",
        "date",
        "tel",
        "url",
        "search",
        "time",
        "datetime-local",
        "month",
        "week",
        "range",
        "color",
        "checkbox",
        "radio",
    ):
        assert f'type="{t}"' in body, t
    assert obs.short == f"URL: {obs.url}\nTitle: Fixture Home\nHeadings: Fixture Home"


def test_every_id_resolves_to_one_element_and_is_stable(actor, server):
    obs = actor.reset(make_task(server.url("index.html")))
    ids = re.findall(r'id="(\d+)"', obs.text)
    assert len(ids) == len(set(ids)) > 30

    async def count_each(page):
        return [await page.locator(f'[data-wa-id="{i}"]').count() for i in ids]

    assert actor.call(count_each) == [1] * len(ids)
    again = actor.observe()
    assert again.text == obs.text  # same page, same ids
    # a DOM change adds a new id and leaves the old ones alone
    actor.call(
        lambda p: p.evaluate("document.body.insertAdjacentHTML('afterbegin', '<p>Brand new para</p>')")
    )
    after = actor.observe()
    new_id = _id_of(after.text, "Brand new para")
    assert new_id not in ids and _id_of(after.text, "Increment") == _id_of(obs.text, "Increment")


def test_forged_ids_in_page_markup_are_removed(actor, server):
    actor.reset(make_task(server.url("page2.html")))
    actor.call(
        lambda p: p.evaluate(
            "document.body.insertAdjacentHTML('beforeend', '<span data-wa-id=\"1\" style=\"display:none\">x</span>')"
        )
    )
    obs = actor.observe()
    h1 = _id_of(obs.text, "Second page")

    async def count(page):
        return await page.locator(f'[data-wa-id="{h1}"]').count()

    assert actor.call(count) == 1


def test_axtree_mode_shares_ids_with_html(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(observation="axtree"))
    try:
        ax = a.reset(make_task(server.url("index.html")))
        a.mode = "html"
        html = a.observe()
    finally:
        a.close()
    assert ax.mode == "axtree" and "RootWebArea 'Fixture Home'" in ax.text
    assert _id_of(ax.text, r"button 'Increment'") == _id_of(html.text, "Increment")
    assert _id_of(ax.text, r"combobox") == _id_of(html.text, "<option")
    assert re.search(r"\[\d+\] checkbox 'I agree' checked: false", ax.text)
    assert "[6] StaticText '0'" in ax.text or re.search(r"\[\d+\] StaticText '0'", ax.text)
    for noise in ("focusable", "InlineTextBox", "settable", "display none text"):
        assert noise not in ax.text, noise


def test_iframe_content_is_observed_and_actionable(server):
    from browser_actors.actor import BrowserActor

    for mode in ("html", "axtree"):
        a = BrowserActor(fast_cfg(observation=mode))
        try:
            obs = a.reset(make_task(server.url("frames.html")))
            assert "Inside the frame" in obs.text and "Outer page" in obs.text
            pat = "Frame button" if mode == "html" else "button 'Frame button'"
            obs = a.step(R.Click(element_id=_id_of(obs.text, pat)))
            assert obs.last_action_error is None and "frame button clicked" in obs.text, (mode, obs.text)
        finally:
            a.close()


def test_shadow_dom_content_is_observed_and_actionable(actor, server):
    obs = actor.reset(make_task(server.url("shadow.html")))
    for shown in ("Shadow paragraph", "Slotted label text", "Shadow button", 'placeholder="Shadow input"'):
        assert shown in obs.text, shown
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Shadow button")))
    assert obs.last_action_error is None and "shadow clicked" in obs.text
    obs = actor.step(R.Type(element_id=_id_of(obs.text, "Shadow input"), text="deep", press_enter=False))
    assert 'value="deep"' in obs.text


def test_safety_cap_cuts_with_a_visible_marker(server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(fast_cfg(page_max_chars=300))
    try:
        obs = a.reset(make_task(server.url("index.html")))
    finally:
        a.close()
    assert obs.truncated and "observation truncated" in obs.text
    assert len(obs.text) <= 300 and obs.text.startswith("<h1")


def test_link_targets_can_be_left_out(server):
    from browser_actors.actor import BrowserActor

    with_links, without = BrowserActor(fast_cfg()), BrowserActor(fast_cfg(html_links=False))
    try:
        a = with_links.reset(make_task(server.url("index.html")))
        b = without.reset(make_task(server.url("index.html")))
    finally:
        with_links.close()
        without.close()
    assert "href=" in a.text and "href=" not in b.text
    assert len(b.text) < len(a.text) and "<a id=" in b.text


def test_truncate_unit():
    text = "\n".join(f"line {i} " + "x" * 20 for i in range(100))
    cut, was = truncate(text, 100)
    assert was and approx_tokens(cut) <= 100 and cut.splitlines()[0] == text.splitlines()[0]
    assert cut.endswith(TRUNCATION_MARKER.format(n=100 - (len(cut.splitlines()) - 1)))
    assert truncate("short", 100) == ("short", False)
    one_line, was = truncate("y" * 10_000, 50)
    assert was and approx_tokens(one_line) <= 50 + 30


def test_ids_can_follow_the_text_and_read_the_same_elements(server):
    """browser.html_ids=after_text writes `<tag> text [n]</tag>`; the expert's parser reads the same ids, tags,
    attributes and texts as from the opening-tag layout, and an id read there is the one an action resolves."""
    from browser_actors.actor import BrowserActor
    from sites.tasks.steps import parse_elements

    tag, after = BrowserActor(fast_cfg()), BrowserActor(fast_cfg(html_ids="after_text"))
    try:
        a = tag.reset(make_task(server.url("index.html")))
        b = after.reset(make_task(server.url("index.html")))
        assert b.text.startswith("<h1> Fixture Home [1]</h1>")
        # only void elements and selects keep the id in the tag
        assert set(re.findall(r"<(\w+) id=", b.text)) <= {"input", "img", "select"}
        assert len(b.text) < len(a.text)
        same = [(e.id, e.tag, e.attrs, e.text) for e in parse_elements(a.text)]
        assert [(e.id, e.tag, e.attrs, e.text) for e in parse_elements(b.text)] == same
        button = next(e for e in parse_elements(b.text) if e.tag == "button" and e.text == "Increment")
        assert f"Increment [{button.id}]</button>" in b.text
        obs = after.step(R.Click(element_id=button.id))
        assert obs.last_action_error is None and obs.text != b.text
    finally:
        tag.close()
        after.close()
