"""The pieces every task template is made of: `Template`, `Instance`, seeded-data access, and config builders.

A template turns seeded rows into WebArena configs. Its `instances(db)` reads the seeded database (read-only) and
returns `Instance`s: the `instantiation_dict` (`values`) plus whatever reference data the checks and the expert
need (`data`), so reference answers are right by construction. `build(inst)` makes the WebArena config dict, and
`solve(inst)` returns the expert's script (a list of `sites.tasks.steps` steps) for that instance.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from common.sites import SITE_PLACEHOLDERS

Kind = Literal["info", "state", "nav"]
TASK_ID_STRIDE = 1000  # task_id = template id * stride + instance index: stable whatever the split


@dataclass
class Instance:
    """One instantiation of a template: the intent's values and the computed reference data."""

    template_id: int
    index: int
    values: dict[str, Any]
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def task_id(self) -> int:
        return self.template_id * TASK_ID_STRIDE + self.index


class SeedData:
    """Read-only connections to the seeded databases, opened on first use (`db.conn("shop")`)."""

    def __init__(self, data_dir: Path | str | None = None) -> None:
        from sites.server import default_data_dir

        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self._conns: dict[str, sqlite3.Connection] = {}
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """A value computed once per SeedData (candidate lists several templates share)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def _groups(self) -> dict[str, Any]:
        from sites.core import load_sites

        return {spec.db.name: spec.db for spec in load_sites(None)}

    def path(self, group: str) -> Path:
        from sites.server import ensure_seed

        if group not in self._groups:
            raise KeyError(f"no site package provides the database group {group!r}")
        return ensure_seed(self._groups[group], self.data_dir)

    def conn(self, group: str) -> sqlite3.Connection:
        if group not in self._conns:
            conn = sqlite3.connect(f"file:{self.path(group)}?mode=ro", uri=True, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            self._conns[group] = conn
        return self._conns[group]

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()


@dataclass(frozen=True)
class Template:
    """A task template. `build(inst)` gives the `eval` part plus `start`; the config around it is standard."""

    id: int
    site: str
    intent_template: str
    kind: Kind
    eval_types: tuple[str, ...]
    instances: Callable[[SeedData], list[Instance]]
    evaluate: Callable[[Instance], dict[str, Any]]  # -> the config's `eval` dict
    solve: Callable[[Instance], list[Any]]  # -> the expert's script (sites.tasks.steps)
    start_path: str | Callable[[Instance], str] = "/"
    held_out: bool = False  # every instance goes to the test split
    require_login: bool = True

    def intent(self, inst: Instance) -> str:
        text = self.intent_template
        for key, value in inst.values.items():
            text = text.replace("{{" + key + "}}", str(value))
        if "{{" in text:
            raise ValueError(f"template {self.id}: unfilled variable in {text!r}")
        return text

    def build(self, inst: Instance) -> dict[str, Any]:
        """The WebArena config dict of one instance (placeholders unfilled)."""
        path = self.start_path(inst) if callable(self.start_path) else self.start_path
        ev = self.evaluate(inst)
        if tuple(ev["eval_types"]) != self.eval_types:
            raise ValueError(
                f"template {self.id}: eval types {ev['eval_types']} != declared {self.eval_types}"
            )
        return {
            "sites": [self.site],
            "task_id": inst.task_id,
            "require_login": self.require_login,
            "storage_state": f"./.auth/{self.site}_state.json" if self.require_login else None,
            "start_url": site_url(self.site, path),
            "geolocation": None,
            "intent_template": self.intent_template,
            "instantiation_dict": dict(inst.values),
            "intent": self.intent(inst),
            "require_reset": False,
            "eval": ev,
            "intent_template_id": self.id,
        }


def site_url(site: str, path: str) -> str:
    """`__SHOPPING__` + path (path "/" gives the bare placeholder, as WebArena writes start URLs)."""
    return SITE_PLACEHOLDERS[site] + ("" if path in ("", "/") else path)


# -- eval dict builders (WebArena's field order and empty values) ------------------------------------------------
def string_eval(
    *,
    exact: str | None = None,
    include: list[str] | None = None,
    fuzzy: list[str] | None = None,
    note: str = "",
    raw: str = "",
) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    if exact is not None:
        answers["exact_match"] = exact
    if include is not None:
        answers["must_include"] = include
    if fuzzy is not None:
        answers["fuzzy_match"] = fuzzy
    if not answers:
        raise ValueError("string_eval needs a reference answer")
    return {
        "eval_types": ["string_match"],
        "reference_answers": answers,
        "reference_url": "",
        "program_html": [],
        "string_note": note,
        "reference_answer_raw_annotation": raw or _raw(answers),
    }


def _raw(answers: dict[str, Any]) -> str:
    parts = []
    for v in answers.values():
        parts += v if isinstance(v, list) else [v]
    return ", ".join(str(p) for p in parts)


def url_eval(reference_url: str, note: str = "GOLD in PRED") -> dict[str, Any]:
    return {
        "eval_types": ["url_match"],
        "reference_answers": None,
        "reference_url": reference_url,
        "program_html": [],
        "url_note": note,
    }


def target(
    url: str,
    locator: str,
    *,
    exact: str | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    prep: list[str] | None = None,
) -> dict[str, Any]:
    """One program_html target."""
    contents: dict[str, Any] = {}
    if exact is not None:
        contents["exact_match"] = exact
    if include is not None:
        contents["must_include"] = include
    if exclude is not None:
        contents["must_exclude"] = exclude
    out: dict[str, Any] = {"url": url, "locator": locator, "required_contents": contents}
    if prep:
        out["prep_actions"] = prep
    return out


def html_eval(*targets: dict[str, Any], reference_url: str = "") -> dict[str, Any]:
    types = ["url_match", "program_html"] if reference_url else ["program_html"]
    ev: dict[str, Any] = {
        "eval_types": types,
        "reference_answers": None,
        "reference_url": reference_url,
        "program_html": list(targets),
    }
    if reference_url:
        ev["url_note"] = "GOLD in PRED"
    return ev


def js_string(text: str) -> str:
    """A JavaScript string literal for text embedded in a locator (no eval anywhere: the page runs it)."""
    import json

    return json.dumps(text)


def money(x: float) -> str:
    """How the pages print an amount: $1,234.50."""
    return f"${x:,.2f}"


def pick(rows: list[Any], n: int, seed: int) -> list[Any]:
    """A deterministic sample of n rows (all of them when there are fewer), in a stable order."""
    import random

    rows = list(rows)
    if len(rows) <= n:
        return rows
    return random.Random(seed).sample(rows, n)
