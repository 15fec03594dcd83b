"""LearnerActor on a real DeepSpeed engine (CPU accelerator, gloo, ZeRO-2) with a tiny random Llama.

One engine for the whole module (plus the frozen reference for the KL term): engine starts are the slow part.
"""

from __future__ import annotations

from pathlib import Path

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
    assert m.loss == pytest.approx(nll_before, rel=1e-4)
    assert m.trained_tokens == 5 and m.micro_batches == 2
    assert m.grad_norm > 0 and m.tokens_per_s > 0
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
    assert m.advantages["unscorable"] == 1 and m.samples == 2 and m.trained_tokens == 5
    # one update: pi_old == pi_theta in the loss, so ratio and clip are not measured (not logged as 1 and 0)
    assert m.clip_frac is None and m.ratio_mean is None and "clip_frac" not in m.to_json()
    assert m.approx_kl > 0 and len(m.approx_kl_steps) == 1 and len(m.entropy_steps) == 2 and m.entropy > 0
    assert m.kl >= 0.0 and m.grad_norm > 0
    # engine logprobs were -1.0 per token; the report says how far the learner's own are
    expected = sum(abs(x + 1.0) for x in before[0] + before[1]) / 5
    assert m.sampling_abs_diff == pytest.approx(expected, rel=1e-3)


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
    steps = learner.state.optimizer_steps
    assert learner.cfg.rl.kl_beta > 0  # even with a KL term: a batch without signal makes no step at all
    m = learner.rl_step([group])
    assert m.skipped and m.no_signal and m.grad_norm == 0.0 and m.advantages["zero_variance_share"] == 1.0
    assert learner.state.optimizer_steps == steps
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


def _demo(i: int, prompt: list[int], completion: list[int]) -> Trajectory:
    return Trajectory(task_id=f"demo{i}", source="expert", turns=[_turn(0, prompt, completion)])


def test_train_bc_takes_demonstrations_counts_steps_and_measures_held_out_accuracy(learner):
    demos = [_demo(0, list(range(10, 30)), [40, 41]), _demo(1, list(range(10, 25)), [42])]
    held = [_demo(2, list(range(10, 30)), [40, 41])]  # the same action after the same prompt
    it, bc, rl = learner.iteration, learner.state.bc_steps, learner.state.rl_steps
    out = learner.train_bc(demos, held, epochs=2, batch_size=1)
    assert out.steps == 4 and len(out.history) == 4 and out.tokens_per_s > 0
    assert learner.iteration == it + 4 and learner.state.bc_steps == bc + 4
    assert learner.resume() == rl  # the driver resumes RL from the RL steps done
    first, last = out.held_out[0], out.held_out[-1]
    assert [c["epoch"] for c in out.held_out] == [0, 1, 2]
    assert last["nll"] < first["nll"] and last["token_accuracy"] >= first["token_accuracy"]


def test_bc_schedule_warms_up_then_decays():
    from torch.optim import SGD

    from learner.engine import PhaseLR

    opt = SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = PhaseLR(opt, 1.0, 0)
    sched.begin(1e-3, warmup_steps=2, total_steps=10, schedule="cosine")
    lrs = []
    for _ in range(10):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == pytest.approx(5e-4) and lrs[1] == pytest.approx(1e-3)
    assert all(a >= b for a, b in zip(lrs[1:], lrs[2:], strict=False)) and lrs[-1] < 3e-4
    sched.begin(2e-6)  # the next phase: constant, counted from its own start
    assert opt.param_groups[0]["lr"] == pytest.approx(2e-6)


def test_logprobs_at_a_temperature_are_those_of_softmax_logits_over_t(learner):
    turn = _turn(0, list(range(300, 330)), [340, 341, 342])
    lp = learner.log_probs([turn], temperature=0.7)[0]
    ids = torch.tensor([turn.prompt_ids + turn.completion_ids])
    with torch.no_grad():
        logits = learner.engine.module(input_ids=ids).logits[0, 29:-1].float()
    want = torch.log_softmax(logits / 0.7, -1).gather(-1, torch.tensor([[340], [341], [342]]))[:, 0]
    assert lp == pytest.approx(want.tolist(), abs=1e-5)


