"""The constant-answer baseline and blind successes, on the bundled task configs and crafted trajectories."""

from __future__ import annotations

import pytest

from common.records import Click, Observation, Stop, Trajectory, Turn, Type
from rollout_workers.guessing import blind_successes, constant_answer_baseline
from sites.tasks import answer_page, find_instance, load_split
from sites.tasks.steps import Answer, ExpertError, Script

URLS = {"shopping": "http://127.0.0.1:7770", "shopping_admin": "http://127.0.0.1:7771"}


@pytest.fixture(scope="module")
def splits():
    return {s: [t.with_urls(URLS) for t in load_split(s, sites=list(URLS))] for s in ("train", "test")}


def _of(tasks, template_id):
    return [t for t in tasks if t.intent_template_id == template_id]


def test_no_template_is_scored_often_by_its_modal_train_answer():
    """The generator keeps each template's most common answer out of its test split (every site)."""
    base = constant_answer_baseline(load_split("train"), load_split("test"))
    assert base["scored"] >= 50 and base["fuzzy_skipped"] >= 4 and base["no_train_answer"] >= 30
    for tid, row in base["per_template"].items():
        assert row["successes"] <= 0.1 * row["scored"], (tid, row)


def test_a_task_with_the_modal_answer_is_scored_and_fuzzy_ones_are_skipped(splits):
    train = _of(splits["train"], 102)
    base = constant_answer_baseline(train, train)  # evaluating on train: the modal answer's own tasks score 1
    row = base["per_template"]["102"]
    refs = [t.eval.reference_answers.exact_match for t in train]
    assert row["answer"] == max(refs, key=refs.count)
    assert row["successes"] == refs.count(row["answer"]) >= 2 and row["scored"] == len(train)
    assert sorted(base["tasks"]) == sorted(
        t.task_id for t in train if t.eval.reference_answers.exact_match == row["answer"]
    )
    # must_include references: the constant is the modal list joined; fuzzy ones need a judge and are counted
    prices, fuzzy = _of(splits["train"], 101), _of(splits["train"], 107)
    mixed = constant_answer_baseline(prices + fuzzy, prices[:3] + fuzzy + _of(splits["test"], 105))
    assert mixed["fuzzy_skipped"] == len(fuzzy) and mixed["no_train_answer"] == len(_of(splits["test"], 105))
    assert mixed["scored"] == 3 and mixed["successes"] == 1 and mixed["rate"] == pytest.approx(1 / 3)


def _turn(i, url, action):
    return Turn(index=i, observation=Observation(text="", url=url), action=action)


def test_blind_successes_tell_a_guess_from_a_read(splits):
    task = _of(splits["test"], 104)[0]
    template, inst = find_instance(task.task_id)
    assert answer_page(template, inst) == (
        f"__SHOPPING__/{inst.data['slug']}.html?price={inst.values['lo']}-{inst.values['hi']}"
    )
    home, cat = URLS["shopping"] + "/", URLS["shopping"] + f"/{inst.data['slug']}.html"
    page = cat + f"?price={inst.values['lo']}-{inst.values['hi']}"
    guess = Trajectory(
        task_id=task.task_id,
        turns=[
            _turn(0, home, Type(element_id="6", text="bedding")),
            _turn(1, home + "x", Click(element_id="27")),
            _turn(2, cat, Stop(answer="1")),
        ],
        final_url=cat,
        reward=1.0,
    )
    read = Trajectory(
        task_id=task.task_id,
        sample_idx=1,
        turns=[_turn(0, home, Click(element_id="3")), _turn(1, page, Stop())],
        reward=1.0,
    )
    wrong_site = read.model_copy(
        update={"sample_idx": 2, "turns": [_turn(0, page.replace("7770", "7771"), Stop())]}
    )
    failed = guess.model_copy(update={"sample_idx": 3, "reward": 0.0})
    unscorable = guess.model_copy(update={"sample_idx": 4, "reward": None})
    state = _of(
        splits["test"],
        next(t.intent_template_id for t in splits["test"] if "program_html" in t.eval.eval_types),
    )[0]
    done = Trajectory(task_id=state.task_id, turns=[_turn(0, home, Stop())], reward=1.0)
    out = blind_successes([guess, read, wrong_site, failed, unscorable, done], [task, state])
    assert out == {
        "successes": 4,
        "judged": 3,
        "blind": 2,
        "blind_ids": [guess.id, wrong_site.id],
        "unknown_page": 1,
    }


def test_blind_successes_need_the_trajectories_tasks(splits):
    traj = Trajectory(task_id=999999, reward=1.0)
    with pytest.raises(ValueError, match="999999 is not among the given tasks"):
        blind_successes([traj], splits["test"])


def test_the_expert_answers_only_on_its_answer_page():
    """`Answer(page=...)` is what the expert checks, so the exposed page is the one its demonstrations read."""
    base = URLS["shopping"]
    on = Observation(text="<p> 3 items </p>", url=base + "/home/bedding.html?p=1&price=200-1000")
    off = Observation(text="<p> 3 items </p>", url=base + "/home/bedding.html")
    step = [Answer("3", "/home/bedding.html?price=200-1000")]
    assert Script(step, base).next_action(on)[0] == Stop(answer="3")
    with pytest.raises(ExpertError, match="not on the answer page"):
        Script(list(step), base).next_action(off)
