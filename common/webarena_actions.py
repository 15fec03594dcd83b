"""WebArena's id-based action grammar (plus our `select [id] [option]`), used through common.actions.

`click [12]`, `type [5] [text] [0|1]` (Enter by default, as in WebArena), `hover [id]`, `press [Control+a]`,
`scroll [up|down]` (also `scroll [direction=down]`), `goto [url]`, `go_back`, `go_forward`, `new_tab`,
`tab_focus [i]`, `close_tab`, `stop [answer]`, `select [id] [option]`.

Where the action is read from, in order: the whole reply when it is exactly one action (so texts with newlines,
brackets or ``` inside round-trip), the last ``` fenced block (WebArena's "In summary, the next action I will
perform is ```click [1234]```"), then the last lines that start with an action keyword. Departure from WebArena's
code: it takes the *first* fenced block; we take the last, since reasoning before the summary may quote examples.
Free text in brackets is matched greedily, so `type [12] [a [b] c] [1]` types "a [b] c". Errors are ValueErrors
whose message is shown to the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from common.records import (
    Action,
    Click,
    CloseTab,
    GoBack,
    GoForward,
    Goto,
    Hover,
    NewTab,
    Press,
    Scroll,
    Select,
    Stop,
    TabFocus,
    Type,
)
from common.text import cut

_ID = r"\s*\[\s*([A-Za-z0-9_.:\-]+)\s*\]"  # an element id in brackets
_ID_RE = re.compile(r"[A-Za-z0-9_.:\-]+")
_TEXT = r"\s*\[(.*)\]"  # free text in brackets: greedy, so brackets inside the text are kept
_NOARG = re.compile(r"\s*(?:\[\s*\])?\s*")
_FORMS: dict[str, tuple[re.Pattern[str], ...]] = {
    "click": (re.compile(_ID + r"\s*"),),
    "hover": (re.compile(_ID + r"\s*"),),
    # the explicit Enter flag is tried first; without it WebArena presses Enter
    "type": (
        re.compile(_ID + _TEXT + r"\s*\[\s*(?:press_enter_after\s*=\s*)?([01])\s*\]\s*", re.S),
        re.compile(_ID + _TEXT + r"\s*", re.S),
    ),
    "select": (re.compile(_ID + _TEXT + r"\s*", re.S),),
    "press": (re.compile(_TEXT + r"\s*", re.S),),
    "scroll": (re.compile(r"\s*\[?\s*(?:direction\s*=\s*)?(up|down)\s*\]?\s*", re.I),),
    "goto": (re.compile(_TEXT + r"\s*", re.S),),
    "tab_focus": (re.compile(r"\s*\[\s*([0-9]{1,6})\s*\]\s*"),),
    "stop": (re.compile(r"\s*(?:\[(.*)\])?\s*", re.S),),
    **{k: (_NOARG,) for k in ("go_back", "go_forward", "new_tab", "close_tab")},
}
_USAGE = {
    "click": "click [id]", "hover": "hover [id]", "type": "type [id] [text] [0|1]", "select": "select [id] [option]",
    "press": "press [key_comb]", "scroll": "scroll [up|down]", "goto": "goto [url]", "tab_focus": "tab_focus [index]",
    "stop": "stop [answer]", "go_back": "go_back", "go_forward": "go_forward", "new_tab": "new_tab",
    "close_tab": "close_tab",
}  # fmt: skip
_KEYWORD_RE = re.compile(r"[A-Za-z_]+")
_KEYWORD_LINE_RE = re.compile(r"^[ \t]*(?:" + "|".join(_USAGE) + r")\b", re.M | re.I)
_FENCE_RE = re.compile(r"```(.*?)```", re.S)
_LANG_TAG_RE = re.compile(r"[ \t]*([A-Za-z0-9_+\-]*)[ \t]*\n")
_MAX_LINE_CANDIDATES = 16  # bounds the work on adversarial replies with thousands of keyword lines


def _build(kw: str, g: tuple[Any, ...]) -> Action:
    """The Action for keyword `kw` from the groups of its matched form."""
    if kw in ("click", "hover"):
        return (Click if kw == "click" else Hover)(element_id=g[0])
    if kw == "type":
        return Type(element_id=g[0], text=g[1], press_enter=(g[2] if len(g) > 2 else "1") == "1")
    if kw == "select":
        return Select(element_id=g[0], text=g[1])
    if kw == "press":
        key = re.sub(r"\s*\+\s*", "+", g[0].strip())  # "Control + a" -> "Control+a"
        if not key or re.search(r"\s", key):
            raise ValueError(f"press needs one key combination such as `press [Control+a]`, got {g[0]!r}")
        return Press(key=key)
    if kw == "scroll":
        return Scroll(direction=g[0].lower())
    if kw == "goto":
        url = g[0].strip()
        if not url or re.search(r"\s", url):
            raise ValueError(f"goto needs a URL without spaces, got {g[0]!r}")
        return Goto(url=url)
    if kw == "tab_focus":
        return TabFocus(tab_index=int(g[0]))
    if kw == "stop":
        return Stop(answer=g[0] or "")
    return {"go_back": GoBack, "go_forward": GoForward, "new_tab": NewTab, "close_tab": CloseTab}[kw]()


def _parse_webarena_line(s: str) -> Action:
    """One candidate string that must be exactly one action."""
    m = _KEYWORD_RE.match(s)
    kw = m.group(0).lower() if m else ""
    if kw not in _FORMS:
        shown = kw or cut(s, 20)
        raise ValueError(f"unknown action {shown!r}; expected one of: {', '.join(_USAGE.values())}")
    rest = s[m.end() :]  # type: ignore[union-attr]
    for form in _FORMS[kw]:
        fm = form.fullmatch(rest)
        if fm:
            return _build(kw, fm.groups())
    raise ValueError(f"malformed {kw}: expected `{_USAGE[kw]}`, got {cut(s, 80)!r}")


def _strip_lang_tag(block: str) -> str:
    """```python\\nclick [1]``` -> click [1]; a first line that is itself an action stays."""
    m = _LANG_TAG_RE.match(block)
    if m and m.group(1).lower() not in _USAGE:
        return block[m.end() :]
    return block


def _webarena_candidates(text: str) -> tuple[list[str], str | None]:
    """Candidate action strings in order of preference, and the fenced block's text (if any) for errors."""
    cands = [text.strip()]
    blocks = _FENCE_RE.findall(text)
    fenced = _strip_lang_tag(blocks[-1]).strip() if blocks else None
    if fenced is not None:
        cands.append(fenced)
    starts = [m.start() for m in _KEYWORD_LINE_RE.finditer(text)][-_MAX_LINE_CANDIDATES:]
    for start in reversed(starts):
        tail = text[start:].strip()
        cands += [tail, tail.split("\n", 1)[0].strip()]  # to the end (multi-line text), or the line alone
    return cands, fenced


