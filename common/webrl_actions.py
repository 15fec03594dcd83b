"""WebRL's / WebAgent-R1's call grammar: `do(action="Click", element="12")`, `exit(message="...")`, `go_backward()`.

Used through common.actions (parse_action / render_action with grammar="webrl"). The call is located in the reply
(the last `do(` / `exit(` / `go_backward(` / `go_forward(` whose parentheses close), then read with
`ast.parse(mode="eval")`: only a call of an allowed bare name whose arguments are literal strings, integers or None
is accepted. Nothing is ever evaluated. Errors are ValueErrors whose message is shown to the model.

Mapping to our actions: "Type" types without Enter, "Search" is "Type" plus Enter (as WebRL defines it), "Press Enter"
is Press(Enter); beyond WebRL's list we accept "Press" (argument = key combination), "Goto" (argument = URL),
"Go Back" / "Go Forward", "New Tab", "Close Tab" and "Switch Tab" (argument = tab index), so that every Action has a
spelling. WebRL's "Right Click" and "Wait" have no Action here and are refused with a reason.
"""

from __future__ import annotations

import ast
import json
import re
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

_CALL_START_RE = re.compile(r"\b(do|exit|go_backward|go_forward)\s*\(")
_ID_RE = re.compile(r"[A-Za-z0-9_.:\-]+")
_MAX_CALLS = 16  # calls tried from the end: bounds the work on adversarial replies
_USAGE = 'expected do(action="...", argument="...", element="..."), exit(message="..."), go_backward() or go_forward()'
_UNSUPPORTED = {"right click", "wait"}


def parse(text: str) -> Action:
    """The last well-formed call in `text` as an Action; ValueError with the reason otherwise."""
    starts = list(_CALL_START_RE.finditer(text))
    if not starts:
        raise ValueError(f"no action call found: {_USAGE}")
    why = "unbalanced parentheses"
    for m in reversed(starts[-_MAX_CALLS:]):
        end = _call_end(text, m.end() - 1)
        if end is None:
            continue
        try:
            node = ast.parse(text[m.start() : end], mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            why = getattr(e, "msg", None) or str(e)
            continue
        return _to_action(node)  # the last well-formed call is the action, valid or not
    raise ValueError(f"no well-formed action call ({why}): {_USAGE}")


def _call_end(text: str, open_idx: int) -> int | None:
    """Index just past the parenthesis that closes the one at `open_idx`, skipping quoted strings."""
    depth, i, quote = 0, open_idx, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _literal(node: ast.expr) -> str | int | None:
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) in (str, int)):
        return node.value
    raise ValueError("action arguments must be literal strings or numbers")


def _arguments(call: ast.Call, params: tuple[str, ...]) -> dict[str, Any]:
    """Bind positional and keyword literals to `params`, refusing unknown or repeated names."""
    name = call.func.id  # type: ignore[attr-defined]
    if len(call.args) > len(params):
        raise ValueError(f"{name}() takes at most {len(params)} arguments ({', '.join(params) or 'none'})")
    bound: dict[str, Any] = {}
    for p, a in zip(params, call.args, strict=False):  # more args than params was refused above
        if isinstance(a, ast.Starred):
            raise ValueError("*args are not allowed")
        bound[p] = _literal(a)
    for kw in call.keywords:
        if kw.arg is None:
            raise ValueError("**kwargs are not allowed")
        if kw.arg not in params:
            raise ValueError(
                f"{name}() got an unknown argument {kw.arg!r} (allowed: {', '.join(params) or 'none'})"
            )
        if kw.arg in bound:
            raise ValueError(f"{name}() got {kw.arg!r} twice")
        bound[kw.arg] = _literal(kw.value)
    return {k: v for k, v in bound.items() if v is not None}


def _to_action(node: ast.expr) -> Action:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain function call: {_USAGE}")
    name = node.func.id
    if name in ("go_backward", "go_forward"):
        _arguments(node, ())
        return GoBack() if name == "go_backward" else GoForward()
    if name == "exit":
        return Stop(answer=str(_arguments(node, ("message",)).get("message", "")))
    return _do(_arguments(node, ("action", "argument", "element")))


def _element(args: dict[str, Any], action: str) -> str:
    if "element" not in args:
        raise ValueError(f'do(action="{action}") needs element="<id>"')
    el = str(args["element"]).strip()
    if not _ID_RE.fullmatch(el):
        raise ValueError(f'element must be an element id such as "12", got {args["element"]!r}')
    return el


def _argument(args: dict[str, Any], action: str) -> str:
    if "argument" not in args:
        raise ValueError(f'do(action="{action}") needs argument="..."')
    return str(args["argument"])


