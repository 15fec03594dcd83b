"""The MiniWoB++ task list: which tasks, which seeds, and their configs in the project's (WebArena-JSON) format.

    from sites.miniwob.tasks import load_split
    tasks = load_split("train")            # list[common.tasks.Task], start URLs with __MINIWOB__ unfilled
    python -m sites.miniwob tasks --split test --out test.json

A task config is one (task page, seed) pair: `miniwob: {task, seed}` tells the browser actor how to start it,
`eval_types: ["miniwob"]` tells the reward actor to score the page's own reward, and `intent` is the instruction
the page generates for that seed (read once from the pages by `python -m sites.miniwob utterances`, stored in
utterances.json, one line per task; the browser actor checks it against the page at every reset).

Seeds: train seeds are 0..499 and test seeds 100000..100049 for every task, so the splits never share a seed; the
gap between them leaves room to grow either split. Any seed outside the train range is held out:
`seed_tasks` builds the configs of explicit seeds (`python -m rollout_workers.evaluate --seeds`), reading from
the pages the instructions the stored table lacks. Tasks whose problem space is tiny (click-test has one problem)
show the same problem in both; the split is over seeds, as in BrowserGym, not over problems.

The subset (TASKS) holds the tasks that can be solved from a text observation with element actions. EXCLUDED says
why each other task of the package is left out.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

UTTERANCES = Path(__file__).with_name("utterances.json")
SITE = "miniwob"
PLACEHOLDER = "__MINIWOB__"
SPLITS = ("train", "test")
# Train and test seeds are far apart so that growing either split never makes them share a seed; every seed
# outside the train range is held out (rollout_workers.evaluate --seeds takes any of them).
SEEDS = {"train": tuple(range(500)), "test": tuple(range(100_000, 100_050))}
# The page compares the seed it was started with, and JavaScript numbers hold integers exactly up to 2**53 - 1.
MAX_SEED = 2**53 - 1
# An explicit seed list is read (and evaluated) seed by seed: a typo like 100000-1000000 should fail, not run.
MAX_EXPLICIT_SEEDS = 10_000

# Instructions read from the pages in this process (task -> seed -> instruction): a run that checks its
# evaluation seeds before it starts (preflight) and plays them later reads each page once.
_READ: dict[str, dict[str, str]] = {}

# name -> what the agent does (one line each; the page's own instruction varies per seed)
TASKS: dict[str, str] = {
    "click-button": "click the button with the given label",
    "click-button-sequence": "click two buttons in order",
    "click-checkboxes": "tick the named checkboxes, submit",
    "click-checkboxes-large": "tick many named checkboxes, submit",
    "click-checkboxes-soft": "tick the synonyms of the given words, submit",
    "click-checkboxes-transfer": "tick the named checkboxes (or none), submit",
    "click-collapsible": "expand a section, submit",
    "click-collapsible-nodelay": "expand a section, submit (no animation)",
    "click-collapsible-2": "expand sections to find a link",
    "click-collapsible-2-nodelay": "expand sections to find a link (no animation)",
    "click-dialog": "close a dialog",
    "click-dialog-2": "click a dialog's button",
    "click-link": "click a named link in a paragraph",
    "click-option": "choose the named radio button, submit",
    "click-scroll-list": "choose items in a scroll list, submit",
    "click-tab": "click the named tab",
    "click-tab-2": "switch tabs to find a link",
    "click-tab-2-easy": "switch tabs to find a link (one tab)",
    "click-tab-2-medium": "switch tabs to find a link (two tabs)",
    "click-tab-2-hard": "switch tabs to find a link (more tabs, unnamed)",
    "click-test": "click the only button",
    "click-test-2": "click one of two buttons",
    "click-test-transfer": "click one of two buttons (other wording)",
    "click-widget": "click a widget of the given kind",
    "button-delay": "click a button, wait, click another",
    "ascending-numbers": "click numbers in ascending order",
    "navigate-tree": "open folders to find a file",
    "unicode-test": "click a button with a non-ASCII label",
    "buy-ticket": "book the cheapest or shortest ticket",
    "odd-or-even": "mark numbers odd or even, submit",
    "generate-number": "generate numbers until one fits, submit",
    "enter-text": "type a word, submit",
    "enter-text-2": "type a word in another case, submit",
    "enter-text-dynamic": "type a random word, submit",
    "enter-password": "type a password twice, submit",
    "enter-date": "type a date into a date field, submit",
    "enter-time": "type a time into a time field, submit",
    "login-user": "type user name and password, log in",
    "login-user-popup": "log in, closing a pop-up that may appear",
    "focus-text": "focus a text box",
    "focus-text-2": "focus the n-th text box",
    "find-word": "copy the n-th word of a paragraph, submit",
    "read-table": "copy a value from a table, submit",
    "read-table-2": "copy two values from a table, submit",
    "simple-arithmetic": "solve a sum, submit",
    "simple-algebra": "solve for x, submit",
    "copy-paste": "copy a text area into a text box, submit",
    "copy-paste-2": "copy the n-th text area into a text box, submit",
    "text-transform": "type the shown characters, submit",
    "use-autocomplete": "enter an item through an autocomplete box",
    "use-autocomplete-nodelay": "enter an item through an autocomplete box (no delay)",
    "use-spinner": "set a spinner to a value, submit",
    "guess-number": "guess a number from higher / lower feedback",
    "terminal": "delete a file in a toy terminal",
    "choose-list": "choose an item in a dropdown, submit",
    "form-sequence-2": "tick a radio button, type into the n-th box, submit",
    "form-sequence-3": "choose from a dropdown, click a button",
    "multi-layouts": "fill a search form in one of several layouts",
    "multi-orderings": "fill a search form whose fields are shuffled",
    "search-engine": "search, page through results, click the n-th",
}

_COORDS = "needs mouse coordinates (no element to act on)"
_DRAG = "needs a mouse drag"
_VISUAL = "the answer is only in colours or shapes that the text observation does not show"
_ICONS = "icon-only buttons (star, trash, send, reply, retweet) carry no text or label in the page"
EXCLUDED: dict[str, str] = {
    **{
        t: _COORDS
        for t in ("bisect-angle", "circle-center", "right-angle", "find-midpoint", "grid-coordinate")
    },
    **{t: _COORDS for t in ("hot-cold", "chase-circle", "moving-items", "hover-shape", "tic-tac-toe")},
    **{t: "drawing with the mouse" for t in ("draw-circle", "draw-line")},
    **{
        t: _DRAG
        for t in (
            "drag-box",
            "drag-circle",
            "drag-cube",
            "drag-items",
            "drag-items-grid",
            "drag-shapes",
            "drag-shapes-2",
            "drag-single-shape",
            "drag-sort-numbers",
            "resize-textarea",
            "use-slider",
            "use-slider-2",
            "form-sequence",
        )
    },
    **{
        t: _VISUAL
        for t in (
            "click-color",
            "click-shades",
            "click-shape",
            "count-shape",
            "count-sides",
            "identify-shape",
            "visual-addition",
            "use-colorwheel",
            "use-colorwheel-2",
            "number-checkboxes",
            "find-greatest",
            "click-pie",
            "click-pie-nodelay",
        )
    },
    **{
        t: _ICONS
        for t in (
            "email-inbox",
            "email-inbox-delete",
            "email-inbox-important",
            "email-inbox-star-reply",
            "email-inbox-nl-turk",
            "email-inbox-reply",
            "email-inbox-noscroll",
            "email-inbox-forward",
            "email-inbox-forward-nl",
            "email-inbox-forward-nl-turk",
            "social-media",
            "social-media-all",
            "social-media-some",
            "text-editor",
        )
    },
    **{t: "text selection with the mouse" for t in ("highlight-text", "highlight-text-2")},
    "simon-says": "memorising a sequence of flashes shown over time",
    "stock-market": "waiting for a price that changes with wall-clock time",
    "click-menu": "submenus open on a hover timer that ends after the page has settled",
    "click-menu-2": "submenus open on a hover timer that ends after the page has settled",
    **{
        t: "a calendar widget overlays the form; a typed date is not what the task reads"
        for t in ("choose-date", "choose-date-easy", "choose-date-medium", "choose-date-nodelay")
    },
    "book-flight": "a calendar widget (as choose-date) and autocomplete in one long form",
    "book-flight-nodelay": "a calendar widget (as choose-date) and autocomplete in one long form",
    "daily-calendar": "creating an event needs a drag over the day grid",
    "phone-book": "the clickable fields are <a> elements without href, which get no id in the observation",
    "order-food": "the +/- quantity controls carry no text or label",
    "scroll-text": "the observation cuts a text area at 400 characters, before its last word",
    "scroll-text-2": "scrolling inside a text area",
    "sign-agreement": "half of its problems need scrolling inside a disabled text area before it unlocks",
}


@lru_cache(maxsize=1)
def utterances() -> dict[str, dict[str, str]]:
    """task -> seed (as text) -> instruction, as generated by `python -m sites.miniwob utterances`."""
    if not UTTERANCES.is_file():
        raise FileNotFoundError(f"{UTTERANCES} is missing: run python -m sites.miniwob utterances")
    return json.loads(UTTERANCES.read_text(encoding="utf-8"))


def task_id(name: str, seed: int) -> str:
    return f"miniwob.{name}.{seed}"


def config(name: str, seed: int, intent: str) -> dict[str, Any]:
    """The WebArena-format config of one (task, seed)."""
    return {
        "sites": [SITE],
        "task_id": task_id(name, seed),
        "require_login": False,
        "storage_state": None,
        "start_url": f"{PLACEHOLDER}/miniwob/{name}.html",
        "geolocation": None,
        "intent_template": "",
        "instantiation_dict": {"task": name, "seed": seed},
        "intent": intent,
        "require_reset": False,
        "eval": {
            "eval_types": ["miniwob"],
            "reference_answers": None,
            "reference_url": "",
            "program_html": [],
        },
        "intent_template_id": f"miniwob.{name}",
        "miniwob": {"task": name, "seed": seed},
    }


def checked_names(names: list[str] | None) -> list[str]:
    """`names` (default: all of TASKS), refused with each unknown name's reason."""
    names = list(names) if names else list(TASKS)
    unknown = [n for n in names if n not in TASKS]
    if unknown:
        why = "; ".join(
            f"{n}: {EXCLUDED[n]}" if n in EXCLUDED else f"{n}: not a MiniWoB++ task" for n in unknown
        )
        raise ValueError(f"not in the MiniWoB++ task list: {why}")
    return names


