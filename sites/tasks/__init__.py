"""Task suites for the bundled sites in WebArena's JSON format, generated from templates over the seeded data.

    from sites.tasks import load_split
    tasks = load_split("train")        # list[common.tasks.Task], placeholders (__SHOPPING__ ...) unfilled
    python -m sites tasks --split test --out test.json      # the same, as a WebArena config list

How a site adds its templates (plug-in style; shop and shop admin are the worked examples):
1. Write `sites/tasks/<module>.py` with `TEMPLATES: list[Template]` and list the module in `TASK_MODULES` below
   (already there: shop + shop_actions, shop_admin + shop_admin_actions, reddit, gitlab; a site may spread its
   templates over several modules to keep files small). A module that does not exist yet is skipped.
2. A `Template(id, site, intent_template, kind, eval_types, instances, evaluate, solve, start_path, held_out)`:
   - `id`: the `intent_template_id`, unique over all sites; ranges: shopping 100-199, shopping_admin 200-299,
     reddit 300-399, gitlab 400-499. Task ids are `id * 1000 + instance index`, stable whatever the split.
   - `kind`: "info" (answer with `stop [answer]`, string_match), "state" (changes data, program_html) or "nav"
     (ends on a page, url_match). Aim for about half info, like WebArena.
   - `instances(db: SeedData) -> list[Instance]`: read the seeded database read-only (`db.conn("forum")`, the
     DbGroup name of your site) and return `Instance(id, index, values, data)`: `values` is the
     `instantiation_dict`, `data` the reference data computed from the same rows the pages show. Deterministic:
     sample with `pick(rows, n, seed)`, never with unseeded randomness. Choose instances whose do-nothing episode
     fails the checks (state tasks), so the checks are not vacuous.
   - `evaluate(inst) -> dict`: the config's `eval`, built with `string_eval`, `url_eval`, `html_eval` + `target`
     (sites.tasks.base); URLs use the placeholders.
   - `solve(inst) -> list[Step]`: the expert's script (sites.tasks.steps: Go, Click, Fill, Choose, Until,
     AllPages, Answer); steps read element ids from the observation text, so demonstrations contain exactly
     what a model sees. End with `Answer(text, page)` (info; `page` is the path the answer is read from, which
     the expert checks and `answer_page` exposes) or `Answer()`.
   - `start_path`: a path on the site (default "/") or a function of the instance; `held_out=True` puts every
     instance in the test split.
3. Check with `python -m sites tasks --split train --out /tmp/t.json && python -m common.tasks validate /tmp/t.json`
   and the expert: `python -m rollout_workers.demos --config configs/cpu_demo.yaml --limit 20 --out /tmp/d.jsonl`.

Split: held-out templates go wholly to test; of every other template, `TEST_FRACTION` of its instances (at least
one) go to test, chosen by a hash of (template id, instance index), so the split is deterministic and disjoint.
Instances whose reference answer is the template's most common one stay in train (a constant answer would score
them without reading a page; `rollout_workers.guessing` measures that baseline).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections import Counter
from functools import lru_cache
from typing import Any

from sites.tasks.base import Instance, SeedData, Template

TASK_MODULES = [
    "sites.tasks.shop",
    "sites.tasks.shop_actions",
    "sites.tasks.shop_admin",
    "sites.tasks.shop_admin_actions",
    "sites.tasks.reddit",
    "sites.tasks.gitlab",
]
TEST_FRACTION = 0.2
SPLITS = ("train", "test")

__all__ = [
    "Template",
    "Instance",
    "SeedData",
    "templates",
    "suite",
    "load_split",
    "split_configs",
    "answer_page",
    "find_instance",
    "TASK_MODULES",
]


def templates(sites: list[str] | None = None) -> list[Template]:
    """All registered templates (of the given site keys), sorted by id; duplicate ids are an error."""
    out: dict[int, Template] = {}
    for name in TASK_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            # the module itself is missing (a site not written yet), not one of its imports
            if e.name == name:
                continue
            raise
        for t in getattr(mod, "TEMPLATES", []):
            if t.id in out:
                raise ValueError(f"template id {t.id} is defined twice ({name})")
            out[t.id] = t
    return [out[k] for k in sorted(out) if sites is None or out[k].site in sites]


def _rank(template_id: int, index: int) -> str:
    return hashlib.sha256(f"wa-split:{template_id}:{index}".encode()).hexdigest()


def _answer_key(t: Template, inst: Instance) -> str | None:
    """The instance's reference answers as one comparable string; None for a task with none (state, nav)."""
    answers = t.evaluate(inst).get("reference_answers")
    return json.dumps(answers, sort_keys=True) if answers else None