def _do(args: dict[str, Any]) -> Action:
    if not isinstance(args.get("action"), str):
        raise ValueError('do() needs action="<name>" as a string')
    raw = args["action"]
    act = " ".join(raw.split()).lower()
    if act in ("click", "hover"):
        return (Click if act == "click" else Hover)(element_id=_element(args, raw))
    if act in ("type", "search"):
        return Type(element_id=_element(args, raw), text=_argument(args, raw), press_enter=act == "search")
    if act == "select dropdown option":
        return Select(element_id=_element(args, raw), text=_argument(args, raw))
    if act in ("scroll up", "scroll down"):
        return Scroll(direction=act.split()[1])
    if act == "press enter":
        return Press(key="Enter")
    if act in ("press", "press key"):
        key = _argument(args, raw).strip()
        if not key or re.search(r"\s", key):
            raise ValueError(f'press needs one key combination such as "Control+a", got {key!r}')
        return Press(key=key)
    if act in ("goto", "go to"):
        url = _argument(args, raw).strip()
        if not url or re.search(r"\s", url):
            raise ValueError(f"goto needs a URL without spaces, got {url!r}")
        return Goto(url=url)
    if act == "switch tab":
        index = str(_argument(args, raw)).strip()
        if not re.fullmatch(r"[0-9]{1,6}", index):
            raise ValueError(f"switch tab needs a tab index (0, 1, ...), got {index!r}")
        return TabFocus(tab_index=int(index))
    simple = {"go back": GoBack, "go backward": GoBack, "go forward": GoForward, "new tab": NewTab,
              "close tab": CloseTab}  # fmt: skip
    if act in simple:
        return simple[act]()
    if act in _UNSUPPORTED:
        raise ValueError(f'"{raw}" is not supported here; use one of: {", ".join(_NAMES)}')
    raise ValueError(f'unknown action "{raw}"; use one of: {", ".join(_NAMES)}')


_NAMES = ("Click", "Type", "Search", "Hover", "Scroll Up", "Scroll Down", "Press Enter", "Press",
          "Select Dropdown Option", "Goto", "Go Back", "Go Forward", "New Tab", "Close Tab", "Switch Tab")  # fmt: skip


def _q(s: str) -> str:
    """A Python string literal for `s` (JSON's escapes are all valid Python escapes; no raw newlines)."""
    return json.dumps(s, ensure_ascii=False)


def render(action: Action) -> str:
    """The call a model would write for `action`; parse(render(a)) == a."""
    t = action.type
    if t in ("click", "hover"):
        return f"do(action={_q(t.capitalize())}, element={_q(_checked_id(action.element_id))})"
    if t == "type":
        name = "Search" if action.press_enter else "Type"
        return (
            f"do(action={_q(name)}, argument={_q(action.text)}, element={_q(_checked_id(action.element_id))})"
        )
    if t == "select":
        el = _q(_checked_id(action.element_id))
        return f'do(action="Select Dropdown Option", argument={_q(action.text)}, element={el})'
    if t == "scroll":
        return f'do(action="Scroll {action.direction.capitalize()}")'
    if t == "press":
        return (
            'do(action="Press Enter")'
            if action.key == "Enter"
            else f'do(action="Press", argument={_q(action.key)})'
        )
    if t == "goto":
        return f'do(action="Goto", argument={_q(action.url)})'
    if t == "tab_focus":
        if not 0 <= action.tab_index <= 999_999:
            raise ValueError(f"tab index {action.tab_index} cannot be written in the webrl grammar")
        return f'do(action="Switch Tab", argument="{action.tab_index}")'
    if t == "stop":
        return f"exit(message={_q(action.answer)})"
    return {"go_back": "go_backward()", "go_forward": "go_forward()", "new_tab": 'do(action="New Tab")',
            "close_tab": 'do(action="Close Tab")'}[t]  # fmt: skip


def _checked_id(element_id: str) -> str:
    if not _ID_RE.fullmatch(element_id):
        raise ValueError(f"element id {element_id!r} cannot be written in the webrl grammar")
    return element_id


ACTION_SPACE = """\
Write exactly one action per reply as one line of Python-style code using these functions:

do(action, argument, element): one browsing operation.
  action: one of "Click", "Type", "Search", "Hover", "Scroll Up", "Scroll Down", "Press Enter", "Press",
    "Select Dropdown Option", "Goto", "Go Back", "Go Forward", "New Tab", "Close Tab", "Switch Tab".
  argument: the text to type ("Type", "Search"), the option ("Select Dropdown Option"), the key combination
    ("Press", e.g. "Control+a"), the URL ("Goto") or the tab index ("Switch Tab"). "Search" is "Type" plus Enter.
  element: the id of the element in the page ("Click", "Type", "Search", "Hover", "Select Dropdown Option").
exit(message): finish the task; if the task asks for information, give the answer in message ("N/A" if impossible).
go_backward(): go back to the previous page.
go_forward(): go forward again.

Examples:
# Element: the 'REPORTS' link in the left menu
do(action="Click", element="7")
# Element: the search box
do(action="Search", argument="wireless headphones", element="13")
do(action="Select Dropdown Option", argument="Month", element="20")
do(action="Scroll Down")
exit(message="The best-selling product is the blue mug.")"""
