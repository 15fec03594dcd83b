"""Hand-computed cases for step-level credit, off-policy (expert) rows, token entropy and the RL config keys."""

from __future__ import annotations

import math

import pytest
import torch

from common.config import ConfigError, load_config
from common.records import Observation, Trajectory, TrajectoryGroup, Turn
from learner.algos import policy_loss, step_advantages, token_entropy
from learner.samples import anchor_key, collate, rl_samples

S = math.sqrt(0.5)  # unbiased std of [1, 0]


def _turn(i: int, page: str, logprobs: bool = True) -> Turn:
    return Turn(
        index=i,
        observation=Observation(text=page, url=f"http://site/{page}"),
        prompt_ids=[1, 2, 3],
        completion_ids=[4, 5],
        logprobs=[-0.5, -0.5] if logprobs else [],
        weight_version=0,
    )


def _traj(idx: int, reward: float | None, pages: list[str], source: str = "policy") -> Trajectory:
    expert = source == "expert"
    turns = [_turn(k, p, logprobs=not expert) for k, p in enumerate(pages)]
    return Trajectory(task_id=1, sample_idx=idx, reward=reward, turns=turns, source=source)


# ---- step advantages ---------------------------------------------------------------------------------------------


def test_step_advantages_over_anchor_states_by_hand():
    # group g: trajectories 0 (R=1) and 1, 2 (R=0) all start on page A; 0 and 1 then reach B; 1 visits B twice;
    # trajectory 3 is alone in group h on page A
    rewards = [1.0, 0.0, 0.0, 1.0]
    keys = [["A", "B"], ["A", "B", "B"], ["A"], ["A"]]
    step, counts = step_advantages(rewards, ["g", "g", "g", "h"], keys, eps=0.0)
    # anchor (g, A): returns [1, 0, 0], mean 1/3, unbiased std sqrt(1/3)
    a_hi, a_lo = (2 / 3) / math.sqrt(1 / 3), (-1 / 3) / math.sqrt(1 / 3)
    # anchor (g, B): trajectories 0 and 1 once each (1's second visit does not count twice): [1, 0] -> +-1/S
    assert step[0] == pytest.approx([a_hi, 0.5 / S])
    assert step[1] == pytest.approx([a_lo, -0.5 / S, -0.5 / S])
    assert step[2] == pytest.approx([a_lo])
    assert step[3] == [0.0]  # an anchor group of one trajectory
    assert counts == {"anchor_groups": 3, "shared_anchor_groups": 2, "step_signal_groups": 2}


def test_step_advantages_all_equal_and_unscorable():
    step, counts = step_advantages([0.0, 0.0, None], [0, 0, 0], [["A"], ["A"], ["A"]])
    assert step == [[0.0], [0.0], [None]]
    assert counts["step_signal_groups"] == 0 and counts["shared_anchor_groups"] == 1
    with pytest.raises(ValueError, match="length"):
        step_advantages([1.0], [0, 0], [["A"]])


def test_rl_samples_step_advantage_is_trajectory_plus_omega_step():
    group = TrajectoryGroup(
        task_id=1,
        trajectories=[_traj(0, 1.0, ["A", "B"]), _traj(1, 0.0, ["A", "C"])],
    )
    traj_rows, stats, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=True)
    assert [s.advantage for s in traj_rows] == pytest.approx([0.5 / S, 0.5 / S, -0.5 / S, -0.5 / S])
    assert "anchor_groups" not in stats.as_dict()
    rows, stats, _ = rl_samples(
        [group], 100, 0.0, keep_zero_advantage=True, advantage="step", step_weight=0.5
    )
    # A is shared ([1, 0] -> +-1/S); B and C are anchor groups of one (step advantage 0)
    assert [s.advantage for s in rows] == pytest.approx(
        [0.5 / S + 0.5 * 0.5 / S, 0.5 / S, -0.5 / S - 0.5 * 0.5 / S, -0.5 / S]
    )
    assert stats.as_dict()["anchor_groups"] == 3 and stats.as_dict()["step_signal_groups"] == 1
    with pytest.raises(ValueError, match="unknown advantage"):
        rl_samples([group], 100, 0.0, keep_zero_advantage=True, advantage="turn")


def test_anchor_key_is_a_stable_hash_of_the_page():
    a = Observation(text="<p>x</p>", url="http://s/1", title="T")
    assert anchor_key(a) == anchor_key(a.model_copy(update={"short": "other", "last_action_error": "e"}))
    assert anchor_key(a) != anchor_key(a.model_copy(update={"url": "http://s/2"}))
    assert len(anchor_key(a)) == 40  # sha1 hex, the same in every process (no salted hash())


