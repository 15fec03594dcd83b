"""How behaviour cloning's demonstrations split into train and held out (`learner.bc_phase.held_out_split`): one
held-out demonstration per template, never a template's only one, and the same list always splits the same way."""

from __future__ import annotations

from common.records import Trajectory
from learner.bc_phase import held_out_split


def _demos(templates: list[str]) -> list[Trajectory]:
    return [Trajectory(task_id=i, meta={"template": t}) for i, t in enumerate(templates)]


def test_the_round_robin_list_of_the_demo_keeps_every_template_in_training():
    # the seeded template-balanced order of 16 plays over 8 templates: a..h twice. Every 4th of the list (the old
    # split) would have held out both demonstrations of a and of e.
    demos = _demos(list("abcdefgh") * 2)
    train, held = held_out_split(demos, 4)
    assert [d.meta["template"] for d in held] == list("abcd")
    assert [d.task_id for d in held] == [8, 9, 10, 11]  # each template's last demonstration
    assert {d.meta["template"] for d in train} == set("abcdefgh") and len(train) == 12
    again_train, again_held = held_out_split(_demos(list("abcdefgh") * 2), 4)
    assert [d.task_id for d in again_held] == [8, 9, 10, 11]
    assert [d.task_id for d in again_train] == [d.task_id for d in train]


def test_a_template_with_one_demonstration_is_never_held_out_and_a_second_round_fills_the_count():
    demos = _demos(["a", "a", "a", "b", "c", "c"])  # b has one; a has three
    train, held = held_out_split(demos + _demos(["d"]), 3)
    assert [d.meta["template"] for d in held] == ["a", "c", "a"]
    assert "b" in {d.meta["template"] for d in train} and "c" in {d.meta["template"] for d in train}


def test_no_held_out_set_when_the_demonstrations_are_not_more_than_twice_the_count():
    demos = _demos(list("abcdefgh"))
    assert held_out_split(demos, 4) == (demos, [])