def test_rl_starts_from_the_bc_policy_as_reference_with_a_fresh_optimizer(learner):
    from learner.engine import inner_optimizer

    learner.bc_step([_demo(5, list(range(500, 540)), [550, 551])])  # BC moved the policy away from the start
    assert inner_optimizer(learner.engine.optimizer).state  # Adam moments from BC
    steps_done = learner.state.rl_steps
    learner.state.rl_steps = 0  # a fresh RL phase
    try:
        info = learner.begin_rl()
    finally:
        learner.state.rl_steps += steps_done
    assert info["fresh_optimizer"] and not inner_optimizer(learner.engine.optimizer).state
    prompt = list(range(600, 630))
    group = TrajectoryGroup(
        task_id=21,
        trajectories=[
            Trajectory(task_id=21, sample_idx=0, turns=[_turn(0, prompt, [650, 651])], reward=1.0),
            Trajectory(task_id=21, sample_idx=1, turns=[_turn(0, prompt, [660, 661])], reward=0.0),
        ],
    )
    m = learner.rl_step([group])
    assert m.kl == pytest.approx(0.0, abs=1e-6) and not m.skipped


def test_several_updates_per_batch_use_recomputed_old_logprobs(learner):
    prompt = list(range(1200, 1230))
    group = TrajectoryGroup(
        task_id=11,
        trajectories=[
            Trajectory(task_id=11, sample_idx=0, turns=[_turn(0, prompt, [1300, 1301])], reward=1.0),
            Trajectory(task_id=11, sample_idx=1, turns=[_turn(0, prompt, [1400, 1401])], reward=0.0),
        ],
    )
    steps = learner.state.optimizer_steps
    learner.cfg.rl.updates_per_batch = 3
    try:
        m = learner.rl_step([group])
    finally:
        learner.cfg.rl.updates_per_batch = 1
    assert learner.state.optimizer_steps == steps + 3
    # the last pass sees pi_theta != pi_old (two updates later): the ratio moved away from 1
    assert m.approx_kl > 0 and m.ratio_mean != pytest.approx(1.0, abs=1e-6)
    assert 0.0 <= m.clip_frac <= 1.0


def test_bf16_autocast_on_cpu_keeps_fp32_weights_and_logprobs_close_and_still_trains(learner):
    demo = Trajectory(task_id="demo", source="expert", turns=[_turn(0, list(range(10, 50)), [60, 61, 62])])
    exact = learner.log_probs(demo.turns)[0]
    learner.cfg.learner.cpu_autocast = "bf16"
    try:
        mixed = learner.log_probs(demo.turns)[0]
        # bf16 matmuls round to ~3 significant digits: logprobs stay within a few hundredths of a nat here
        assert mixed == pytest.approx(exact, abs=0.05) and mixed != exact
        m = learner.bc_step([demo])
        assert m.trained_tokens == 3 and m.grad_norm > 0
        assert -sum(learner.log_probs(demo.turns)[0]) < -sum(mixed) - 0.05
        assert all(p.dtype == torch.float32 for _, p in learner.named_full_parameters())
    finally:
        learner.cfg.learner.cpu_autocast = "off"


def test_a_weights_only_checkpoint_is_small_and_resumes_from_its_weights_with_a_fresh_optimizer(
    learner, tmp_path
):
    demo = Trajectory(task_id="demo", source="expert", turns=[_turn(0, list(range(10, 40)), [50, 51, 52])])
    full = Path(learner.save_checkpoint(str(tmp_path / "full")))
    light = Path(learner.save_checkpoint(str(tmp_path / "light"), optimizer=False))
    assert not (light / "deepspeed").exists() and (full / "deepspeed").is_dir()
    size = {p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) for p in (full, light)}
    assert size[light] < size[full] / 2
    from learner import engine as eng

    saved, lp_saved = _snapshot(learner), learner.log_probs(demo.turns)
    eng.reset_optimizer(learner.engine)
    learner.bc_step([demo])  # one step of a fresh Adam from the saved weights
    moved = _snapshot(learner)
    learner.load_checkpoint(light)
    assert learner.log_probs(demo.turns)[0] == pytest.approx(lp_saved[0], abs=1e-6)
    assert all(torch.equal(p, saved[n]) for n, p in _snapshot(learner).items())
    # the optimizer's fp32 master copy was refreshed too and the optimizer is fresh: the next step is exactly the
    # fresh step from the saved weights (a stale master would have stepped from the moved weights instead)
    learner.bc_step([demo])
    after = _snapshot(learner)
    assert all(torch.equal(p, moved[n]) for n, p in after.items())
    assert any(not torch.equal(p, saved[n]) for n, p in after.items())
