"""rl_step on a real DeepSpeed engine (CPU, ZeRO-0 so that accumulated gradients sit on p.grad) with a tiny Llama:
several updates per batch, per-step KL, micro-batch accumulation, expert rows."""

from __future__ import annotations

import pytest
import torch

from common.config import load_config
from common.records import Observation, Trajectory, TrajectoryGroup, Turn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _turn(prompt: list[int], completion: list[int], expert: bool = False) -> Turn:
    return Turn(
        index=0,
        observation=Observation(text="page"),
        prompt_ids=prompt,
        completion_ids=completion,
        logprobs=[] if expert else [-1.0] * len(completion),
    )


def _group(task: int, base: int, source: str = "policy") -> TrajectoryGroup:
    prompt = list(range(base, base + 30))
    return TrajectoryGroup(
        task_id=task,
        trajectories=[
            Trajectory(
                task_id=task,
                sample_idx=i,
                turns=[_turn(prompt, [base + 100 + 10 * i, base + 101 + 10 * i], source == "expert")],
                reward=float(i == 0),
                source=source,
            )
            for i in range(2)
        ],
    )


@pytest.fixture(scope="module")
def learner(tiny_model_dir, tmp_path_factory):
    from learner.actor import LearnerActor

    cfg = load_config(
        None,
        [
            f"logging.output_dir={tmp_path_factory.mktemp('rl_updates')}",
            "learner.zero_stage=0",
            "learner.resume=never",
            "rl.lr=1e-3",
            "rl.kl_beta=0",
            "rl.updates_per_batch=2",
            "rl.clip_eps=0.01",
            "learner.max_grad_norm=1.0",
        ],
    )
    actor = LearnerActor(cfg, model_path=tiny_model_dir)
    actor.begin_rl()
    yield actor
    del actor


def test_the_second_pass_has_ratios_off_one_and_the_clip_fires(learner):
    m = learner.rl_step([_group(1, 100)])
    assert len(m.ratio_steps) == 1 and m.ratio_steps[0] != pytest.approx(1.0, abs=1e-4)
    assert m.clip_frac_steps[0] > 0 and m.clip_frac == m.clip_frac_steps[0]
    # a clipped token carries no gradient: the second step's gradient is smaller (0 when every token clipped)
    assert len(m.grad_norms) == 2 and m.grad_norms[0] > 0 and m.grad_norms[1] < m.grad_norms[0]
    assert m.approx_kl_steps[0] > 0 and m.approx_kl_steps[1] == m.approx_kl > 0
    assert len(m.entropy_steps) == 3 and m.entropy == m.entropy_steps[0] > 0


def test_the_kl_of_a_step_at_lr_zero_is_zero(learner):
    learner.scheduler.begin(0.0)
    try:
        still = learner.rl_step([_group(2, 300)])
    finally:
        learner.scheduler.begin(learner.cfg.rl.lr)
    assert (
        still.lr == 0.0
        and still.grad_norms[0] > 0
        and still.grad_norms[1] == pytest.approx(still.grad_norms[0])
    )
    assert still.approx_kl_steps == pytest.approx([0.0, 0.0], abs=1e-9)
    assert still.ratio_steps == pytest.approx([1.0], abs=1e-6) and still.clip_frac == 0.0
    moved = learner.rl_step([_group(2, 300)])
    assert all(k > 1e-6 for k in moved.approx_kl_steps)


def test_expert_rows_are_never_clipped(learner):
    # the same crafted batch that clips as policy rows (above), now expert-played: the ratio moves, nothing clips
    version = learner.state.weight_version
    learner.state.weight_version = (
        version + 3
    )  # policy turns of version 0 would now lag; expert turns never do
    try:
        m = learner.rl_step([_group(3, 500, source="expert")])
    finally:
        learner.state.weight_version = version
    assert m.expert_rows == 2 and m.lag_max == 0 and m.tis_weight_mean is None
    assert m.ratio_steps[0] != pytest.approx(1.0, abs=1e-4) and m.clip_frac_steps == [0.0]
    assert m.sampling_abs_diff is None  # no engine logprobs: no mismatch to report
    on_policy = learner.rl_step([_group(4, 500)])
    assert on_policy.clip_frac > 0


def _gradient(
    learner, samples, token_budget: int, share: bool = False
) -> tuple[int, dict[str, torch.Tensor]]:
    learner.cfg.learner.micro_batch_tokens = token_budget
    learner.share_prompts = share
    batches = learner._my_batches(samples)
    learner._rl_pass(batches, None, [None] * len(batches), kl_on=False)
    grads = {}
    for name, p in learner.engine.module.named_parameters():
        grads[name] = p.grad.detach().clone()
        p.grad = None
    return len(batches), grads


