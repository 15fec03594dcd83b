"""The MiniWoB++ task list, its train/test seeds, the `miniwob` reward check and the run stack's wiring (no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import load_config
from common.records import MiniwobResult
from common.tasks import Task, load_tasks
from reward.checks import miniwob as miniwob_check
from reward.plan import MiniwobStep, PlanError, build_plan
from rollout_workers.stack import Stack
from sites.miniwob.__main__ import main as cli
from sites.miniwob.server import MiniwobServer, html_root
from sites.miniwob.tasks import (
    EXCLUDED,
    SEEDS,
    TASKS,
    check_held_out,
    load_split,
    parse_seeds,
    seed_configs,
    split_configs,
    utterances,
)


def test_every_package_task_is_listed_or_excluded_with_a_reason():
    pages = {p.stem for p in (html_root() / "miniwob").glob("*.html")}
    assert set(TASKS) | set(EXCLUDED) == pages
    assert not set(TASKS) & set(EXCLUDED)
    assert len(TASKS) >= 40 and all(EXCLUDED.values())


def test_splits_share_no_seed_and_every_config_loads():
    assert SEEDS["train"] == tuple(range(500)) and SEEDS["test"] == tuple(range(100_000, 100_050))
    assert not set(SEEDS["train"]) & set(SEEDS["test"])
    train, test = load_split("train"), load_split("test")
    assert len(train) == len(TASKS) * len(SEEDS["train"]) and len(test) == len(TASKS) * len(SEEDS["test"])
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    for t in train + test:
        assert t.miniwob is not None and t.intent and t.eval.eval_types == ["miniwob"]
        assert t.start_url == f"__MINIWOB__/miniwob/{t.miniwob.task}.html" and t.sites == ["miniwob"]
    table = utterances()
    assert set(table) == set(TASKS)
    assert all(set(table[n]) == {str(s) for split in SEEDS for s in SEEDS[split]} for n in TASKS)


def test_a_split_is_written_as_webarena_json(tmp_path: Path):
    out = tmp_path / "test.json"
    assert cli(["tasks", "--split", "test", "--tasks", "click-button,enter-text", "--out", str(out)]) == 0
    tasks = load_tasks(out)
    assert [t.task_id for t in tasks] == [
        f"miniwob.{n}.{s}" for s in SEEDS["test"] for n in ("click-button", "enter-text")
    ]
    filled = tasks[0].with_urls({"miniwob": "http://127.0.0.1:1234"})
    assert filled.start_url == "http://127.0.0.1:1234/miniwob/click-button.html"


def test_unknown_or_excluded_task_names_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="drag-box: needs a mouse drag"):
        split_configs("train", ["drag-box"])
    with pytest.raises(ValueError, match="not a MiniWoB"):
        split_configs("train", ["no-such-task"])
    with pytest.raises(ValueError, match="unknown split"):
        split_configs("dev")


def test_the_miniwob_check_scores_raw_reward_above_zero():
    base = {"task": "click-button", "seed": 0, "started": True, "done": True}
    assert miniwob_check(MiniwobResult(**base, raw_reward=1.0)).score == 1.0
    partly = MiniwobResult(**base, raw_reward=0.4, reason="partly")
    assert miniwob_check(partly).score == 1.0  # BrowserGym: > 0
    assert miniwob_check(MiniwobResult(**base, raw_reward=0.0)).score == 0.0
    assert miniwob_check(MiniwobResult(**base, raw_reward=-1.0)).score == 0.0
    assert miniwob_check(MiniwobResult(**{**base, "done": False})).score == 0.0
    gone = miniwob_check(MiniwobResult(**{**base, "started": False}, raw_reward=1.0))
    assert gone.score == 0.0 and "gone" in gone.why
    assert miniwob_check(None).score is None  # no page result: unscorable, never a silent 0


def test_plan_routes_miniwob_and_refuses_it_without_the_block():
    task = load_split("test", ["click-button"])[0]
    assert build_plan(task).steps == (MiniwobStep(),) and not build_plan(task).needs_page
    bare = Task.model_validate({**task.to_config(), "miniwob": None})
    with pytest.raises(PlanError, match="needs the task's miniwob block"):
        build_plan(bare)
    with pytest.raises(ValueError, match="seed"):
        Task.model_validate({**task.to_config(), "miniwob": {"task": "click-button", "sede": 1}})


def test_stack_leaves_the_pages_to_the_browser_actors_and_loads_the_chosen_tasks():
    """The driver serves no MiniWoB++ page: each browser actor serves them on its own node and fills the tasks."""
    cfg = load_config(
        None, ["environment.kind=miniwob", "environment.miniwob_tasks=[click-button, enter-text]"]
    )
    stack = Stack(cfg)
    stack.start_environment()
    assert stack.urls == {} and stack.local_sites == {"miniwob": MiniwobServer}
    test = stack.tasks("test")
    assert {t.miniwob.task for t in test} == {"click-button", "enter-text"} and len(test) == 2 * len(
        SEEDS["test"]
    )
    assert test[0].start_url == "__MINIWOB__/miniwob/click-button.html"  # filled by the actor that plays it


def test_seed_lists_parse_seeds_and_ranges_in_order_once():
    assert parse_seeds("100000-100003, 100100,100001") == [100000, 100001, 100002, 100003, 100100]
    assert parse_seeds("7") == [7]
    for bad in ("10-a", "", "1,,2", "5-3", "-5", "1.5", f"{2**53}"):
        with pytest.raises(ValueError, match="is not a seed or a range: expected comma-separated integers"):
            parse_seeds(bad)
    with pytest.raises(ValueError, match="more than 10000 seeds"):
        parse_seeds("100000-999999")


def test_train_seeds_are_refused_and_stored_held_out_seeds_need_no_page():
    with pytest.raises(ValueError, match=r"0, 499 are train seeds \(train is 0..499\).*100000-100049"):
        check_held_out([0, 100_000, 499])
    check_held_out([500, 100_000, 10**9])  # outside the train range: held out, stored or not
    with pytest.raises(ValueError, match="7 is a train seed"):
        seed_configs([7], ["click-button"])
    configs = seed_configs(
        [100_049, 100_000], ["click-button", "enter-text"]
    )  # both in the table: no browser
    table = utterances()
    assert [c["task_id"] for c in configs] == [
        f"miniwob.{n}.{s}" for s in (100_049, 100_000) for n in ("click-button", "enter-text")
    ]
    assert all(c["intent"] == table[c["miniwob"]["task"]][str(c["miniwob"]["seed"])] for c in configs)
    with pytest.raises(ValueError, match="drag-box: needs a mouse drag"):
        seed_configs([100_000], ["drag-box"])


def test_eval_miniwob_seeds_replace_the_test_split_and_bad_ones_are_refused_before_anything_starts():
    """`eval.miniwob_seeds` (e.g. a validation range) is what every evaluation of a run plays; a train seed, a
    malformed list, another environment or a test task file beside it is refused by name."""
    from common.config import ConfigError
    from rollout_workers.stack import split_tasks

    base = ["environment.kind=miniwob", "environment.miniwob_tasks=[click-button, enter-text]"]
    cfg = load_config(None, [*base, "eval.miniwob_seeds=100049,100000"])  # stored seeds: no page is read
    assert [t.task_id for t in split_tasks(cfg, "test")] == [
        f"miniwob.{n}.{s}" for s in (100_049, 100_000) for n in ("click-button", "enter-text")
    ]
    # training draws from the train split as before
    assert len(split_tasks(cfg, "train")) == 2 * len(SEEDS["train"])
    for seeds, says in (("100000,7", "7 is a train seed"), ("1-x", "'1-x' is not a seed or a range")):
        with pytest.raises(ValueError, match=f"eval.miniwob_seeds {seeds}: .*{says}"):
            split_tasks(load_config(None, [*base, f"eval.miniwob_seeds={seeds}"]), "test")
    with pytest.raises(ConfigError, match="eval.miniwob_seeds needs environment.kind: miniwob"):
        load_config(None, ["eval.miniwob_seeds=200000"])
    with pytest.raises(ConfigError, match="set one"):
        load_config(None, [*base, "eval.miniwob_seeds=200000", "environment.test_tasks=x.json"])


@pytest.fixture
def page_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, list[int]]]:
    """The instruction reads a test asks for, recorded instead of opening pages (each seed reads as
    "<task> #<seed>"), and an empty per-process table of what was read."""
    import sites.miniwob.instructions as instructions
    import sites.miniwob.tasks as tasks

    def read(wanted: dict[str, list[int]], url: str | None = None) -> dict[str, dict[str, str]]:
        calls.append(wanted)
        return {n: {str(s): f"{n} #{s}" for s in seeds} for n, seeds in wanted.items()}

    calls: list[dict[str, list[int]]] = []
    monkeypatch.setattr(instructions, "read_instructions", read)
    monkeypatch.setattr(tasks, "_READ", {})
    return calls


def test_instructions_read_from_the_pages_are_read_once_per_process(page_reads: list[dict[str, list[int]]]):
    """A run reads the instructions of unstored seeds in its preflight and again when it evaluates: the second
    time comes from what the first read (no page is opened)."""
    first = seed_configs([987_654, 100_000], ["click-button"])
    again = seed_configs([987_654], ["click-button"])
    assert page_reads == [{"click-button": [987_654]}]  # the stored test seed is never read; the other once
    assert first[0]["intent"] == again[0]["intent"] == "click-button #987654"


def test_the_preflight_reads_unstored_eval_seeds_before_the_driver_loop_runs(
    page_reads: list[dict[str, list[int]]], tmp_path: Path
):
    """`learner.train` resolves its test tasks inside its event loop: the preflight (synchronous, before Ray)
    is where unstored `eval.miniwob_seeds` are read, so the evaluation inside the loop reads nothing; a train seed
    among them ends the preflight with one error line (exit status 2)."""
    import asyncio

    from rollout_workers.preflight import check_run
    from rollout_workers.stack import split_tasks

    (tmp_path / "config.json").write_text("{}")
    base = [f"model.path={tmp_path}", "environment.kind=miniwob", "environment.miniwob_tasks=[click-button]"]
    cfg = load_config(None, [*base, "eval.miniwob_seeds=200000-200001"])
    check_run(cfg, splits=("train", "test"))
    assert page_reads == [{"click-button": [200_000, 200_001]}]

    async def in_the_loop() -> list[str]:
        return [t.intent for t in split_tasks(cfg, "test")]

    assert asyncio.run(in_the_loop()) == ["click-button #200000", "click-button #200001"]
    assert len(page_reads) == 1
    with pytest.raises(SystemExit) as e:
        check_run(load_config(None, [*base, "eval.miniwob_seeds=200000,3"]), splits=("test",))
    assert e.value.code == 2
