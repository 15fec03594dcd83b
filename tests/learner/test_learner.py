"""LearnerActor on a real DeepSpeed engine (CPU accelerator, gloo, ZeRO-2) with a tiny random Llama.

One engine for the whole module (plus the frozen reference for the KL term): engine starts are the slow part.
"""

from __future__ import annotations

import pytest
import torch

from common.config import load_config
from common.records import Observation, Trajectory, TrajectoryGroup, Turn

pytestmark = pytest.mark.timeout(600)


def _turn(i: int, prompt: list[int], completion: list[int]) -> Turn:
    return Turn(
        index=i,
        observation=Observation(text="obs"),
        prompt_ids=prompt,
        completion_ids=completion,
        logprobs=[-1.0] * len(completion),
    )


@pytest.fixture(scope="module")
def learner(tiny_model_dir, tmp_path_factory):
    from learner.actor import LearnerActor

    out = tmp_path_factory.mktemp("learner_run")
    cfg = load_config(
        None,
        [
            f"logging.output_dir={out}",
            "learner.zero_stage=2",
            "learner.resume=never",
            "bc.lr=1e-3",
            "rl.lr=1e-3",
            "rl.kl_beta=0.001",
            "learner.max_grad_norm=1.0",
            "learner.micro_batch_tokens=64",
        ],
    )
    actor = LearnerActor(cfg, model_path=tiny_model_dir)
    yield actor
    del actor


def _snapshot(learner) -> dict[str, torch.Tensor]:
    return dict(learner.named_full_parameters())


def test_padding_and_micro_batching_do_not_change_logprobs(learner):
    short = _turn(0, list(range(100, 110)), [200, 201])
    long = _turn(1, list(range(100, 140)), [300, 301, 302])
    alone = learner.log_probs([short])[0]
    together = learner.log_probs([long, short, long])  # budget 64: the short one shares a left-padded batch
    assert len(alone) == 2 and len(together[2]) == 3
    assert together[1] == pytest.approx(alone, abs=1e-5)


def test_bc_step_lowers_the_loss_on_its_batch_and_changes_parameters(learner):
    demo = Trajectory(
        task_id="demo",
        source="expert",
        turns=[_turn(0, list(range(10, 40)), [50, 51, 52]), _turn(1, list(range(10, 70)), [70, 71])],
    )
    before = learner.log_probs(demo.turns)
    # the loss is the mean NLL over exactly the 5 action tokens: prompts are never trained
    nll_before = -sum(sum(x) for x in before) / 5
    params = _snapshot(learner)
    m = learner.bc_step([demo])
    assert m["loss"] == pytest.approx(nll_before, rel=1e-4)
    assert m["trained_tokens"] == 5 and m["micro_batches"] == 2
    assert m["grad_norm"] > 0 and m["tokens_per_s"] > 0
    nll_after = -sum(sum(x) for x in learner.log_probs(demo.turns)) / 5
    assert nll_after < nll_before - 0.1
    changed = [n for n, p in _snapshot(learner).items() if not torch.equal(p, params[n])]
    assert "model.embed_tokens.weight" in changed and len(changed) == len(params)


def test_rl_step_raises_positive_and_lowers_negative_actions(learner):
    prompt = list(range(500, 530))
    good, bad = _turn(0, prompt, [600, 601, 602]), _turn(0, prompt, [700, 701])
    group = TrajectoryGroup(
        task_id=9,
        trajectories=[
            Trajectory(task_id=9, sample_idx=0, turns=[good], reward=1.0),
            Trajectory(task_id=9, sample_idx=1, turns=[bad], reward=0.0),
            Trajectory(task_id=9, sample_idx=2, turns=[_turn(0, prompt, [800])], reward=None),
        ],
    )
    before = learner.log_probs([good, bad])
    m = learner.rl_step([group])
    after = learner.log_probs([good, bad])
    assert sum(after[0]) > sum(before[0]) + 1e-3
    assert sum(after[1]) < sum(before[1]) - 1e-3
    assert m["unscorable"] == 1 and m["samples"] == 2 and m["trained_tokens"] == 5
    assert m["clip_frac"] == 0.0 and m["ratio_mean"] == pytest.approx(1.0)  # one update: pi_old == pi_theta
    assert m["kl"] >= 0.0 and m["grad_norm"] > 0
    # engine logprobs were -1.0 per token; the report says how far the learner's own are
    expected = sum(abs(x + 1.0) for x in before[0] + before[1]) / 5
    assert m["sampling_abs_diff"] == pytest.approx(expected, rel=1e-3)