def parse(text: str) -> Action:
    cands, fenced = _webarena_candidates(text)
    errors: list[str] = []
    for cand in cands:
        try:
            return _parse_webarena_line(cand)
        except ValueError as e:
            errors.append(str(e))
    if fenced is not None:
        try:
            _parse_webarena_line(fenced)
        except ValueError as e:
            raise ValueError(f"in the last ``` block: {e}") from None
    if len(cands) > 1:  # a keyword line was found: its own error is the most telling
        raise ValueError(errors[-1])
    raise ValueError(
        "no action found: end the reply with one action such as ```click [12]``` "
        f"(one of: {', '.join(_USAGE.values())})"
    )


def _checked(value: str, what: str, pattern: re.Pattern[str] | None = None) -> str:
    bad = (pattern is not None and not pattern.fullmatch(value)) or (
        pattern is None and re.search(r"\s", value)
    )
    if bad or not value:
        raise ValueError(f"{what} {value!r} cannot be written in the webarena grammar")
    return value


_RENDER: dict[str, Callable[[Any], str]] = {
    "click": lambda a: f"click [{_checked(a.element_id, 'element id', _ID_RE)}]",
    "hover": lambda a: f"hover [{_checked(a.element_id, 'element id', _ID_RE)}]",
    "type": lambda a: (
        f"type [{_checked(a.element_id, 'element id', _ID_RE)}] [{a.text}] [{int(a.press_enter)}]"
    ),
    "select": lambda a: f"select [{_checked(a.element_id, 'element id', _ID_RE)}] [{a.text}]",
    "press": lambda a: f"press [{_checked(a.key, 'key')}]",
    "scroll": lambda a: f"scroll [{a.direction}]",
    "goto": lambda a: f"goto [{_checked(a.url, 'url')}]",
    "tab_focus": lambda a: f"tab_focus [{a.tab_index}]",
    "stop": lambda a: f"stop [{a.answer}]",
    "go_back": lambda a: "go_back",
    "go_forward": lambda a: "go_forward",
    "new_tab": lambda a: "new_tab",
    "close_tab": lambda a: "close_tab",
}


def render(action: Action) -> str:
    if action.type == "tab_focus" and not 0 <= action.tab_index <= 999_999:
        raise ValueError(f"tab index {action.tab_index} cannot be written in the webarena grammar")
    return _RENDER[action.type](action)


ACTION_SPACE = """\
Page operation actions:
`click [id]`: click the element with the given id.
`type [id] [text] [0|1]`: clear the field with the given id and type the text into it; Enter is pressed afterwards \
unless the last argument is 0.
`select [id] [option]`: choose the option with the given text in the dropdown with the given id.
`hover [id]`: move the mouse over the element with the given id.
`press [key_comb]`: press a key combination, e.g. `press [Enter]`, `press [Control+a]`, `press [Meta+Shift+K]`.
`scroll [up|down]`: scroll the page up or down.

Tab actions:
`new_tab`: open a new, empty tab.
`tab_focus [index]`: switch to the tab with the given index (0 = the first).
`close_tab`: close the current tab.

Navigation actions:
`goto [url]`: open the given URL.
`go_back`: go back to the previous page.
`go_forward`: go forward again after a `go_back`.

Completion action:
`stop [answer]`: finish the task. If the task asks for information, put the answer in the brackets; if the task \
cannot be done, answer "N/A"; otherwise use `stop []`."""
