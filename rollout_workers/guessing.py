"""Guessing is not learning: how much of an evaluation a constant answer scores, and which successes never saw
the page their answer is on.

    baseline = constant_answer_baseline(train_tasks, eval_tasks)   # always answer a template's modal train answer
    blind = blind_successes(trajectories, eval_tasks)               # successes that never opened the answer page

A count question ("How many products ... ?") has few likely answers, so a policy that learned "answer 1" for a
template can score without reading anything. `constant_answer_baseline` measures that floor with the reward's
own string checks (no judge: fuzzy_match answers are skipped and counted), and `blind_successes` flags each
success whose turns never showed the page the scripted expert reads the answer from (`sites.tasks.answer_page`).
Both are pure: they read tasks and finished trajectories and return JSON-ready dicts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Coroutine, Iterable
from typing import Any

from common.records import Trajectory
from common.tasks import Task
from reward.plan import StringStep, build_plan
from reward.score_plan import string_checks
from sites.tasks.steps import base_url, on_page


def _string_step(task: Task) -> StringStep | None:
    """The task's string_match step; None for a task judged otherwise (state, navigation)."""
    if "string_match" not in task.eval.eval_types:
        return None
    return next(s for s in build_plan(task).steps if isinstance(s, StringStep))


def _is_fuzzy(step: StringStep) -> bool:
    return any(kind == "fuzzy_match" for kind, _ in step.items)


def _answer_key(task: Task) -> str:
    """The reference answers as one comparable string (the config's own JSON); only for string_match tasks,
    whose plan was built, so their reference answers exist."""
    assert task.eval.reference_answers is not None
    return json.dumps(task.eval.reference_answers.model_dump(exclude_none=True), sort_keys=True)


def _answer_text(step: StringStep) -> str:
    """The answer a constant policy gives for a reference: the exact text, else every must_include joined."""
    for kind, ref in step.items:
        if kind == "exact_match":
            return ref
    return ", ".join(r for kind, ref in step.items if kind == "must_include" for r in ref)


def _without_loop(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (string_checks without a judge awaits nothing real) to its value;
    an event loop is not needed, so this works inside the async training driver as well."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("string_checks suspended: it needed a judge")


def _score(step: StringStep, answer: str) -> float | None:
    """The string_match score of `answer` (the product of its checks), exactly as the reward actor computes it."""
    checks = _without_loop(string_checks(step, answer, None))
    total = 1.0
    for c in checks:
        if c.score is None:
            return None
        total *= c.score
    return total


def _modal_answers(train_tasks: Iterable[Task]) -> dict[Any, str]:
    """Template id -> the constant answer built from its most common non-fuzzy train reference (ties: first seen)."""
    counts: dict[Any, Counter[str]] = {}
    example: dict[str, StringStep] = {}
    for task in train_tasks:
        step = _string_step(task)
        if step is None or _is_fuzzy(step):
            continue
        key = _answer_key(task)
        counts.setdefault(task.intent_template_id, Counter())[key] += 1
        example.setdefault(key, step)
    return {tid: _answer_text(example[c.most_common(1)[0][0]]) for tid, c in counts.items()}


def constant_answer_baseline(train_tasks: list[Task], eval_tasks: list[Task]) -> dict[str, Any]:
    """Score every string_match task of `eval_tasks` with its template's modal train answer.

    Returns {"successes", "scored", "rate", "fuzzy_skipped" (fuzzy_match references: they need the judge),
    "no_train_answer" (templates with no train reference, e.g. held-out ones), "per_template": {template id:
    {"answer", "successes", "scored"}}, "tasks": [task ids the constant scores 1]}. Tasks judged by URL or page
    content are not counted at all."""
    modal = _modal_answers(train_tasks)
    per: dict[str, dict[str, Any]] = {}
    out: dict[str, Any] = {"successes": 0, "scored": 0, "fuzzy_skipped": 0, "no_train_answer": 0, "tasks": []}
    for task in eval_tasks:
        step = _string_step(task)
        if step is None:
            continue
        if _is_fuzzy(step):
            out["fuzzy_skipped"] += 1
            continue
        if task.intent_template_id not in modal:
            out["no_train_answer"] += 1
            continue
        answer = modal[task.intent_template_id]
        row = per.setdefault(str(task.intent_template_id), {"answer": answer, "successes": 0, "scored": 0})
        ok = _score(step, answer) == 1.0
        row["scored"] += 1
        row["successes"] += ok
        out["scored"] += 1
        out["successes"] += ok
        if ok:
            out["tasks"].append(task.task_id)
    out["rate"] = out["successes"] / out["scored"] if out["scored"] else 0.0
    out["per_template"] = dict(sorted(per.items()))
    return out


def _answer_page(task: Task) -> str | None:
    """The absolute URL of the task's answer page on the task's own site; None for a task whose expert script
    names none (or that is not a bundled-site task)."""
    from sites.tasks import answer_page, find_instance
    from sites.tasks.base import site_url

    if task.miniwob is not None:
        return None
    try:
        template, inst = find_instance(task.task_id)
    except (KeyError, ValueError):
        return None
    if template.id != task.intent_template_id:  # a WebArena or other task whose id a bundled one also has
        return None
    page = answer_page(template, inst)
    if page is None:
        return None
    # the placeholder's base is the one the task's start URL was filled with (the same site)
    origin = base_url(task.start_url) if "://" in task.start_url else ""
    return page.replace(site_url(template.site, "/"), origin, 1)


def _visited(traj: Trajectory) -> list[str]:
    """Every URL the episode observed: each turn's page, and the page it ended on."""
    return [t.observation.url for t in traj.turns if t.observation.url] + (
        [traj.final_url] if traj.final_url else []
    )


def blind_successes(trajectories: Iterable[Trajectory], tasks: list[Task]) -> dict[str, Any]:
    """Successful episodes (reward 1) of info tasks that never observed the page the expert reads the answer from.

    Returns {"successes": every reward-1 episode, "judged": those whose task names an answer page, "blind": how
    many of the judged never visited it, "blind_ids": their trajectory ids ("task#sample"), "unknown_page":
    successes whose task names no answer page (state / navigation tasks, or a script without one)}."""
    by_id = {str(t.task_id): t for t in tasks}
    pages: dict[str, str | None] = {}
    out: dict[str, Any] = {"successes": 0, "judged": 0, "blind": 0, "blind_ids": [], "unknown_page": 0}
    for traj in trajectories:
        if traj.reward != 1.0:
            continue
        out["successes"] += 1
        key = str(traj.task_id)
        if key not in by_id:
            raise ValueError(f"trajectory {traj.id}: task {traj.task_id} is not among the given tasks")
        if key not in pages:
            pages[key] = _answer_page(by_id[key]) if _string_step(by_id[key]) else None
        page = pages[key]
        if page is None:
            out["unknown_page"] += 1
            continue
        out["judged"] += 1
        if not any(on_page(url, page) for url in _visited(traj)):
            out["blind"] += 1
            out["blind_ids"].append(traj.id)
    return out
