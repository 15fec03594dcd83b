"""WebArena's task-config schema, loading, placeholder substitution, and a validator CLI.

The schema follows WebArena / WebArena-Lite configs field by field; unknown fields are kept (extra="allow") so a
config re-serialises without loss. A task knows how it starts (`start_url`, `require_login`, `storage_state`) and
how it is judged (`eval`).

    python -m common.tasks validate FILE...     # a list of configs or one config per file: the schema, named
                                                # by file, task id and field; `python -m reward validate` also
                                                # builds each task's reward plan (reward sits above common)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from common.sites import SITE_PLACEHOLDERS, placeholder

# WebArena's placeholders, in the order they are substituted (__SHOPPING_ADMIN__ before __SHOPPING__).
PLACEHOLDERS = tuple(SITE_PLACEHOLDERS.values())


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class RequiredContents(_Open):
    exact_match: str | None = None
    must_include: list[str] | str | None = None
    must_exclude: list[str] | str | None = None
    fuzzy_match: list[str] | str | None = None
    required_values: list[str] | str | None = None


class ProgramHtml(_Open):
    url: str = Field(description="'last', an absolute URL, or a func: helper call")
    locator: str = Field("", description="'' (whole page), document... JavaScript, or a func: helper call")
    required_contents: RequiredContents
    prep_actions: list[str] | None = None


class ReferenceAnswers(_Open):
    exact_match: str | None = None
    must_include: list[str] | str | None = None
    fuzzy_match: list[str] | str | None = None


class EvalSpec(_Open):
    eval_types: list[str]
    reference_answers: ReferenceAnswers | None = None
    reference_url: str | None = ""
    program_html: list[ProgramHtml] | None = Field(default_factory=list)
    string_note: str | None = None
    url_note: str | None = None
    reference_answer_raw_annotation: str | None = None


class MiniwobSpec(BaseModel):
    """How a MiniWoB++ episode starts: which task page, the seed of its RNG, and its in-page clock."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="the task page's name, e.g. click-button (served as miniwob/<task>.html)")
    seed: int = Field(description="seed of the page's RNG (Math.seedrandom), which fixes the problem")
    episode_max_time_ms: int = Field(
        1_000_000, gt=0, description="the page's episode clock (MiniWoB++: 10 s; BrowserGym's default here)"
    )


class Task(_Open):
    sites: list[str]
    task_id: int | str
    require_login: bool = False
    storage_state: str | None = None
    start_url: str
    geolocation: Any = None
    intent_template: str = ""
    instantiation_dict: dict[str, Any] = Field(default_factory=dict)
    intent: str
    require_reset: bool = False
    eval: EvalSpec
    intent_template_id: int | str | None = None
    miniwob: MiniwobSpec | None = Field(
        None, description="set for a MiniWoB++ task (environment.kind=miniwob)"
    )

    def to_config(self) -> dict[str, Any]:
        """The WebArena config dict, unknown fields included, explicit nulls preserved."""
        return self.model_dump(mode="json", exclude_unset=True)

    def with_urls(self, urls: dict[str, str]) -> Task:
        """A copy with every placeholder (`__SHOPPING__` ...) replaced from `urls` (keys with or without the
        underscores); placeholders missing from `urls` are left as they are."""
        return Task.model_validate(fill_placeholders(self.to_config(), urls))


def fill_placeholders(obj: Any, urls: dict[str, str]) -> Any:
    """Replace placeholders in every string of a JSON-like object; trailing slashes of the URLs are dropped."""
    table = {placeholder(k): v.rstrip("/") for k, v in urls.items()}
    order = [p for p in PLACEHOLDERS if p in table] + [p for p in table if p not in PLACEHOLDERS]

    def sub(x: Any) -> Any:
        if isinstance(x, str):
            for p in order:
                if p in x:
                    x = x.replace(p, table[p])
            return x
        if isinstance(x, list):
            return [sub(v) for v in x]
        if isinstance(x, dict):
            return {k: sub(v) for k, v in x.items()}
        return x

    return sub(obj)


def load_tasks(path: str | Path) -> list[Task]:
    """Load a file holding one config or a list of configs; the error names the task id and the field."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON: {e}") from None
    items = data if isinstance(data, list) else [data]
    tasks, errors = [], []
    for i, item in enumerate(items):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as e:
            errors.append(_describe(item, i, e))
    if errors:
        raise ValueError(f"{path}: {len(errors)} invalid task(s):\n" + "\n".join(errors))
    return tasks


def _describe(item: Any, index: int, err: ValidationError) -> str:
    tid = item.get("task_id", f"#{index}") if isinstance(item, dict) else f"#{index}"
    lines = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "<root>"
        lines.append(f"  task {tid}: {field}: {e['msg']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "validate":
        print("usage: python -m common.tasks validate FILE...", file=sys.stderr)
        return 2
    bad = 0
    for path in argv[1:]:
        try:
            tasks = load_tasks(path)
            print(f"{path}: {len(tasks)} tasks OK")
        except (ValueError, OSError) as e:
            bad += 1
            print(str(e), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