def test_gradient_over_micro_batches_equals_one_micro_batch(learner):
    from learner.samples import rl_samples

    groups = [_group(5, 700), _group(6, 760)]
    groups[1].trajectories[0].turns[0].prompt_ids = list(range(760, 800))  # rows of different lengths
    samples, _, _ = rl_samples(groups, 4096, 1e-6, keep_zero_advantage=False)
    try:
        n_one, one = _gradient(learner, samples, 10**6)
        n_many, many = _gradient(learner, samples, 40)  # one row each
        # one prefix tree (learner.share_prompts) holds all four rows, group 0's prompt once
        n_shared, shared = _gradient(learner, samples, 10**6, share=True)
    finally:
        learner.cfg.learner.micro_batch_tokens = 4096
        learner.share_prompts = True
    assert n_one == 1 and n_many == len(samples) == 4 and n_shared == 1
    for name, g in one.items():
        # float32 sums in another order (and other padding): ~1e-5 of a tensor's largest entry
        scale = float(g.abs().max())
        assert scale > 0 and torch.allclose(many[name], g, rtol=1e-4, atol=1e-4 * scale), name
        assert torch.allclose(shared[name], g, rtol=1e-4, atol=1e-4 * scale), name


def test_a_fresh_rl_phase_warms_up_over_rl_warmup_steps(learner):
    done, learner.state.rl_steps = learner.state.rl_steps, 0  # a fresh RL phase
    learner.cfg.rl.warmup_steps = 4
    try:
        learner.begin_rl()
        assert learner.scheduler.get_last_lr()[0] == pytest.approx(1e-3 / 4)
        m = learner.rl_step([_group(7, 900)])  # two optimizer steps: steps 1 and 2 of the warm-up
        assert m.lr == pytest.approx(1e-3 * 3 / 4)
    finally:
        learner.cfg.rl.warmup_steps = 0
        learner.state.rl_steps += done
        learner.scheduler.begin(learner.cfg.rl.lr)


def _weights(learner) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in learner.named_full_parameters()}


def test_zero_stage_0_checkpoints_round_trip_with_and_without_optimizer_state(learner, tmp_path):
    """The CPU presets run ZeRO stage 0 (one rank): a full and a weights-only checkpoint both load back; the
    weights-only one has no fp32 master copy to refresh (the optimizer steps the module's own parameters)."""
    from learner import checkpoint as ckpt

    batch = [_group(7, 700)]
    full = learner.save_checkpoint(str(tmp_path / "full"))
    light = learner.save_checkpoint(str(tmp_path / "light"), optimizer=False)
    assert ckpt.saved_zero_stage(full) == 0 and ckpt.saved_zero_stage(light) is None
    saved = _weights(learner)
    learner.rl_step(batch)
    assert any(not torch.equal(p, saved[n]) for n, p in _weights(learner).items())
    for folder in (light, full):
        learner.load_checkpoint(folder)
        assert all(torch.equal(p, saved[n]) for n, p in _weights(learner).items())
    learner.rl_step(batch)  # the loaded optimizer steps the loaded weights
    assert any(not torch.equal(p, saved[n]) for n, p in _weights(learner).items())


def test_a_checkpoint_of_another_zero_stage_is_refused_with_what_to_do(tmp_path):
    from learner import checkpoint as ckpt

    state = tmp_path / "ckpt" / "deepspeed" / "state"
    state.mkdir(parents=True)
    (state / "mp_rank_00_model_states.pt").write_bytes(b"")
    ckpt.check_zero_stage(tmp_path / "ckpt", 0)
    with pytest.raises(RuntimeError, match="resume with learner.zero_stage=0"):
        ckpt.check_zero_stage(tmp_path / "ckpt", 2)
    (state / "zero_pp_rank_0_mp_rank_00_optim_states.pt").write_bytes(b"")
    assert ckpt.saved_zero_stage(tmp_path / "ckpt") == 2
    ckpt.check_zero_stage(tmp_path / "ckpt", 1)
    with pytest.raises(RuntimeError, match="ZeRO stage 1-2 and this learner runs stage 0"):
        ckpt.check_zero_stage(tmp_path / "ckpt", 0)
    with pytest.raises(RuntimeError, match="runs stage 3"):
        ckpt.check_zero_stage(tmp_path / "ckpt", 3)


def test_the_kl_probe_on_a_share_of_the_micro_batches_estimates_the_same_kl(learner, tmp_path):
    """Two groups of identical rows, one micro-batch each: the probe on one of them reads the KL of the whole
    batch (a wrong token count would halve it), and the KLs of the earlier steps, free from the passes, are
    unchanged."""
    start = learner.save_checkpoint(str(tmp_path / "start"))
    batch = [_group(1, 300), _group(2, 300)]  # 4 rows of one 30-token prompt, 2-token actions
    budget = learner.cfg.learner.micro_batch_tokens
    try:
        learner.cfg.learner.micro_batch_tokens = 35  # the prompt once + 2 actions: 2 rows per micro-batch
        got = {}
        for share in (1.0, 0.5):
            learner.load_checkpoint(start)
            learner.cfg.rl.kl_probe_share = share
            got[share] = learner.rl_step(batch)
    finally:
        learner.cfg.rl.kl_probe_share, learner.cfg.learner.micro_batch_tokens = 1.0, budget
    full, half = got[1.0], got[0.5]
    assert full.micro_batches == 2 and full.kl_probe_share == 1.0 and half.kl_probe_share == 0.5
    assert half.approx_kl_steps[0] == pytest.approx(full.approx_kl_steps[0], rel=1e-6)
    assert half.approx_kl == pytest.approx(full.approx_kl, rel=1e-4) and full.approx_kl > 0
    assert half.entropy_steps[-1] == pytest.approx(full.entropy_steps[-1], rel=1e-4)