def _modal_answer(t: Template, insts: list[Instance]) -> str | None:
    """The reference answer that two or more instances share most often (first such in instance order); None
    when every answer is unique, so no answer of one instance is another's."""
    counts = Counter(k for k in (_answer_key(t, i) for i in insts) if k is not None)
    top = counts.most_common(1)
    return top[0][0] if top and top[0][1] >= 2 else None


def _test_indices(t: Template, insts: list[Instance]) -> set[int]:
    if t.held_out:
        return {i.index for i in insts}
    n = max(1, round(len(insts) * TEST_FRACTION)) if len(insts) >= 3 else 0
    ranked = sorted(insts, key=lambda i: _rank(t.id, i.index))
    # A test task whose answer is the template's most common one is solved by always giving that answer, without
    # reading a page: such instances go to train. The others' answers then stay rarer than it in train too, so no
    # test answer is the train split's most common one. Only when too few are left are modal ones tested.
    modal = _modal_answer(t, insts)
    pool = [i for i in ranked if modal is None or _answer_key(t, i) != modal]
    pool += [i for i in ranked if i not in pool]
    return {i.index for i in pool[:n]}


@lru_cache(maxsize=4)
def _suite_cached(data_dir: str | None, sites: tuple[str, ...] | None) -> tuple[tuple[Any, ...], ...]:
    db = SeedData(data_dir)
    rows = []
    try:
        for t in templates(list(sites) if sites else None):
            insts = t.instances(db)
            if len({i.index for i in insts}) != len(insts):
                raise ValueError(f"template {t.id}: duplicate instance indices")
            test = _test_indices(t, insts)
            rows += [(t, i, "test" if i.index in test else "train") for i in insts]
    finally:
        db.close()
    return tuple(rows)


def suite(
    data_dir: str | None = None, sites: list[str] | None = None
) -> list[tuple[Template, Instance, str]]:
    """(template, instance, split) for every task, in template then instance order."""
    return list(_suite_cached(data_dir, tuple(sites) if sites else None))


def split_configs(
    split: str, data_dir: str | None = None, sites: list[str] | None = None
) -> list[dict[str, Any]]:
    """WebArena config dicts of one split."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return [t.build(i) for t, i, s in suite(data_dir, sites) if s == split]


def load_split(split: str, data_dir: str | None = None, sites: list[str] | None = None) -> list[Any]:
    """The tasks of a split as `common.tasks.Task` objects (placeholders unfilled). Called by the training driver."""
    from common.tasks import Task

    return [Task.model_validate(c) for c in split_configs(split, data_dir, sites)]


def answer_page(template: Template, inst: Instance) -> str | None:
    """The page (placeholder URL, e.g. `__SHOPPING__/bedding.html?price=200-1000`) the expert's script reads the
    answer of an info task from: the `page` of its final `Answer` step; None when the script names none."""
    from sites.tasks.base import site_url
    from sites.tasks.steps import Answer

    answers = [s for s in template.solve(inst) if isinstance(s, Answer)]
    if not answers or not answers[-1].page:
        return None
    return site_url(template.site, answers[-1].page)


def find_instance(task_id: int | str) -> tuple[Template, Instance]:
    """The template and instance behind a task id (for the expert)."""
    tid = int(task_id)
    for t, i, _ in suite():
        if i.task_id == tid:
            return t, i
    raise KeyError(f"no bundled-site task with id {task_id}")
