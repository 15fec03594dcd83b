"""Experts of the MiniWoB++ click tasks: buttons, links, tabs, dialogs, collapsible sections, checkboxes, widgets."""

from __future__ import annotations

from sites.miniwob.expert_kit import (
    View,
    between,
    click,
    input_in_label,
    quoted,
    solves,
    submit,
)
from sites.tasks.steps import ExpertError


@solves("click-button", "unicode-test", "click-test-2", "click-test-transfer")
def _click_labelled(instr: str, view: View):
    label = quoted(instr) if '"' in instr else between(instr, "Click button ", ".")
    yield click(view.need("button", label), f"the instruction names the button {label!r}")


@solves("click-test")
def _click_only_button(instr: str, view: View):
    yield click(view.need("button"), "there is one button to click")


@solves("click-button-sequence")
def _click_sequence(instr: str, view: View):
    yield click(view.need("button", "ONE"), "first button ONE")
    yield click(view.need("button", "TWO"), "then button TWO")


@solves("click-link")
def _click_link(instr: str, view: View):
    word = quoted(instr)
    yield click(view.need("span", word), f"the link {word!r} in the paragraph")


@solves("click-dialog", "click-dialog-2")
def _click_dialog(instr: str, view: View):
    label = quoted(instr)
    if label.lower() == "x":
        yield click(view.need("button", title="Close"), "the dialog's close button (its x)")
    else:
        yield click(view.need("button", label), f"the dialog button labelled {label!r}")


@solves("click-tab")
def _click_tab(instr: str, view: View):
    name = between(instr, "Click on ", ".")
    yield click(view.need("a", name), f"the tab named {name!r}")


@solves("click-tab-2", "click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard")
def _click_tab_2(instr: str, view: View):
    word = quoted(instr)
    tabs = [e.text for e in view.all("a") if e.attrs.get("role") == "presentation"]
    for tab in tabs:
        if not view.all("span", word):
            yield click(view.need("a", tab), f"{word!r} is not on this tab: open tab {tab!r}")
        if view.all("span", word):
            yield click(view.need("span", word), f"the link {word!r} is on this tab")
            return
    raise ExpertError(f"{word!r} is on no tab")


@solves("click-collapsible", "click-collapsible-nodelay")
def _click_collapsible(instr: str, view: View):
    yield click(view.need("h3"), "expand the section to reach its Submit button")
    yield submit(view)


@solves("click-collapsible-2", "click-collapsible-2-nodelay")
def _click_collapsible_2(instr: str, view: View):
    word = quoted(instr)
    for k in range(len(view.all("h3"))):
        header = view.all("h3")[k]
        if header.attrs.get("aria-expanded") != "true":
            yield click(header, f"open section {header.text!r} to look for {word!r}")
        headers = view.all("h3")
        start, end = headers[k].pos, headers[k + 1].pos if k + 1 < len(headers) else len(view.text)
        hits = [e for e in view.all("span", word) if start < e.pos < end]
        if hits:
            yield click(hits[0], f"the link {word!r} is in this section")
            return
    raise ExpertError(f"{word!r} is in no section")


@solves("click-option")
def _click_option(instr: str, view: View):
    label = between(instr, "Select ", " and click Submit")
    yield click(input_in_label(view, label)[1], f"choose {label!r}")
    yield submit(view)


@solves("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer")
def _click_checkboxes(instr: str, view: View):
    wanted = between(instr, "Select ", " and click Submit")
    names = [] if wanted == "nothing" else [w.strip() for w in wanted.split(",") if w.strip()]
    for name in names:
        box, target = input_in_label(view, name)
        if "checked" not in box.attrs:
            yield click(target, f"tick {name!r}")
    yield submit(view)


@solves("click-widget")
def _click_widget(instr: str, view: View):
    kind = quoted(instr)
    match = {
        "button": lambda e: e.tag == "button",
        "checkbox": lambda e: e.tag == "input" and e.attrs.get("type") == "checkbox",
        "radio": lambda e: e.tag == "input" and e.attrs.get("type") == "radio",
        "text": lambda e: e.tag == "input" and e.attrs.get("type") in (None, "input", "text"),
        "textarea": lambda e: e.tag == "textarea",
    }.get(kind)
    hits = [e for e in view.els if match and match(e)]
    if not hits:
        raise ExpertError(f"no {kind!r} widget")
    yield click(hits[0], f"a {kind} widget")