def test_probe_indices_are_evenly_spaced_and_never_empty():
    from learner.actor import probe_indices

    assert probe_indices(0, 0.5) == [] and probe_indices(1, 0.01) == [0]
    assert probe_indices(12, 0.25) == [0, 6, 11] and probe_indices(4, 1.0) == [0, 1, 2, 3]
    assert probe_indices(7, 0.1) == [3]


def test_rl_can_start_from_bc_adams_second_moment_and_refuses_when_there_is_none(learner):
    """rl.adam_start=bc_second_moment: a fresh RL phase drops the first moment (no push along the last phase's
    gradients) and keeps the second moment and step count; fresh forgets both; keeping what is not there is an
    error that says what to set, not a silent fresh Adam."""
    from learner.engine import inner_optimizer

    learner.rl_step([_group(8, 1000)])  # the optimizer holds state: moments and step counts
    opt = inner_optimizer(learner.engine.optimizer)
    before = {id(p): (s["exp_avg_sq"].clone(), float(s["step"])) for p, s in opt.state.items()}
    assert before and any(float(s["exp_avg"].abs().max()) > 0 for s in opt.state.values())
    done, learner.state.rl_steps = learner.state.rl_steps, 0  # a fresh RL phase
    try:
        learner.cfg.rl.adam_start = "bc_second_moment"
        assert learner.begin_rl()["bc_second_moment"] is True
        for p, s in opt.state.items():
            v, step = before[id(p)]
            assert (
                float(s["exp_avg"].abs().max()) == 0
                and torch.equal(s["exp_avg_sq"], v)
                and float(s["step"]) == step
            )
        learner.rl_step([_group(9, 1100)])  # the kept state steps: the step count goes on from BC's
        assert all(float(s["step"]) > before[id(p)][1] for p, s in opt.state.items())
        learner.state.rl_steps = 0
        learner.cfg.rl.adam_start = "fresh"
        assert learner.begin_rl()["bc_second_moment"] is False and not opt.state
        learner.cfg.rl.adam_start = "bc_second_moment"
        with pytest.raises(ValueError, match="set rl.adam_start=fresh"):
            learner.begin_rl()
    finally:
        learner.cfg.rl.adam_start = "fresh"
        learner.state.rl_steps += done
        learner.scheduler.begin(learner.cfg.rl.lr)


def test_frozen_layers_keep_the_embeddings_and_lower_layers_exactly_and_bc_trains_everything(learner):
    """rl.frozen_layers=1 on the 2-layer model: an RL step leaves the embeddings (the tied output head with them)
    and layer 0 bit for bit as they were, moves layer 1 and the final norm; a BC step afterwards trains every
    parameter again. Asking to freeze every layer, or to freeze under ZeRO, is an error that says why."""
    learner.cfg.rl.frozen_layers = 1
    try:
        begun = learner.begin_rl()
        total = sum(p.numel() for p in learner.engine.module.parameters())
        assert begun["frozen_layers"] == 1 and 0 < begun["trainable_params"] < total
        before = _weights(learner)
        learner.rl_step([_group(10, 1200)])
        after = _weights(learner)
        frozen = [n for n in after if "embed_tokens" in n or ".layers.0." in n]
        moved = [n for n in after if ".layers.1." in n]
        assert frozen and moved
        assert all(torch.equal(after[n], before[n]) for n in frozen)
        assert all(not torch.equal(after[n], before[n]) for n in moved if "layernorm" not in n)
        learner.bc_step(_group(11, 1300).trajectories)
        trained = _weights(learner)
        assert all(p.requires_grad for p in learner.engine.module.parameters())
        assert not torch.equal(trained[frozen[0]], after[frozen[0]])  # BC moved the embeddings
        learner.cfg.rl.frozen_layers = 2
        with pytest.raises(ValueError, match="has 2 decoder layers; keep at least one"):
            learner.begin_rl()
    finally:
        learner.cfg.rl.frozen_layers = 0
        learner.begin_rl()
    assert all(p.requires_grad for p in learner.engine.module.parameters())
    with pytest.raises(ValueError, match="needs learner.zero_stage 0"):
        load_config(None, ["rl.frozen_layers=4", "learner.zero_stage=2"])
