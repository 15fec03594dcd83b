"""Hand-computed cases for every function of learner/algos.py and the row building of learner/samples.py."""

from __future__ import annotations

import math

import pytest
import torch

from common.records import Observation, Trajectory, TrajectoryGroup, Turn
from learner.algos import grpo_advantages, kl_k3, mgrpo_sample_weights, policy_loss, sft_loss, token_logprobs
from learner.samples import collate, demo_samples, micro_batches, rl_samples

# ---- grpo_advantages ---------------------------------------------------------------------------------------------


def test_advantages_one_success_in_four_unbiased_std():
    # mean 0.25; unbiased var = (0.75^2 + 3 * 0.25^2) / 3 = 0.25 -> std 0.5
    adv, stats = grpo_advantages([1.0, 0.0, 0.0, 0.0], ["g"] * 4, eps=0.0)
    assert adv == pytest.approx([1.5, -0.5, -0.5, -0.5])
    assert stats.groups == 1 and stats.zero_variance_groups == 0


def test_advantages_population_std_and_eps():
    # population std = sqrt(0.1875) = 0.4330127; eps adds to the denominator
    adv, _ = grpo_advantages([1.0, 0.0, 0.0, 0.0], [0] * 4, eps=0.1, unbiased=False)
    assert adv[0] == pytest.approx(0.75 / (math.sqrt(0.1875) + 0.1))
    assert adv[1] == pytest.approx(-0.25 / (math.sqrt(0.1875) + 0.1))


def test_all_equal_group_gives_zero_and_is_counted():
    adv, stats = grpo_advantages([1.0, 1.0, 1.0, 0.0, 1.0], ["a", "a", "a", "b", "b"], eps=0.0)
    assert adv[:3] == [0.0, 0.0, 0.0]
    assert adv[3:] == pytest.approx([-math.sqrt(0.5), math.sqrt(0.5)])  # [0, 1]: std = 0.7071
    assert stats.zero_variance_groups == 1 and stats.groups == 2
    assert stats.zero_variance_share == 0.5


def test_unscorable_rewards_are_left_out_of_the_baseline():
    # the None does not count as 0: the baseline is over [1, 0] only
    adv, stats = grpo_advantages([1.0, None, 0.0], [7, 7, 7], eps=0.0)
    assert adv[1] is None
    assert adv[0] == pytest.approx(0.5 / math.sqrt(0.5)) and adv[2] == pytest.approx(-0.5 / math.sqrt(0.5))
    assert stats.unscorable == 1


def test_groups_of_one_and_empty_groups():
    adv, stats = grpo_advantages([1.0, None, None, 0.3, None], ["solo", "none", "none", "x", "x"])
    assert adv == [0.0, None, None, 0.0, None]
    assert stats.singleton_groups == 2 and stats.empty_groups == 1 and stats.zero_variance_groups == 2
    assert stats.unscorable == 3


def test_bad_rewards_are_errors():
    with pytest.raises(ValueError, match="NaN"):
        grpo_advantages([float("nan"), 1.0], [0, 0])
    with pytest.raises(ValueError, match="length"):
        grpo_advantages([1.0], [0, 0])


# ---- weights, logprobs, KL -------------------------------------------------------------------------------------


def test_mgrpo_weights_average_tokens_actions_trajectories_groups():
    # group g0: trajectory t0 with 2 turns, t1 with 1 turn; group g1: t2 with 1 turn
    w = mgrpo_sample_weights(["g0", "g0", "g0", "g1"], ["t0", "t0", "t1", "t2"])
    assert w == pytest.approx([1 / 8, 1 / 8, 1 / 4, 1 / 2])
    assert sum(w) == pytest.approx(1.0)


def test_token_logprobs():
    logits = torch.tensor([[[0.0, math.log(3.0)], [5.0, 5.0]]])  # softmax: [1/4, 3/4], [1/2, 1/2]
    lp = token_logprobs(logits, torch.tensor([[1, 0]]))
    assert lp.tolist()[0] == pytest.approx([math.log(0.75), math.log(0.5)])


def test_kl_k3():
    # logp = 0, ref = ln 0.5: exp(-0.693) + 0.693 - 1 = 0.193147
    assert float(kl_k3(torch.tensor([0.0]), torch.tensor([math.log(0.5)]))) == pytest.approx(
        0.5 + math.log(2) - 1
    )
    assert float(kl_k3(torch.tensor([-1.3]), torch.tensor([-1.3]))) == 0.0


