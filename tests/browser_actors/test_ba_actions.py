"""Every action type on a real page; bad ids and bad actions give error observations, never exceptions."""

from __future__ import annotations

import re

import pytest
from conftest import make_task
from test_ba_observation import _id_of

from browser_actors.executor import normalize_key
from common import records as R


def _home(actor, server):
    return actor.reset(make_task(server.url("index.html")))


def _scroll_y(actor) -> float:
    return actor.call(lambda p: p.evaluate("window.scrollY"))


def test_click_hover_press(actor, server):
    obs = _home(actor, server)
    inc = _id_of(obs.text, "Increment")
    obs = actor.step(R.Click(element_id=inc))
    obs = actor.step(R.Click(element_id=f"[{inc}]"))  # brackets as the model writes them are accepted
    assert obs.last_action_error is None and re.search(r'<div id="\d+"> 2 </div>', obs.text)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Role button")))
    assert "role button clicked" in obs.text
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Pointer card")))
    assert "card clicked" in obs.text
    obs = actor.step(R.Hover(element_id=_id_of(obs.text, "Hover target")))
    assert "hovered!" in obs.text
    obs = actor.step(R.Press(key="ctrl+Shift+K"))
    assert "Control+Shift+K" in obs.text
    obs = actor.step(R.Press(key="NoSuchKey"))
    assert obs.last_action_error and "NoSuchKey" in obs.last_action_error


def test_type_fill_enter_checkbox_radio(actor, server):
    obs = _home(actor, server)
    q = _id_of(obs.text, 'name="q"')
    obs = actor.step(R.Type(element_id=q, text="old words", press_enter=False))
    obs = actor.step(R.Type(element_id=q, text="laptops", press_enter=False))  # clear, then type
    assert 'value="laptops"' in obs.text and "old words" not in obs.text
    obs = actor.step(R.Type(element_id=_id_of(obs.text, 'name="day"'), text="2024-05-17", press_enter=False))
    assert 'value="2024-05-17"' in obs.text
    obs = actor.step(
        R.Type(element_id=_id_of(obs.text, 'name="notes"'), text="multi word note", press_enter=False)
    )
    assert "multi word note</textarea>" in obs.text
    obs = actor.step(R.Type(element_id=_id_of(obs.text, "edit me"), text="rich text", press_enter=False))
    assert "rich text" in obs.text
    obs = actor.step(R.Click(element_id=_id_of(obs.text, 'name="agree"')))
    assert re.search(r'type="checkbox" name="agree" checked', obs.text)
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Large")))  # the label checks its radio
    assert 'type="radio" name="size" value="l" checked' in obs.text
    obs = actor.step(R.Type(element_id=q, text="final query", press_enter=True))  # Enter submits the form
    assert obs.url.startswith(server.url("result.html")) and "query=final query" in obs.text


def test_select_by_label_and_value_and_errors(actor, server):
    obs = _home(actor, server)
    sel = _id_of(obs.text, 'name="color"')
    obs = actor.step(R.Select(element_id=sel, text="Blue"))
    assert '<option selected value="b">Blue</option>' in obs.text and obs.last_action_error is None
    obs = actor.step(R.Select(element_id=sel, text="g"))
    assert '<option selected value="g">Green</option>' in obs.text
    obs = actor.step(R.Select(element_id=sel, text="Purple"))
    assert "no option 'Purple'" in obs.last_action_error and "Green" in obs.last_action_error
    obs = actor.step(R.Select(element_id=_id_of(obs.text, "Increment"), text="x"))
    assert "dropdowns only" in obs.last_action_error
    obs = actor.step(R.Type(element_id=sel, text="Red"))
    assert "is a dropdown" in obs.last_action_error


def test_scroll_goto_history(actor, server):
    _home(actor, server)
    obs = actor.step(R.Scroll(direction="down"))
    assert obs.last_action_error is None and _scroll_y(actor) > 300
    actor.step(R.Scroll(direction="up"))
    assert _scroll_y(actor) == 0
    obs = actor.step(R.Goto(url=server.url("page2.html")))
    assert obs.url == server.url("page2.html") and "Nothing much here" in obs.text
    obs = actor.step(R.Goto(url="/result.html?q=rel"))  # relative to the current page
    assert "query=rel" in obs.text
    obs = actor.step(R.GoBack())
    assert obs.url == server.url("page2.html")
    obs = actor.step(R.GoForward())
    assert obs.url.endswith("/result.html?q=rel")
    obs = actor.step(R.GoForward())
    assert "cannot go forward" in obs.last_action_error


def test_go_back_without_history(actor, server):
    obs = _home(actor, server)
    obs = actor.step(R.GoBack())
    assert "cannot go back" in (obs.last_action_error or "") and obs.url.endswith("/index.html")


def test_tabs(actor, server):
    _home(actor, server)
    obs = actor.step(R.NewTab())
    assert obs.active_tab == 1 and len(obs.tabs) == 2 and obs.url == "about:blank"
    obs = actor.step(R.Goto(url=server.url("page2.html")))
    assert obs.tabs == ["Fixture Home", "Second Page"]
    obs = actor.step(R.TabFocus(tab_index=0))
    assert obs.active_tab == 0 and obs.url.endswith("/index.html") and "Increment" in obs.text
    obs = actor.step(R.TabFocus(tab_index=7))
    assert "no tab 7" in obs.last_action_error and obs.active_tab == 0
    obs = actor.step(R.CloseTab())
    assert obs.tabs == ["Second Page"] and obs.url.endswith("/page2.html")
    obs = actor.step(R.CloseTab())  # closing the last tab leaves a blank one, as a browser window would
    assert obs.tabs == ["about:blank"] and obs.url == "about:blank"
    assert actor.final_state().tabs == ["about:blank"]


def test_stop_records_answer(actor, server):
    _home(actor, server)
    obs = actor.step(R.Stop(answer="42 items"))
    assert obs.last_action_error is None
    fs = actor.final_state()
    assert fs.answer == "42 items" and fs.url.endswith("/index.html") and fs.tabs == [fs.url]


def test_bad_ids_and_bad_actions_never_raise(actor, server):
    obs = _home(actor, server)
    for eid in ("9999", "abc", "", "12; drop", "-1"):
        obs = actor.step(R.Click(element_id=eid))
        assert obs.last_action_error and obs.infra_error is None, eid
        assert obs.url.endswith("/index.html")
    assert "no element with id [9999]" in actor.step(R.Hover(element_id="9999")).last_action_error
    assert "not an element id" in actor.step(R.Click(element_id="abc")).last_action_error
    obs = actor.step(R.Click(element_id=_id_of(obs.text, "Increment")))
    assert obs.last_action_error is None and re.search(r'<div id="\d+"> 1 </div>', obs.text)


def test_step_takes_an_action_only(actor, server):
    """Model output is parsed before a step; a dict, JSON text or any other object is the caller's bug."""
    _home(actor, server)
    for bad in ({"type": "click", "element_id": "1"}, '{"type": "stop"}', object()):
        with pytest.raises(TypeError, match="takes an Action"):
            actor.step(bad)
    assert actor.step(R.Stop(answer="ok")).last_action_error is None


def test_normalize_key():
    assert normalize_key("ctrl+a") == "Control+a"
    assert normalize_key("Meta+Shift+ArrowLeft") == "Meta+Shift+ArrowLeft"
    assert normalize_key("enter") == "Enter"
    assert normalize_key("ctrl++") == "Control++"
