"""Route a task config to its checks: an evaluator plan, built and validated before any page is opened.

The plan mirrors WebArena's router: one step per entry of `eval.eval_types`, run in that order (order matters:
program_html may navigate, and a later url_match sees the page it left, as in WebArena). Every `func:` call is parsed
here and every locator classified, so a bad config fails at once with the task id and the field, not mid-episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from common.tasks import Task, load_tasks
from common.text import cut
from reward.funcs import FuncCall, FuncError, parse_call

# program_html's required_contents kinds, in the precedence WebArena-Lite's evaluator applies: only the first
# present kind is checked.
CONTENT_KINDS = ("exact_match", "must_include", "must_exclude", "required_values", "fuzzy_match")
ANSWER_KINDS = ("exact_match", "must_include", "fuzzy_match", "must_exclude", "required_values", "one_of")


class PlanError(ValueError):
    """A config that cannot be checked; the message names the task and the field."""


@dataclass(frozen=True)
class StringStep:
    items: tuple[tuple[str, Any], ...]  # (approach, reference) in config order
    intent: str
    string_note: str
    kind: Literal["string_match"] = "string_match"


@dataclass(frozen=True)
class UrlStep:
    reference: str
    rule: str | None
    kind: Literal["url_match"] = "url_match"


@dataclass(frozen=True)
class Target:
    url_kind: Literal["last", "url", "func"]
    url: str
    url_call: FuncCall | None
    locator_kind: Literal["page", "js", "func"]
    locator: str
    locator_call: FuncCall | None
    prep_actions: tuple[str, ...]
    content_kind: str
    content: Any
    ignored_kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class HtmlStep:
    targets: tuple[Target, ...]
    intent: str
    kind: Literal["program_html"] = "program_html"


@dataclass(frozen=True)
class MiniwobStep:
    """The page's own reward, carried in the final state (MiniWoB++ tasks)."""

    kind: Literal["miniwob"] = "miniwob"


@dataclass(frozen=True)
class Plan:
    task_id: Any
    steps: tuple[StringStep | UrlStep | HtmlStep | MiniwobStep, ...]
    needs_page: bool = field(default=False)


def _as_list(value: Any) -> list[Any]:
    # WebArena asserts a list here; a bare string (task 81's "yjlou") is read as a one-entry list instead.
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _string_step(task: Task, where: str) -> StringStep:
    ref = task.eval.reference_answers
    if ref is None:
        raise PlanError(f"{where}: string_match without reference_answers")
    items = []
    for approach, value in ref.model_dump(exclude_none=True).items():
        if approach not in ANSWER_KINDS:
            raise PlanError(
                f"{where}.reference_answers: unknown key {approach!r}; known: {', '.join(ANSWER_KINDS)}"
            )
        if approach == "fuzzy_match" and value == "N/A":
            items.append((approach, value))
        elif approach == "exact_match":
            items.append((approach, str(value)))
        else:
            items.append((approach, tuple(str(v) for v in _as_list(value))))
    if not items:
        raise PlanError(f"{where}: reference_answers is empty")
    return StringStep(items=tuple(items), intent=task.intent, string_note=task.eval.string_note or "")


def _func(text: str, where: str) -> FuncCall:
    try:
        return parse_call(text)
    except FuncError as e:
        raise PlanError(f"{where}: {e}") from None


def _target(raw: Any, where: str) -> Target:
    url = raw.url
    url_call = None
    if url == "last":
        url_kind = "last"
    elif url.startswith("func"):
        url_kind, url_call = "func", _func(url, f"{where}.url")
    else:
        url_kind = "url"
    locator = raw.locator or ""
    locator_call = None
    if not locator.strip():
        locator_kind = "page"
    elif locator.startswith(("document.", "[...document.")):
        locator_kind = "js"
    elif locator.startswith("func:"):
        locator_kind, locator_call = "func", _func(locator, f"{where}.locator")
    else:
        raise PlanError(
            f"{where}.locator: unknown locator {cut(locator, 60)!r} (expected '', document..., func:...)"
        )
    contents = raw.required_contents.model_dump(exclude_none=True)
    present = [k for k in CONTENT_KINDS if k in contents]
    unknown = [k for k in contents if k not in CONTENT_KINDS]
    if unknown or not present:
        raise PlanError(
            f"{where}.required_contents: unknown or missing kind {unknown or list(contents)}; "
            f"known: {', '.join(CONTENT_KINDS)}"
        )
    kind = present[0]
    content = (
        str(contents[kind]) if kind == "exact_match" else tuple(str(v) for v in _as_list(contents[kind]))
    )
    return Target(
        url_kind=url_kind,
        url=url,
        url_call=url_call,
        locator_kind=locator_kind,
        locator=locator,
        locator_call=locator_call,
        prep_actions=tuple(raw.prep_actions or ()),
        content_kind=kind,
        content=content,
        ignored_kinds=tuple(present[1:]),
    )


def build_plan(task: Task) -> Plan:
    """The checks of a (placeholder-filled) task, in WebArena's order; PlanError on a config that cannot be run."""
    steps: list[StringStep | UrlStep | HtmlStep | MiniwobStep] = []
    base = f"task {task.task_id}: eval"
    if not task.eval.eval_types:
        raise PlanError(f"{base}.eval_types is empty")
    for kind in task.eval.eval_types:
        if kind == "string_match":
            steps.append(_string_step(task, base))
        elif kind == "url_match":
            if not task.eval.reference_url:
                raise PlanError(f"{base}.reference_url: url_match needs a reference URL")
            rule = task.eval.url_note or None
            if rule not in (None, "GOLD in PRED", "EXACT"):
                raise PlanError(
                    f"{base}.url_note: unknown rule {rule!r} (expected 'GOLD in PRED' or 'EXACT')"
                )
            steps.append(UrlStep(reference=task.eval.reference_url, rule=rule))
        elif kind == "program_html":
            raws = task.eval.program_html or []
            if not raws:
                raise PlanError(f"{base}.program_html: program_html without targets")
            targets = tuple(_target(r, f"{base}.program_html[{i}]") for i, r in enumerate(raws))
            steps.append(HtmlStep(targets=targets, intent=task.intent))
        elif kind == "miniwob":
            if task.miniwob is None:
                raise PlanError(f"{base}.eval_types: 'miniwob' needs the task's miniwob block (task, seed)")
            steps.append(MiniwobStep())
        else:
            raise PlanError(
                f"{base}.eval_types: unsupported {kind!r} (string_match, url_match, program_html, miniwob)"
            )
    return Plan(
        task_id=task.task_id, steps=tuple(steps), needs_page=any(isinstance(s, HtmlStep) for s in steps)
    )


def validate_file(path: str | Path) -> list[Task]:
    """Load a task file and build every task's reward plan, so a config that could not be scored
    (an unknown `func:` helper, a locator of no known kind, an empty reference) fails here, before any episode
    runs; the ValueError names the file, every bad task id and its field."""
    tasks = load_tasks(path)
    errors = []
    for task in tasks:
        try:
            build_plan(task)
        except PlanError as e:
            errors.append(f"  {e}")
    if errors:
        raise ValueError(f"{path}: {len(errors)} task(s) cannot be scored:\n" + "\n".join(errors))
    return tasks
