"""Scripted experts for MiniWoB++ tasks: behaviour-cloning demonstrations from the observations the model sees.

    expert = expert_for(task)                  # None when the task has no expert
    action, why = expert.next_action(obs)      # common.records Action + a one-line reason; ExpertError when stuck

The interface is `sites.tasks.steps.Script`'s. An expert reads element ids only from `obs.text` (the simplified-HTML
observation, parsed with `sites.tasks.steps.parse_elements`) and facts only from the instruction (`task.intent`) and
that text; it acts only through Action records. Each solver is a generator: it yields `(action, reason)` and, when
resumed, reads the observation that action produced from its `View`. Once the page has given its reward
(`obs.done`) the expert answers `stop`. Accessibility-tree observations are refused (the parser reads HTML).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Generator
from typing import Any

from common import records as R
from sites.tasks.steps import El, ExpertError, parse_elements

Step = tuple[R.Action, str]
Solver = Callable[[str, "View"], Generator[Step, None, None]]
SOLVERS: dict[str, Solver] = {}
ORDINALS = {
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
    "5th": 5,
    "6th": 6,
    "7th": 7,
    "8th": 8,
    "9th": 9,
    "10th": 10,
}


def solves(*names: str) -> Callable[[Solver], Solver]:
    def register(fn: Solver) -> Solver:
        for n in names:
            SOLVERS[n] = fn
        return fn

    return register


class View:
    """The latest observation as elements; `need` raises ExpertError naming what is missing."""

    def __init__(self) -> None:
        self.obs: R.Observation | None = None

    @property
    def text(self) -> str:
        return self.obs.text if self.obs else ""

    @property
    def els(self) -> list[El]:
        return parse_elements(self.text)

    def all(self, tag: str | None = None, text: str | None = None, **attrs: str) -> list[El]:
        def ok(e: El) -> bool:
            if tag and e.tag != tag:
                return False
            if text is not None and _norm(e.text) != _norm(text):
                return False
            return all(e.attrs.get(k) == v for k, v in attrs.items())

        return [e for e in self.els if ok(e)]

    def need(self, tag: str | None = None, text: str | None = None, **attrs: str) -> El:
        found = self.all(tag, text, **attrs)
        if not found:
            what = " ".join([tag or "element", repr(text) if text is not None else "", str(attrs or "")])
            raise ExpertError(f"no {what.strip()} in the observation")
        return found[0]


class MiniwobExpert:
    """One episode's expert: `next_action(obs) -> (Action, reason)`, the interface of `sites.tasks.steps.Script`."""

    def __init__(self, name: str, instruction: str, solver: Solver) -> None:
        self.name, self.instruction, self.solver = name, instruction, solver
        self.view = View()
        self._steps: Generator[Step, None, None] | None = None

    def next_action(self, obs: R.Observation) -> Step:
        if obs.done:
            return R.Stop(answer=""), "the page has given its reward: the episode is over"
        if obs.mode != "html":
            raise ExpertError(
                "the MiniWoB++ experts read the simplified-HTML observation (rollout.observation=html)"
            )
        if obs.last_action_error and self._steps is not None:
            raise ExpertError(f"the previous action failed: {obs.last_action_error}")
        self.view.obs = obs
        if self._steps is None:
            self._steps = self.solver(self.instruction, self.view)
        try:
            return next(self._steps)
        except StopIteration:
            raise ExpertError(f"{self.name}: the script ended but the page did not end the episode") from None


def expert_for(task: Any) -> MiniwobExpert | None:
    """The expert of a MiniWoB++ task (a `common.tasks.Task` with a `miniwob` block), or None."""
    spec = getattr(task, "miniwob", None)
    if spec is None or spec.task not in SOLVERS:
        return None
    return MiniwobExpert(spec.task, task.intent, SOLVERS[spec.task])


# -- reading instructions ------------------------------------------------------------------------------------
def _norm(s: str) -> str:
    """Whitespace-normalised, case kept: several tasks hold words that differ only in case ("Eget", "eget")."""
    return " ".join(s.split())


def quoted(instr: str, index: int = 0) -> str:
    found = re.findall(r'"([^"]*)"', instr)
    if len(found) <= index:
        raise ExpertError(f"no quoted text #{index + 1} in the instruction {instr!r}")
    return found[index]


def ordinal(instr: str) -> int:
    m = re.search(r"\b(\d+)(?:st|nd|rd|th)\b", instr)
    if not m:
        raise ExpertError(f"no ordinal in the instruction {instr!r}")
    return int(m.group(1))


def between(instr: str, start: str, end: str) -> str:
    m = re.search(re.escape(start) + r"(.*?)" + re.escape(end), instr)
    if not m:
        raise ExpertError(f"the instruction {instr!r} does not read '{start}...{end}'")
    return m.group(1)


def click(el: El, why: str) -> Step:
    return R.Click(element_id=el.id), why


def fill(el: El, text: str, why: str) -> Step:
    return R.Type(element_id=el.id, text=text, press_enter=False), why


def submit(view: View, label: str = "Submit") -> Step:
    return click(view.need("button", label), f"press {label}")


def input_in_label(view: View, label: str) -> El:
    """The checkbox / radio inside the <label> whose text is `label`."""
    for lab in view.all("label", label):
        inner = [e for e in view.els if e.tag == "input" and e.pos > lab.pos]
        if inner:
            return inner[0]
    raise ExpertError(f"no checkbox or radio labelled {label!r}")


# -- click tasks ---------------------------------------------------------------------------------------------
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
    yield click(input_in_label(view, label), f"choose {label!r}")
    yield submit(view)


@solves("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer")
def _click_checkboxes(instr: str, view: View):
    wanted = between(instr, "Select ", " and click Submit")
    names = [] if wanted == "nothing" else [w.strip() for w in wanted.split(",") if w.strip()]
    for name in names:
        box = input_in_label(view, name)
        if "checked" not in box.attrs:
            yield click(box, f"tick {name!r}")
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


# -- typing tasks --------------------------------------------------------------------------------------------
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
        if _norm(a.text) == _norm(label):
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


def _textareas(view: View) -> list[str]:
    """Raw text of every text area (the observation keeps its spaces, which the copy tasks compare exactly)."""
    return [
        html.unescape(t) for t in re.findall(r"<textarea id=\"\d+\"[^>]*>(.*?)</textarea>", view.text, re.S)
    ]


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