# ---- off-policy (expert) rows ------------------------------------------------------------------------------------


def test_expert_rows_are_flagged_have_no_lag_and_collate_carries_the_flag():
    group = TrajectoryGroup(
        task_id=1, trajectories=[_traj(0, 1.0, ["A"], source="expert"), _traj(1, 0.0, ["A"])]
    )
    rows, _, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=False, learner_version=3)
    assert [s.off_policy for s in rows] == [True, False]
    assert [s.lag for s in rows] == [0, 3]  # no weights sampled the expert turn
    batch = collate(rows, pad_id=0)
    assert batch.off_policy.tolist() == [True, False]
    assert torch.isnan(batch.sampling_logprobs[0]).all()  # no engine logprobs: out of the mismatch statistic


@pytest.mark.parametrize("adv", [1.0, -1.0])
def test_expert_rows_are_never_clipped_and_get_no_importance_weight(adv):
    # ratio 2 (far outside 1 +- 0.2) on both rows; row 0 is on-policy, row 1 expert
    old = torch.zeros(2, 1)
    lp = torch.full((2, 1), math.log(2.0), requires_grad=True)
    is_w = torch.full((2, 1), 0.5)
    loss, st = policy_loss(
        lp,
        old,
        torch.tensor([adv, adv]),
        torch.ones(2, 1),
        0.2,
        sample_weights=torch.ones(2),
        is_weights=is_w,
        off_policy=torch.tensor([False, True]),
    )
    loss.backward()
    # on-policy row: min(2A, 1.2A) * 0.5; expert row: the plain -2A, weight 1, always a gradient of -2A
    on = -min(2 * adv, 1.2 * adv) * 0.5
    assert loss.item() == pytest.approx(on - 2 * adv)
    assert lp.grad[1, 0].item() == pytest.approx(-2 * adv)
    assert st["clipped"] == (1.0 if adv > 0 else 0.0)  # only the on-policy row can be clipped


def test_token_entropy_full_vocabulary():
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [100.0, 0.0, 0.0, 0.0]]])
    ent = token_entropy(logits)
    assert ent.shape == (1, 2)
    assert ent[0, 0].item() == pytest.approx(math.log(4)) and ent[0, 1].item() == pytest.approx(0.0, abs=1e-6)


# ---- config ------------------------------------------------------------------------------------------------------


def test_learner_warmup_steps_names_its_new_home():
    with pytest.raises(ConfigError, match=r"'learner.warmup_steps' was removed: set rl.warmup_steps"):
        load_config(None, ["learner.warmup_steps=3"])
    cfg = load_config(None, ["rl.warmup_steps=3", "rl.advantage=step", "rl.step_advantage_weight=0.5"])
    assert (cfg.rl.warmup_steps, cfg.rl.advantage, cfg.rl.step_advantage_weight) == (3, "step", 0.5)
    with pytest.raises(ConfigError, match="rl.updates_per_batch"):
        load_config(None, ["rl.updates_per_batch=0"])


# ---- no credit for turns that did nothing --------------------------------------------------------------------------


def test_no_op_turns_get_no_positive_advantage():
    # a group of two on page A: trajectory 0 clicks a missing id (an error, page unchanged), then a no-op click (page
    # unchanged), then the right one (page B) and stops: R = 1; trajectory 1 changes the page to C and fails: R = 0
    ok = _traj(0, 1.0, ["A", "A", "A", "B"])
    ok.turns[1].observation.last_action_error = "there is no element with id [5]"
    bad = _traj(1, 0.0, ["A", "A", "C"])
    group = TrajectoryGroup(task_id=1, trajectories=[ok, bad])
    # advantages +-1/S (S = unbiased std of [1, 0] over 2 = sqrt(0.5)); with credit, every turn gets its
    # trajectory's; without, the two no-op turns of the success (0: error reported after it, 1: same page) get 0,
    # the last turn keeps +1/S, and the failure keeps -1/S on its no-op turn 0 as on the others
    rows, _, dropped = rl_samples([group], 100, 0.0, keep_zero_advantage=True)
    assert [s.advantage for s in rows] == pytest.approx([0.5 / S] * 4 + [-0.5 / S] * 3)
    assert dropped["no_op_credit"] == 0
    rows, _, dropped = rl_samples([group], 100, 0.0, keep_zero_advantage=True, credit_no_ops=False)
    assert [s.advantage for s in rows] == pytest.approx([0.0, 0.0, 0.5 / S, 0.5 / S] + [-0.5 / S] * 3)
    assert dropped["no_op_credit"] == 2
    rows, _, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=False, credit_no_ops=False)
    assert len(rows) == 5  # the zeroed turns leave the batch (they carry no gradient)


