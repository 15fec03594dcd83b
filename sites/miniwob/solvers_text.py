"""Experts of the MiniWoB++ typing tasks: text, passwords, log-in, focus, words and table values, sums, dates."""

from __future__ import annotations

import html
import re

from common import records as R
from sites.miniwob.expert_kit import (
    View,
    between,
    click,
    fill,
    norm,
    ordinal,
    quoted,
    solves,
    submit,
)
from sites.tasks.steps import ExpertError


@solves("enter-text", "enter-text-dynamic")
def _enter_text(instr: str, view: View):
    word = quoted(instr)
    yield fill(view.need("input"), word, f"type {word!r}")
    yield submit(view)


@solves("enter-text-2")
def _enter_text_2(instr: str, view: View):
    word = quoted(instr)
    word = word.lower() if "lower case" in instr else word.upper()
    yield fill(view.need("input"), word, f"type {word!r}, in the asked case")
    yield submit(view)


@solves("enter-password")
def _enter_password(instr: str, view: View):
    word = quoted(instr)
    for box in view.all("input", type="password"):
        yield fill(box, word, "type the password")
    yield submit(view)


@solves("login-user")
def _login_user(instr: str, view: View):
    user, password = quoted(instr, 0), quoted(instr, 1)
    inputs = view.all("input")
    yield fill(inputs[0], user, f"user name {user!r}")
    yield fill(view.need("input", type="password"), password, "the password")
    yield submit(view, "Login")


@solves("focus-text", "focus-text-2")
def _focus_text(instr: str, view: View):
    n = ordinal(instr) if re.search(r"\d(st|nd|rd|th)", instr) else 1
    boxes = view.all("input")
    if len(boxes) < n:
        raise ExpertError(f"no text box #{n}")
    yield click(boxes[n - 1], f"focus text box #{n}")


@solves("find-word")
def _find_word(instr: str, view: View):
    n = ordinal(instr)
    words = view.need("p").text.split()
    if len(words) < n:
        raise ExpertError(f"the paragraph has fewer than {n} words")
    yield fill(view.need("input"), words[n - 1], f"word #{n} of the paragraph is {words[n - 1]!r}")
    yield submit(view)


def _table_value(view: View, label: str) -> str:
    cells = view.all("td")
    for a, b in zip(cells, cells[1:], strict=False):
        if norm(a.text) == norm(label):
            return b.text
    raise ExpertError(f"no row {label!r} in the table")


@solves("read-table")
def _read_table(instr: str, view: View):
    label = between(instr, "Enter the value of ", " into")
    value = _table_value(view, label)
    yield fill(view.need("input"), value, f"the table says {label} is {value!r}")
    yield submit(view)


@solves("read-table-2")
def _read_table_2(instr: str, view: View):
    for label in view.all("label"):
        name = label.text.rstrip(":").strip()
        box = next(e for e in view.els if e.tag == "input" and e.pos > label.pos)
        value = _table_value(view, name)
        yield fill(box, value, f"the table says {name} is {value!r}")
    yield submit(view)


_SUM = re.compile(r"(-?\d+)\s*([-+x*/])\s*(-?\d+)\s*=")


@solves("simple-arithmetic")
def _arithmetic(instr: str, view: View):
    m = _SUM.search(view.text)
    if not m:
        raise ExpertError("no sum on the page")
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    value = {"+": a + b, "-": a - b, "x": a * b, "*": a * b}.get(op)
    if value is None:
        raise ExpertError(f"unsupported operator {op!r}")
    yield fill(view.need("input"), str(value), f"{a} {op} {b} = {value}")
    yield submit(view)


@solves("simple-algebra")
def _algebra(instr: str, view: View):
    m = re.search(r"(-?\d+)\s*([-+])\s*x\s*=\s*(-?\d+)|x\s*([-+])\s*(-?\d+)\s*=\s*(-?\d+)", view.text)
    if not m:
        raise ExpertError("no equation in x on the page")
    if m.group(1) is not None:  # a + x = c  or  a - x = c
        a, op, c = int(m.group(1)), m.group(2), int(m.group(3))
        x = c - a if op == "+" else a - c
    else:  # x + b = c  or  x - b = c
        op, b, c = m.group(4), int(m.group(5)), int(m.group(6))
        x = c - b if op == "+" else c + b
    yield fill(view.need("input"), str(x), f"{m.group(0).strip()} gives x = {x}")
    yield submit(view)


# A text area with its id in the tag, or written after its text (browser.html_ids=after_text).
_TEXTAREA = re.compile(
    r'<textarea id="\d+"[^>]*>(.*?)</textarea>|<textarea\b[^>]*>(.*?)\[\d+\]</textarea>', re.S
)


def _textareas(view: View) -> list[str]:
    """Raw text of every text area (the observation keeps its spaces, which the copy tasks compare exactly)."""
    return [html.unescape(m[1] if m[1] is not None else m[2]) for m in _TEXTAREA.finditer(view.text)]


@solves("copy-paste", "copy-paste-2")
def _copy_paste(instr: str, view: View):
    n = ordinal(instr) if re.search(r"\d(st|nd|rd|th)", instr) else 1
    texts = _textareas(view)
    if len(texts) < n or texts[n - 1].endswith("…"):
        raise ExpertError(f"text area #{n} is missing or cut in the observation")
    yield fill(view.need("input"), texts[n - 1], f"the text of text area #{n}")
    yield submit(view)


@solves("use-spinner")
def _spinner(instr: str, view: View):
    value = between(instr, "Select ", " with the spinner")
    yield fill(view.need("input", role="spinbutton"), value, f"set the spinner to {value}")
    yield submit(view)


@solves("enter-date")
def _enter_date(instr: str, view: View):
    month, day, year = between(instr, "Enter ", " as the date").split("/")
    yield fill(view.need("input", type="date"), f"{year}-{month}-{day}", "a date field takes yyyy-mm-dd")
    yield submit(view)


@solves("enter-time")
def _enter_time(instr: str, view: View):
    m = re.search(r"(\d+):(\d+)\s*(AM|PM)", instr)
    if not m:
        raise ExpertError(f"no time in {instr!r}")
    hour = int(m.group(1)) % 12 + (12 if m.group(3) == "PM" else 0)
    yield fill(
        view.need("input", type="time"), f"{hour:02d}:{m.group(2)}", "a time field takes 24-hour hh:mm"
    )
    yield submit(view)


@solves("choose-list")
def _choose_list(instr: str, view: View):
    item = between(instr, "Select ", " from the list")
    yield R.Select(element_id=view.need("select").id, text=item), f"choose {item!r}"
    yield submit(view)
