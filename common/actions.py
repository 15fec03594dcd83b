"""Model output <-> typed actions (common.records' Action union), in two surface grammars plus the thinking format.

- "webarena" (common/webarena_actions.py): `click [12]`, `type [5] [text] [0|1]`, `stop [answer]`, ... read from the
  last ``` fenced block (WebArena's "In summary, the next action I will perform is ```click [1234]```") or a bare
  action line.
- "webrl" (common/webrl_actions.py): WebRL's / WebAgent-R1's `do(action="Click", element="12")`,
  `exit(message="...")`, `go_backward()`, read with `ast` on literal arguments only: never evaluated.
- thinking format: `<think>...</think><answer>...</answer>`; the action is read from the (last) answer part.

The action classes are re-exported here, so `from common.actions import Click, parse_action` is enough.

    echo '{"text": "```click [12]```"}' | python -m common.actions parse --format webarena [--thinking]
    echo '{"type": "click", "element_id": "12"}' | python -m common.actions render --format webrl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from common import webarena_actions as _webarena
from common import webrl_actions as _webrl
from common.records import (
    ACTION_ADAPTER,
    ACTION_TYPES,
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
from common.records import action_from_json as action_from_json
from common.records import action_to_json as action_to_json

__all__ = [
    "ACTION_TYPES", "Action", "ActionParseError", "Click", "CloseTab", "GRAMMARS", "GoBack", "GoForward", "Goto",
    "Hover", "NewTab", "Press", "Scroll", "Select", "Stop", "TabFocus", "Type", "action_from_json",
    "action_space_text", "action_to_json", "parse_action", "render_action", "try_parse",
]  # fmt: skip

GRAMMARS = ("webarena", "webrl")


class ActionParseError(ValueError):
    """The model output holds no valid action; the message says why (it is shown to the model next turn)."""


# ---------------------------------------------------------------- public API


def parse_action(text: str, grammar: str = "webarena", thinking: bool = False) -> Action:
    """Parse one model reply into an Action; raises ActionParseError (with the reason) when there is none.

    `thinking=True` requires an <answer> part; without it, an <answer> part is still used when present.
    """
    if grammar not in GRAMMARS:
        raise ValueError(f"unknown grammar {grammar!r} (expected one of {', '.join(GRAMMARS)})")
    if not isinstance(text, str):
        raise ActionParseError(f"model output must be text, got {type(text).__name__}")
    body = _answer_part(text, thinking)
    try:
        return (_webarena if grammar == "webarena" else _webrl).parse(body)
    except ValidationError as e:  # a field the record refuses: still a parse failure, not a crash
        raise ActionParseError(f"invalid action fields: {e.errors()[0]['msg']}") from None
    except ValueError as e:  # the grammar modules' errors
        raise ActionParseError(str(e)) from None


def try_parse(
    text: str, grammar: str = "webarena", thinking: bool = False
) -> tuple[Action | None, str | None]:
    """(action, None) on success, (None, why) on a parse failure."""
    try:
        return parse_action(text, grammar, thinking), None
    except ActionParseError as e:
        return None, str(e)


def render_action(action: Action, grammar: str = "webarena") -> str:
    """The action as the model would write it (the inverse of parse_action, without fences or thinking)."""
    if grammar == "webarena":
        return _webarena.render(action)
    if grammar == "webrl":
        return _webrl.render(action)
    raise ValueError(f"unknown grammar {grammar!r} (expected one of {', '.join(GRAMMARS)})")


def action_space_text(grammar: str = "webarena") -> str:
    """The action-space description for the system prompt."""
    if grammar == "webarena":
        return _webarena.ACTION_SPACE
    if grammar == "webrl":
        return _webrl.ACTION_SPACE
    raise ValueError(f"unknown grammar {grammar!r} (expected one of {', '.join(GRAMMARS)})")


# ---------------------------------------------------------------- thinking format

_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_ANSWER_OPEN_RE = re.compile(r"<answer>", re.I)


def _answer_part(text: str, thinking: bool) -> str:
    closed = _ANSWER_RE.findall(text)
    if closed:
        return closed[-1]
    opened = list(_ANSWER_OPEN_RE.finditer(text))
    if opened:  # cut off before </answer> (length limit or a stop string): the rest is the answer
        return text[opened[-1].end() :]
    if thinking:
        raise ActionParseError(
            "no <answer>...</answer> part: reply as <think>...</think><answer>ACTION</answer>"
        )
    return text


# ---------------------------------------------------------------- command line


def _cli_line(line: str, fn: Callable[[dict[str, Any]], dict[str, Any]], n: int) -> dict[str, Any]:
    """One input line -> one output object; malformed input is an error object, never a crash."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        return {"error": f"line {n}: not JSON: {e.msg}"}
    if not isinstance(data, dict):
        return {"error": f"line {n}: expected a JSON object"}
    try:
        return fn(data)
    except ValidationError as e:  # a bad canonical action: name the field, skip pydantic's long banner
        return {
            "error": "; ".join(f"{'.'.join(map(str, x['loc'])) or 'action'}: {x['msg']}" for x in e.errors())
        }
    except (ValueError, TypeError) as e:  # ActionParseError, unrenderable values
        return {"error": str(e).strip()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m common.actions", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parse", help='JSON lines {"text": ...} -> canonical action JSON or {"error": ...}')
    r = sub.add_parser("render", help='JSON lines of canonical actions -> {"text": ...} or {"error": ...}')
    for sp in (p, r):
        sp.add_argument("--format", choices=GRAMMARS, default="webarena", help="action grammar")
    p.add_argument("--thinking", action="store_true", help="require <think>..</think><answer>..</answer>")
    args = ap.parse_args(argv)

    def do_parse(d: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(d.get("text"), str):
            return {"error": 'expected {"text": "<model output>"}'}
        return parse_action(d["text"], args.format, args.thinking).model_dump()

    def do_render(d: dict[str, Any]) -> dict[str, Any]:
        return {"text": render_action(ACTION_ADAPTER.validate_python(d), args.format)}

    fn = do_parse if args.cmd == "parse" else do_render
    for n, line in enumerate(sys.stdin, 1):
        out = _cli_line(line, fn, n)
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