def test_all_equal_group_gives_no_gradient(learner):
    prompt = list(range(900, 920))
    group = TrajectoryGroup(
        task_id=5,
        trajectories=[
            Trajectory(task_id=5, sample_idx=i, turns=[_turn(0, prompt, [1000 + i, 1001])], reward=1.0)
            for i in range(3)
        ],
    )
    params = _snapshot(learner)
    steps = learner.state["optimizer_steps"]
    learner.cfg.rl.kl_beta = 0.0  # the KL term would (rightly) still pull toward the reference
    try:
        m = learner.rl_step([group])
    finally:
        learner.cfg.rl.kl_beta = 0.001
    assert m["skipped"] and m["grad_norm"] == 0.0 and m["zero_variance_share"] == 1.0
    assert learner.state["optimizer_steps"] == steps
    assert all(torch.equal(p, params[n]) for n, p in _snapshot(learner).items())


def test_full_parameters_carry_hf_names_and_full_shapes(learner, tiny_model_dir):
    from safetensors.torch import load_file

    on_disk = load_file(f"{tiny_model_dir}/model.safetensors")
    got = dict(learner.named_full_parameters())
    assert set(got) == set(on_disk) - {"lm_head.weight"}  # tied to the embeddings: sent once
    assert all(got[n].shape == on_disk[n].shape and got[n].device.type == "cpu" for n in got)


def test_a_failed_group_is_refused(learner):
    group = TrajectoryGroup(task_id=1, trajectories=[Trajectory(task_id=1, failure="page crashed")])
    with pytest.raises(ValueError, match="infrastructure failure"):
        learner.rl_step([group])


def test_train_bc_takes_tokenized_turns_and_counts_steps(learner):
    turns = [_turn(0, list(range(10, 30)), [40, 41]), _turn(0, list(range(10, 25)), [42])]
    it, bc, rl = learner.iteration, learner.state["bc_steps"], learner.state["rl_steps"]
    out = learner.train_bc(turns, epochs=2, batch_size=1)
    assert out["steps"] == 4 and len(out["history"]) == 4 and out["tokens_per_s"] > 0
    assert learner.iteration == it + 4 and learner.state["bc_steps"] == bc + 4
    assert learner.resume() == rl  # the driver resumes RL from the RL steps done


def test_several_updates_per_batch_use_recomputed_old_logprobs(learner):
    prompt = list(range(1200, 1230))
    group = TrajectoryGroup(
        task_id=11,
        trajectories=[
            Trajectory(task_id=11, sample_idx=0, turns=[_turn(0, prompt, [1300, 1301])], reward=1.0),
            Trajectory(task_id=11, sample_idx=1, turns=[_turn(0, prompt, [1400, 1401])], reward=0.0),
        ],
    )
    steps = learner.state["optimizer_steps"]
    learner.cfg.rl.updates_per_batch = 3
    try:
        m = learner.rl_step([group])
    finally:
        learner.cfg.rl.updates_per_batch = 1
    assert learner.state["optimizer_steps"] == steps + 3
    # the last pass sees pi_theta != pi_old (two updates later): the ratio moved away from 1
    assert m["approx_kl"] > 0 and m["ratio_mean"] != pytest.approx(1.0, abs=1e-6)
    assert 0.0 <= m["clip_frac"] <= 1.0