def _configs(seeds: list[int], names: list[str], table: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    """Configs seed by seed then task by task (so `eval.max_tasks` keeps every task), intents from `table`."""
    out = []
    for seed in seeds:
        for name in names:
            intent = table.get(name, {}).get(str(seed))
            if intent is None:
                raise KeyError(f"no instruction for {name} seed {seed} in {UTTERANCES.name}: regenerate it")
            out.append(config(name, seed, intent))
    return out


def split_configs(split: str, names: list[str] | None = None) -> list[dict[str, Any]]:
    """Configs of one split, seed by seed then task by task, `names` selecting tasks (default: all of TASKS)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return _configs(list(SEEDS[split]), checked_names(names), utterances())


def parse_seeds(text: str) -> list[int]:
    """Seeds from comma-separated integers and inclusive ranges, e.g. "100000-100019,100100", in the order given,
    a repeated seed once. ValueError naming the part that is not a seed or a range."""
    out: dict[int, None] = {}
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        lo, hi = (int(m[1]), int(m[2] or m[1])) if m else (0, -1)
        if not m or hi < lo or hi > MAX_SEED:
            raise ValueError(
                f"{part.strip()!r} is not a seed or a range: expected comma-separated integers 0..{MAX_SEED} "
                "and ranges LOW-HIGH with LOW <= HIGH, e.g. 100000-100019,100100"
            )
        if len(out) + hi - lo + 1 > MAX_EXPLICIT_SEEDS:
            raise ValueError(f"{text!r} names more than {MAX_EXPLICIT_SEEDS} seeds, the most one run takes")
        out.update(dict.fromkeys(range(lo, hi + 1)))
    return list(out)


def check_held_out(seeds: list[int]) -> None:
    """ValueError naming the seeds of `seeds` that are train seeds: an evaluation on them is not held out."""
    train = SEEDS["train"]
    inside = [s for s in seeds if train[0] <= s <= train[-1]]
    if inside:
        shown = ", ".join(map(str, inside[:5])) + (f" and {len(inside) - 5} more" if len(inside) > 5 else "")
        raise ValueError(
            f"{shown} {'is a train seed' if len(inside) == 1 else 'are train seeds'} (train is "
            f"{train[0]}..{train[-1]}); any seed outside it is held out, e.g. the test seeds "
            f"{SEEDS['test'][0]}-{SEEDS['test'][-1]}"
        )


def seed_configs(
    seeds: list[int], names: list[str] | None = None, url: str | None = None
) -> list[dict[str, Any]]:
    """Configs of explicit held-out seeds (any outside the train range), seed by seed then task by task. The
    instructions the stored table lacks are read from the pages now (`sites.miniwob.instructions`, on the server
    at `url`, or one started for the call)."""
    check_held_out(seeds)
    names = checked_names(names)
    table = {n: {**utterances().get(n, {}), **_READ.get(n, {})} for n in names}
    missing = {n: [s for s in seeds if str(s) not in table[n]] for n in names}
    missing = {n: s for n, s in missing.items() if s}
    if missing:
        from sites.miniwob.instructions import read_instructions

        for n, got in read_instructions(missing, url=url).items():
            table[n].update(got)
            _READ.setdefault(n, {}).update(got)
    return _configs(seeds, names, table)


def load_split(split: str, names: list[str] | None = None) -> list[Any]:
    """The tasks of a split as `common.tasks.Task` objects (placeholders unfilled). Called by the run stack."""
    from common.tasks import Task

    return [Task.model_validate(c) for c in split_configs(split, names)]


def seed_tasks(seeds: list[int], names: list[str] | None = None, url: str | None = None) -> list[Any]:
    """`seed_configs` as `common.tasks.Task` objects (placeholders unfilled). Called by the evaluator's --seeds."""
    from common.tasks import Task

    return [Task.model_validate(c) for c in seed_configs(seeds, names, url)]