def test_no_op_turns_by_hand():
    from learner.samples import no_op_turns

    traj = _traj(0, 1.0, ["A", "A", "B", "B"])
    assert no_op_turns(traj) == [0, 2]  # the last turn (3) is never listed
    traj.turns[1].observation.tabs = ["two tabs", "now"]  # a new tab opened: the action did something
    assert no_op_turns(traj) == [2]
    assert no_op_turns(_traj(0, 1.0, ["A"])) == []


def test_template_baseline_contrasts_the_seeds_of_a_template():
    # two seeds of template "t" (one solved by both members, one failed by both) and a mixed group of template "u"
    solved = TrajectoryGroup(task_id=1, trajectories=[_traj(0, 1.0, ["A"]), _traj(1, 1.0, ["A"])])
    failed = TrajectoryGroup(task_id=2, trajectories=[_traj(0, 0.0, ["B"]), _traj(1, 0.0, ["B"])])
    other = TrajectoryGroup(task_id=3, trajectories=[_traj(0, 1.0, ["C"]), _traj(1, 0.0, ["C"])])
    for g, tmpl in ((solved, "t"), (failed, "t"), (other, "u")):
        for t in g.trajectories:
            t.meta["template"] = tmpl
    rows, _, _ = rl_samples([solved, failed, other], 100, 0.0, keep_zero_advantage=True)
    assert [s.advantage for s in rows] == pytest.approx([0.0] * 4 + [0.5 / S, -0.5 / S])  # GRPO: per group
    rows, stats, _ = rl_samples(
        [solved, failed, other], 100, 0.0, keep_zero_advantage=True, baseline="template"
    )
    sd = math.sqrt(1 / 3)  # unbiased std of [1, 1, 0, 0]
    assert [s.advantage for s in rows] == pytest.approx(
        [0.5 / sd] * 2 + [-0.5 / sd] * 2 + [0.5 / S, -0.5 / S]
    )
    # a group without a recorded template stands alone (the same as the task baseline)
    for t in other.trajectories:
        t.meta.pop("template")
    rows, _, _ = rl_samples([other], 100, 0.0, keep_zero_advantage=True, baseline="template")
    assert [s.advantage for s in rows] == pytest.approx([0.5 / S, -0.5 / S])
    with pytest.raises(ValueError, match="baseline"):
        rl_samples([other], 100, 0.0, keep_zero_advantage=True, baseline="seed")


def test_negative_scale_shrinks_only_the_negative_advantages():
    # a mixed group of three: two successes (one of two turns), one failure of two turns; mean 2/3, unbiased std
    # sqrt(1/3): the successes get (1 - 2/3) / sd, the failure (0 - 2/3) / sd on each of its turns
    group = TrajectoryGroup(
        task_id=1,
        trajectories=[_traj(0, 1.0, ["A", "B"]), _traj(1, 1.0, ["A"]), _traj(2, 0.0, ["A", "C"])],
    )
    sd = math.sqrt(1 / 3)
    pos, neg = (1 / 3) / sd, -(2 / 3) / sd
    rows, _, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=True)
    assert [s.advantage for s in rows] == pytest.approx([pos] * 3 + [neg] * 2)
    rows, _, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=True, negative_scale=0.25)
    assert [s.advantage for s in rows] == pytest.approx([pos] * 3 + [0.25 * neg] * 2)
    # 0: failures carry no gradient and leave the batch, while the weights still count them (the batch average)
    full, _, _ = rl_samples([group], 100, 0.0, keep_zero_advantage=False)
    rows, _, dropped = rl_samples([group], 100, 0.0, keep_zero_advantage=False, negative_scale=0.0)
    assert [s.advantage for s in rows] == pytest.approx([pos] * 3)
    assert [s.weight for s in rows] == pytest.approx([s.weight for s in full[:3]])
    assert dropped["zero_advantage"] == 2
    with pytest.raises(ValueError, match="negative_scale"):
        rl_samples([group], 100, 0.0, keep_zero_advantage=True, negative_scale=1.5)