# ---- policy_loss -------------------------------------------------------------------------------------------------


def test_ratio_one_loss_is_minus_weighted_advantage():
    lp = torch.zeros(2, 2, requires_grad=True)
    loss, st = policy_loss(
        lp,
        lp.detach(),
        torch.tensor([2.0, -1.0]),
        torch.ones(2, 2),
        0.2,
        sample_weights=torch.tensor([0.5, 0.5]),
    )
    assert loss.item() == pytest.approx(0.5 * -2.0 + 0.5 * 1.0)
    assert st["clipped"] == 0 and st["tokens"] == 4
    loss.backward()
    # d loss / d logp = -w * A / tokens-in-row
    assert lp.grad.flatten().tolist() == pytest.approx([-0.5, -0.5, 0.25, 0.25])


@pytest.mark.parametrize(
    "ratio, adv, expected_loss, clipped, grad",
    [
        (1.5, 1.0, -1.2, 1, 0.0),  # min(1.5, 1.2) = 1.2: clipped, no gradient
        (1.5, -1.0, 1.5, 0, 1.5),  # min(-1.5, -1.2) = -1.5: unclipped, d/dlogp of ratio = ratio
        (0.5, 1.0, -0.5, 0, -0.5),  # min(0.5, 0.8) = 0.5: unclipped
        (0.5, -1.0, 0.8, 1, 0.0),  # min(-0.5, -0.8) = -0.8: clipped
    ],
)
def test_clipping_cases(ratio, adv, expected_loss, clipped, grad):
    lp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    loss, st = policy_loss(lp, torch.zeros(1, 1), torch.tensor([adv]), torch.ones(1, 1), 0.2)
    assert loss.item() == pytest.approx(expected_loss)
    assert st["clipped"] == clipped
    loss.backward()
    assert float(lp.grad) == pytest.approx(grad)
    # k3(old || new) with d = old - new = -ln ratio
    assert st["approx_kl_sum"] == pytest.approx(1 / ratio + math.log(ratio) - 1)


def test_per_action_token_mean_and_mask():
    # row 0 has 2 action tokens, row 1 has one; masked-out positions hold garbage that must not count
    lp = torch.tensor([[math.log(1.1), math.log(0.9), 7.0], [5.0, -9.0, math.log(1.1)]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    adv = torch.tensor([1.0, 1.0])
    loss, st = policy_loss(lp, torch.zeros(2, 3), adv, mask, 0.2, sample_weights=torch.tensor([0.25, 0.75]))
    row0 = -(1.1 + 0.9) / 2
    row1 = -1.1
    assert loss.item() == pytest.approx(0.25 * row0 + 0.75 * row1)
    assert st["tokens"] == 3


def test_kl_penalty_adds_beta_k3():
    lp = torch.zeros(1, 1)
    ref = torch.full((1, 1), math.log(0.5))
    loss, st = policy_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 1), 0.2, ref_logprobs=ref, kl_beta=0.1)
    assert loss.item() == pytest.approx(0.1 * (0.5 + math.log(2) - 1))
    assert st["ref_kl_sum"] == pytest.approx(0.5 + math.log(2) - 1)
    with pytest.raises(ValueError, match="ref_logprobs"):
        policy_loss(lp, lp, torch.tensor([0.0]), torch.ones(1, 1), 0.2, kl_beta=0.1)


def test_zero_advantage_gives_exactly_zero_gradient_without_kl():
    lp = torch.randn(3, 4, requires_grad=True)
    loss, _ = policy_loss(lp, lp.detach() + 0.3, torch.zeros(3), torch.ones(3, 4), 0.2)
    loss.backward()
    assert torch.count_nonzero(lp.grad) == 0


def test_micro_batches_sum_to_the_batch_loss():
    torch.manual_seed(0)
    lp, old = torch.randn(4, 5), torch.randn(4, 5)
    mask = (torch.rand(4, 5) > 0.3).float()
    adv, w = torch.randn(4), torch.tensor([0.1, 0.2, 0.3, 0.4])
    whole, _ = policy_loss(lp, old, adv, mask, 0.2, sample_weights=w)
    parts = sum(
        float(policy_loss(lp[s], old[s], adv[s], mask[s], 0.2, sample_weights=w[s])[0])
        for s in (slice(0, 1), slice(1, 4))
    )
    assert parts == pytest.approx(float(whole), rel=1e-6)


# ---- sft_loss ----------------------------------------------------------------------------------------------------


