"""The experts' toolkit: a view of the observation as elements, instruction readers, and the solver registry.

A solver is a generator function `solver(instruction, view)`, registered for task names with `@solves(...)`: it
yields `(action, reason)` and, when resumed, reads the observation that action produced from `view`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator

from common import records as R
from sites.tasks.steps import El, ExpertError, parse_elements

Step = tuple[R.Action, str]
Solver = Callable[[str, "View"], Generator[Step, None, None]]
SOLVERS: dict[str, Solver] = {}


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
            if text is not None and norm(e.text) != norm(text):
                return False
            return all(e.attrs.get(k) == v for k, v in attrs.items())

        return [e for e in self.els if ok(e)]

    def need(self, tag: str | None = None, text: str | None = None, **attrs: str) -> El:
        found = self.all(tag, text, **attrs)
        if not found:
            what = " ".join([tag or "element", repr(text) if text is not None else "", str(attrs or "")])
            raise ExpertError(f"no {what.strip()} in the observation")
        return found[0]


# -- reading instructions ------------------------------------------------------------------------------------
def norm(s: str) -> str:
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


def input_in_label(view: View, label: str) -> tuple[El, El]:
    """The checkbox / radio inside the <label> whose text is `label`, and the element to click for it.

    The click goes to the input, or to the label itself where the observation writes the label's id right after
    its text (browser.html_ids=after_text: `<label> <input id="4" type="radio"> Red [3]</label>`): that id sits
    next to the words the instruction names, and a click on a label toggles its control.
    """
    for lab in view.all("label", label):
        inner = [e for e in view.els if e.tag == "input" and e.pos > lab.pos]
        if inner:
            return inner[0], (lab if lab.id_after else inner[0])
    raise ExpertError(f"no checkbox or radio labelled {label!r}")