def test_sft_loss_is_nll_on_action_tokens():
    lp = torch.tensor([[-1.0, -2.0, -3.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0]])
    assert float(sft_loss(lp, mask)) == pytest.approx(2.5)
    assert float(sft_loss(lp, mask, num_tokens=5)) == pytest.approx(1.0)  # share of a 5-token batch


# ---- samples -----------------------------------------------------------------------------------------------------


def _turn(i: int, prompt: list[int], completion: list[int]) -> Turn:
    return Turn(
        index=i,
        observation=Observation(text="obs"),
        prompt_ids=prompt,
        completion_ids=completion,
        logprobs=[-0.5] * len(completion),
    )


def test_collate_left_pads_and_keeps_the_action_window():
    from learner.samples import Sample

    a = Sample.from_turn(_turn(0, [5, 6, 7], [8, 9]))
    b = Sample.from_turn(_turn(0, [5], [4]))
    batch = collate([a, b], pad_id=0)
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9], [0, 0, 0, 5, 4]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [0, 0, 0, 1, 1]]
    assert batch.position_ids.tolist() == [[0, 1, 2, 3, 4], [0, 0, 0, 0, 1]]
    # earliest trained position is 3: logits of positions 2..4 are kept, targets are ids 3..4
    assert batch.logits_to_keep == 3
    assert batch.targets.tolist() == [[8, 9], [5, 4]]
    assert batch.mask.tolist() == [[1.0, 1.0], [0.0, 1.0]]
    assert batch.sampling_logprobs[0].tolist() == [-0.5, -0.5]


def test_micro_batches_respect_the_token_budget():
    from learner.samples import Sample

    lens = [10, 3, 7, 20, 4]
    samples = [Sample(input_ids=[1] * n, loss_mask=[0] * (n - 1) + [1]) for n in lens]
    parts = micro_batches(samples, token_budget=20)
    assert sorted(i for p in parts for i in p) == [0, 1, 2, 3, 4]
    for p in parts:
        assert len(p) == 1 or len(p) * max(lens[i] for i in p) <= 20
    assert parts[0] == [3]  # the longest goes alone


def test_rl_samples_weights_advantages_and_dropping():
    def traj(idx, reward, n_turns):
        return Trajectory(
            task_id=1, sample_idx=idx, reward=reward, turns=[_turn(k, [1, 2], [3, 4]) for k in range(n_turns)]
        )

    groups = [
        TrajectoryGroup(task_id=1, trajectories=[traj(0, 1.0, 2), traj(1, 0.0, 1), traj(2, None, 1)]),
        TrajectoryGroup(task_id=2, trajectories=[traj(0, 1.0, 1), traj(1, 1.0, 1)]),
    ]
    kept, stats, skipped = rl_samples(groups, max_len=100, eps=0.0, keep_zero_advantage=True)
    # group 1: baseline over [1, 0] -> +-0.7071; group 2 all equal -> 0; None -> no rows
    assert [s.advantage for s in kept] == pytest.approx([0.70710678, 0.70710678, -0.70710678, 0.0, 0.0])
    assert [s.weight for s in kept] == pytest.approx([1 / 8, 1 / 8, 1 / 4, 1 / 4, 1 / 4])
    assert stats.zero_variance_groups == 1 and stats.unscorable == 1
    dropped, _, skipped = rl_samples(groups, max_len=100, eps=0.0, keep_zero_advantage=False)
    assert len(dropped) == 3 and skipped["zero_advantage"] == 2
    # weights unchanged by dropping
    assert [s.weight for s in dropped] == pytest.approx([1 / 8, 1 / 8, 1 / 4])


def test_rows_are_token_exact_and_failures_are_errors():
    t = _turn(0, [11, 12, 13], [14, 15])
    samples, skipped = demo_samples([Trajectory(task_id=3, turns=[t, _turn(1, [1] * 50, [2])])], max_len=10)
    assert samples[0].input_ids == [11, 12, 13, 14, 15] and samples[0].loss_mask == [0, 0, 0, 1, 1]
    assert skipped["too_long"] == 1
    with pytest.raises(ValueError, match="prompt_ids"):
        demo_samples([Trajectory(task_id=3, turns=[_turn(0, [], [1])])], max_len=10)
    bad = TrajectoryGroup(
        task_id=4, trajectories=[Trajectory(task_id=4, failure="browser crashed", reward=0.0)]
    )
    with pytest.raises(ValueError, match="infrastructure failure"):
        rl_samples([bad], max_len=10, eps=1e-6, keep_zero_advantage=False)
