"""LearnerActor: behaviour cloning and M-GRPO on a DeepSpeed engine, checkpoints, and full weights for the push.

A plain class; the driver applies `ray.remote(num_gpus=...)(LearnerActor)` where it launches it. On one machine:

    cfg = load_config("configs/cpu_demo.yaml")
    learner = LearnerActor(cfg)                      # DS_ACCELERATOR=cpu + gloo when no GPU is visible
    learner.train_bc(demos, held_out)                # SFT on action tokens of each turn's exact prompt
    learner.begin_rl(reference=bc_checkpoint)        # KL reference = the BC result; fresh optimizer
    learner.rl_step(groups)                          # advantages, M-GRPO, one optimizer step
    learner.save_checkpoint()                        # <output_dir>/checkpoints/ckpt-<iteration>

On a cluster each rank is one actor (`LearnerActor(cfg, world_size=N, rank=r)`, MASTER_ADDR / MASTER_PORT set by the
launcher); every rank receives the same batch and trains its round-robin share of the micro-batches.
Departures from the paper: each turn is its own training row with the exact prompt it had (the paper's code trains an
episode as one sequence); see learner/algos.py for the loss.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from common.config import TrainConfig
from common.records import Trajectory, TrajectoryGroup, Turn
from learner import checkpoint as ckpt
from learner import engine as eng
from learner.algos import kl_k3, policy_loss, sft_loss, tis_weights, token_entropy, token_logprobs
from learner.samples import (
    Batch,
    Sample,
    batch_logits,
    collate,
    collate_tree,
    demo_samples,
    layout,
    rl_samples,
)
from learner.stats import BCSummary, StepStats
from learner.weight_sync import PushStats
from rollout_workers.handles import EngineHandle

log = logging.getLogger(__name__)


class LearnerActor:
    def __init__(
        self,
        cfg: TrainConfig,
        *,
        world_size: int = 1,
        rank: int = 0,
        model_path: str | None = None,
        checkpoint_root: str | None = None,
    ) -> None:
        eng.init_distributed(world_size, rank)
        self.cfg, self.world_size, self.rank = cfg, world_size, rank
        self.model_path = model_path or cfg.model_path
        self.checkpoint_root = Path(checkpoint_root or cfg.output_dir / "checkpoints")
        self.device = eng.device()
        conf = eng.ds_config(cfg, world_size)
        self._hf_ds = eng.hf_zero3_config(conf)  # must outlive every from_pretrained under ZeRO-3
        self.engine, self.scheduler = eng.build_engine(eng.load_model(self.model_path, cfg), cfg, world_size)
        self.engine.train()
        # a cached prompt forward cannot be recomputed by gradient checkpointing (it would append its KV twice)
        self.share_prompts = cfg.learner.share_prompts and not self.engine.module.is_gradient_checkpointing
        self.ref: Any = None  # the KL reference: built by begin_rl from the policy at the start of RL
        self._rl_begun = False
        self.tokenizer = _load_tokenizer(self.model_path)
        pad = self.tokenizer.pad_token_id if self.tokenizer is not None else None
        if pad is None:  # padding is masked out, so any id works; prefer the model's own
            mc = self.engine.module.config
            pad = mc.pad_token_id if mc.pad_token_id is not None else (mc.eos_token_id or 0)
        self.pad_id = int(pad[0] if isinstance(pad, list) else pad)
        self.state = ckpt.LearnerState(model_source=self.model_path)
        self._pushers: dict[str, Any] = {}
        self.last_checkpoint: str | None = None
        self.resumed_from = self.maybe_resume()

    # ---- forward helpers -------------------------------------------------------------------------------------
    @property
    def iteration(self) -> int:
        return self.state.iteration

    def _logits(self, model: Any, batch: Batch) -> torch.Tensor:
        """[B, K, V] next-token logits at the kept positions (those that predict `batch.targets`); under
        `learner.cpu_autocast: bf16` the matmuls run in bf16 (the logits come back float32 for the log-softmax)."""
        with eng.autocast(self.cfg):
            return batch_logits(model, batch)

    def _tempered_logits(self, model: Any, batch: Batch, temperature: float) -> torch.Tensor:
        """[B, K, V] logits / T: the distribution the engine sampled from is softmax(logits / T), so RL must score
        tokens under that one."""
        logits = self._logits(model, batch)
        return logits.float() / temperature if temperature != 1.0 else logits

    def _logprobs(self, model: Any, batch: Batch, temperature: float = 1.0) -> torch.Tensor:
        """[B, K] logprob of each kept target token under `model` (the engine or the reference), at `temperature`."""
        return token_logprobs(self._tempered_logits(model, batch, temperature), batch.targets)

    def _logprobs_entropy(self, batch: Batch, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
        """The policy's [B, K] logprobs (with the graph when grad is on) and [B, K] full-vocabulary entropies
        (no graph), from one forward."""
        logits = self._tempered_logits(self.engine, batch, temperature)
        with torch.no_grad():
            entropy = token_entropy(logits)
        return token_logprobs(logits, batch.targets), entropy

    def _my_batches(self, samples: list[Sample]) -> list[Batch]:
        """This rank's micro-batches. Every rank runs the same count (collectives must pair up): a rank short of
        one runs a copy of another with its mask zeroed, which adds nothing to the gradient."""
        parts, tree = self._parts(samples)
        per_rank = math.ceil(len(parts) / self.world_size)
        mine = parts[self.rank :: self.world_size]
        batches = [self._collate([samples[i] for i in idx], tree) for idx in mine]
        while len(batches) < per_rank:
            dummy = collate([samples[parts[0][0]]], self.pad_id)
            dummy.mask.zero_()
            batches.append(dummy)
        return [b.to(self.device) for b in batches]

    def _parts(self, samples: Sequence[Sample]) -> tuple[list[list[int]], bool]:
        """The micro-batches and whether they are prefix trees (`learner.share_prompts`, where they pay: `layout`)."""
        return layout(samples, self.cfg.learner.micro_batch_tokens, share_prompts=self.share_prompts)

    def _collate(self, rows: Sequence[Sample], tree: bool) -> Batch:
        """A micro-batch's tensors: a prefix tree when `tree` (rows of one prompt hold it once, the prompts of the
        micro-batch hold their common prefix once); a lone row is a plain row."""
        if tree and len(rows) > 1:
            return collate_tree(rows, self.pad_id)
        return collate(rows, self.pad_id)

    def _optimizer_step(self) -> float:
        """One DeepSpeed step after the accumulated backward passes; returns the pre-clip gradient norm."""
        norm = None
        if self.cfg.learner.zero_stage == 0:  # DeepSpeed only tracks the norm in its ZeRO optimizers
            grads = [
                p.grad.detach().float().norm() for p in self.engine.module.parameters() if p.grad is not None
            ]
            norm = float(torch.stack(grads).norm()) if grads else 0.0
        self.engine.step()
        self.state.optimizer_steps += 1
        if norm is None:
            got = self.engine.get_global_grad_norm()
            norm = float(got) if got is not None else float("nan")
        return norm

    def _finish(self, stats: StepStats, t0: float, tokens: int) -> StepStats:
        self.state.iteration += 1
        if stats.kind == "bc":
            self.state.bc_steps += 1
        else:
            self.state.rl_steps += 1
        stats.seconds = time.perf_counter() - t0
        stats.iteration, stats.tokens, stats.lr = self.iteration, tokens, self.scheduler.get_last_lr()[0]
        stats.tokens_per_s = tokens / stats.seconds if stats.seconds > 0 else 0.0
        return stats

    # ---- behaviour cloning -------------------------------------------------------------------------------------
    def bc_step(self, demos: Sequence[Trajectory]) -> StepStats:
        """One optimizer step of behaviour cloning over every turn of `demos` (trajectories whose turns carry their
        exact prompt / completion ids): the mean NLL over all action tokens of the batch."""
        samples, dropped = demo_samples(demos, self.cfg.model.max_context)
        return self._bc_step(samples, StepStats("bc", dropped=dict(dropped)))

    def _bc_step(self, samples: list[Sample], stats: StepStats) -> StepStats:
        t0 = time.perf_counter()
        # BC trains every parameter, whatever an RL phase froze
        eng.freeze_lower_layers(self.engine.module, 0)
        stats.samples = len(samples)
        if not samples:
            stats.skipped = True
            return self._finish(stats, t0, 0)
        total = sum(s.trained_tokens for s in samples)
        batches = self._my_batches(samples)
        loss_sum = 0.0
        for k, batch in enumerate(batches):
            self.engine.set_gradient_accumulation_boundary(k == len(batches) - 1)
            # x world_size: DeepSpeed averages gradients over ranks, our loss is already the batch mean
            loss = sft_loss(self._logprobs(self.engine, batch), batch.mask, total) * self.world_size
            self.engine.backward(loss, scale_wrt_gas=False)
            loss_sum += loss.item() / self.world_size
        stats.loss, stats.grad_norm = loss_sum, self._optimizer_step()
        stats.trained_tokens, stats.micro_batches = total, len(batches)
        return self._finish(stats, t0, sum(len(s.input_ids) for s in samples))

    def train_bc(
        self,
        demos: Sequence[Trajectory],
        held_out: Sequence[Trajectory] = (),
        *,
        epochs: int | None = None,
        batch_size: int | None = None,
    ) -> BCSummary:
        """Behaviour cloning: `bc.epochs` seeded shuffles of the demonstrations' turns, `bc.batch_size` turns per
        optimizer step, LR `bc.lr` with `bc.warmup_steps` and `bc.schedule`. Action-token accuracy and NLL on the
        `held_out` demonstrations are measured before the first step and after every epoch. Returns the phase's
        summary: `history` holds each step's stats, `held_out` each measurement."""
        import random

        bc = self.cfg.bc
        epochs = bc.epochs if epochs is None else epochs
        batch_size = bc.batch_size if batch_size is None else batch_size
        samples, dropped = demo_samples(demos, self.cfg.model.max_context)
        probe, _ = demo_samples(held_out, self.cfg.model.max_context)
        per_epoch = math.ceil(len(samples) / batch_size) if samples else 0
        self.scheduler.begin(bc.lr, bc.warmup_steps, per_epoch * epochs, bc.schedule)
        history: list[StepStats] = []
        checks = [{"epoch": 0, **self.evaluate_demos(probe)}] if probe else []
        for epoch in range(epochs):
            order = list(range(len(samples)))
            random.Random(self.cfg.seed + epoch).shuffle(order)
            for i in range(0, len(order), batch_size):
                step = self._bc_step(
                    [samples[j] for j in order[i : i + batch_size]], StepStats("bc", epoch=epoch + 1)
                )
                history.append(step)
                self._say_bc(step, len(history), per_epoch * epochs, history)
            if probe:
                checks.append({"epoch": epoch + 1, **self.evaluate_demos(probe)})
                h = checks[-1]
                self._say(
                    f"[bc] epoch {epoch + 1}/{epochs} held-out: token accuracy {h['token_accuracy']:.3f}, "
                    f"exact turns {h['turn_exact']:.3f}, NLL {h['nll']:.3f}"
                )
        done = [h for h in history if not h.skipped]
        seconds = sum(h.seconds for h in history)
        tokens = sum(h.tokens for h in history)
        return BCSummary(
            steps=len(done),
            turns=len(samples),
            dropped=dict(dropped),
            loss_first=done[0].loss if done else math.nan,
            loss_last=done[-1].loss if done else math.nan,
            tokens=tokens,
            trained_tokens=sum(h.trained_tokens for h in done),
            seconds=seconds,
            tokens_per_s=tokens / seconds if seconds else 0.0,
            iteration=self.iteration,
            held_out=checks,
            history=history,
        )

    def _say(self, line: str) -> None:
        """A progress line on the console (`logging.progress`): from a Ray actor, stdout reaches the driver's
        console with the actor's name in front; rank 0 only."""
        log.info(line)
        if self.cfg.logging.progress and self.rank == 0:
            print(line, flush=True)

    def _say_bc(self, step: StepStats, done: int, total: int, history: Sequence[StepStats]) -> None:
        """One line per BC step: loss, throughput and the time left at the mean pace so far (the phase is one
        call of minutes, so without it the console is silent)."""
        spent = sum(h.seconds for h in history)
        left = spent / max(1, done) * max(0, total - done)
        self._say(
            f"[bc] step {done}/{total}: loss {step.loss:.4f}, grad norm {step.grad_norm:.2f}, lr {step.lr:.1e}, "
            f"{step.tokens_per_s:.0f} tok/s, {step.seconds:.1f} s; ~{left / 60:.1f} min left"
        )

    @torch.no_grad()
    def evaluate_demos(self, samples: Sequence[Sample]) -> dict[str, float]:
        """Teacher-forced check on demonstration turns: NLL per action token, the share of action tokens that are
        the model's argmax, and the share of turns whose whole reply is argmax (what greedy decoding would write)."""
        nll, correct, tokens, exact = 0.0, 0.0, 0.0, 0
        parts, tree = self._parts(samples)
        for idx in parts:
            batch = self._collate([samples[i] for i in idx], tree).to(self.device)
            logits = self._logits(self.engine, batch).float()
            lp = token_logprobs(logits, batch.targets)
            hit = (logits.argmax(-1) == batch.targets).float() * batch.mask
            nll -= float((lp * batch.mask).sum())
            correct += float(hit.sum())
            tokens += float(batch.mask.sum())
            exact += int(((hit == batch.mask) | (batch.mask == 0)).all(-1).sum())
        n = max(tokens, 1.0)
        return {"nll": nll / n, "token_accuracy": correct / n, "turn_exact": exact / max(1, len(samples))}

    # ---- M-GRPO ------------------------------------------------------------------------------------------------
    def begin_rl(self, reference: str | None = None) -> dict[str, Any]:
        """Start (or resume) the RL phase. The KL reference is the policy at the start of RL: the folder
        `reference` (the BC result's checkpoint; kept in the state so a resumed run uses the same one), else the
        current weights. A fresh RL phase (no RL step done yet) also restarts the optimizer (`rl.adam_start`): BC's
        first moment is always dropped (it would push RL's first steps along BC's gradients); its second moment is
        kept with `bc_second_moment`. With `rl.frozen_layers` the embeddings and that many lowest decoder layers
        stop training here (learner/engine.py, `freeze_lower_layers`)."""
        rl = self.cfg.rl
        trainable = eng.freeze_lower_layers(self.engine.module, rl.frozen_layers, self.engine.optimizer)
        reference = reference or self.state.rl_reference or None
        if rl.kl_beta > 0:
            self.ref = eng.build_reference(reference or self.model_path, self.cfg, self.world_size)
            if reference is None:  # no folder: copy the weights as they are now
                eng.copy_weights(self.engine.module, self.ref, self.cfg.learner.zero_stage)
        self.state.rl_reference = reference
        fresh = self.state.rl_steps == 0
        kept = False
        if fresh:
            keep = rl.adam_start == "bc_second_moment"
            kept = eng.reset_optimizer(self.engine, keep_second_moment=keep)
            if keep and not kept:
                raise ValueError(
                    "rl.adam_start=bc_second_moment keeps behaviour cloning's Adam state, but this learner has "
                    "none (no BC step in this process and no optimizer state in the checkpoint it resumed from: "
                    "a weights-only BC checkpoint, or a run without a BC phase); set rl.adam_start=fresh"
                )
            self.scheduler.begin(rl.lr, rl.warmup_steps)
        self._rl_begun = True
        return {
            "reference": reference or "current weights",
            "fresh_optimizer": fresh,
            "bc_second_moment": kept,
            **trainable,
        }

    def rl_step(self, groups: Sequence[TrajectoryGroup]) -> StepStats:
        """M-GRPO on finished groups: `rl.updates_per_batch` optimizer steps over the batch (`_rl_updates`).

        Advantages per `rl.advantage` (trajectory, or plus step credit); expert-played turns train off-policy
        (learner/algos.py). Logprobs are taken at the sampling temperature. A batch without any non-zero advantage
        makes no optimizer step at all, with or without a KL term (a KL-only step would only pull towards the
        reference on data that carries no signal).
        """
        t0 = time.perf_counter()
        if not self._rl_begun:
            self.begin_rl()
        rl = self.cfg.rl
        kl_on = rl.kl_beta > 0 and self.ref is not None
        samples, adv, dropped = rl_samples(
            groups,
            self.cfg.model.max_context,
            rl.adv_eps,
            keep_zero_advantage=kl_on,
            learner_version=self.state.weight_version,
            advantage=rl.advantage,
            step_weight=rl.step_advantage_weight,
            credit_no_ops=rl.credit_no_op_turns,
            baseline=rl.baseline,
            negative_scale=rl.negative_scale,
        )
        lags = [s.lag for s in samples]
        stats = StepStats(
            "rl",
            samples=len(samples),
            lag_max=max(lags, default=0),
            lagged_samples=sum(1 for x in lags if x > 0),
            advantages=adv.as_dict(),
            dropped=dict(dropped),
            expert_rows=sum(1 for s in samples if s.off_policy),
        )
        if not any(s.advantage != 0.0 for s in samples):
            self.state.no_signal_batches += 1
            stats.skipped = stats.no_signal = True
            stats.loss = 0.0
            return self._finish(stats, t0, 0)
        batches = self._my_batches(samples)
        self._rl_updates(batches, kl_on, stats)
        stats.micro_batches = len(batches)
        return self._finish(stats, t0, sum(len(s.input_ids) for s in samples) * rl.updates_per_batch)

    def _rl_updates(self, batches: list[Batch], kl_on: bool, stats: StepStats) -> None:
        """`rl.updates_per_batch` (U) optimizer steps over `batches`, and how far each step moved the policy.

        pi_old, the policy before this call, is the detached logprobs of the first gradient pass (no step has
        happened yet, so they are the numbers a separate no-grad forward would give, one forward fewer). Pass k
        (k = 2..U) runs on the policy after k - 1 steps, so its ratios are off 1 and its clip can act; its detached
        logprobs give the KL to pi_old after step k - 1, and a no-grad forward after the last step gives the
        last, on `rl.kl_probe_share` of the micro-batches. Into `stats`: the loss of the batch as it came, per-step
        KL / entropy / clip share / ratio / gradient norm and their summaries, pi_old's KL to the reference and the
        engine/learner mismatch."""
        rl, temp = self.cfg.rl, self.cfg.inference.temperature
        with torch.no_grad():
            ref = [self._logprobs(self.ref, b, temp) for b in batches] if kl_on else [None] * len(batches)
        passes = [self._rl_pass(batches, None, ref, kl_on)]
        old = passes[0].logprobs
        norms = [self._optimizer_step()]
        for _ in range(1, rl.updates_per_batch):
            passes.append(self._rl_pass(batches, old, ref, kl_on))
            norms.append(self._optimizer_step())
        probed = probe_indices(len(batches), rl.kl_probe_share)
        with torch.no_grad():
            final = [self._logprobs_entropy(batches[k], temp) for k in probed]
        tokens = passes[0].sums["tokens"]
        n = max(tokens, 1.0)
        stats.loss, stats.grad_norm, stats.grad_norms = passes[0].loss, norms[-1], norms
        stats.trained_tokens = int(tokens)
        # kl_k3(old, new) = exp(new - old) - (new - old) - 1: KL(pi_old || pi_new) on tokens drawn from pi_old
        stats.approx_kl_steps = [  # after steps 1..U-1: the next pass's forward, on the whole batch
            _masked_sum((kl_k3(o, x) for o, x in zip(old, p.logprobs, strict=True)), batches) / n
            for p in passes[1:]
        ]
        sub = [batches[k] for k in probed]  # after step U: the probe's micro-batches
        n_sub = max(sum(float(b.mask.sum()) for b in sub), 1.0)
        kl_last = _masked_sum((kl_k3(old[k], lp) for k, (lp, _) in zip(probed, final, strict=True)), sub)
        stats.approx_kl_steps.append(kl_last / n_sub)
        stats.approx_kl = stats.approx_kl_steps[-1]
        stats.kl_probe_share = len(probed) / len(batches)
        final_entropy = _masked_sum((e for _, e in final), sub) / n_sub
        stats.entropy_steps = [p.entropy_sum / n for p in passes] + [final_entropy]
        stats.entropy = stats.entropy_steps[0]
        if rl.updates_per_batch > 1:  # in the first pass ratio = 1 and nothing clips, by construction
            stats.clip_frac_steps = [p.sums["clipped"] / n for p in passes[1:]]
            stats.ratio_steps = [p.sums["ratio_sum"] / n for p in passes[1:]]
            stats.clip_frac = sum(stats.clip_frac_steps) / len(stats.clip_frac_steps)
            stats.ratio_mean = sum(stats.ratio_steps) / len(stats.ratio_steps)
        if kl_on:  # the KL term as the loss saw it in the first pass (pi_old to the reference)
            stats.kl = passes[0].sums["ref_kl_sum"] / n
        self._sampling_stats(batches, old, stats)

    def _rl_pass(
        self, batches: list[Batch], old: list[torch.Tensor] | None, ref: list[Any], kl_on: bool
    ) -> _Pass:
        """One gradient pass of the M-GRPO loss over `batches` (backward on each, the accumulation boundary on the
        last; the optimizer step is the caller's). `old`: [B, K] pi_old per micro-batch, None = this pass.s own
        detached logprobs (the first pass); `ref`: [B, K] reference logprobs or None each."""
        rl, temp = self.cfg.rl, self.cfg.inference.temperature
        lagged = any(bool((b.lags > 0).any()) for b in batches)
        out = _Pass()
        for k, b in enumerate(batches):
            self.engine.set_gradient_accumulation_boundary(k == len(batches) - 1)
            lp, entropy = self._logprobs_entropy(b, temp)
            old_k = old[k] if old is not None else lp.detach()
            loss, st = policy_loss(
                lp,
                old_k,
                b.advantages,
                b.mask,
                rl.clip_eps,
                sample_weights=b.weights * self.world_size,
                ref_logprobs=ref[k],
                kl_beta=rl.kl_beta if kl_on else 0.0,
                is_weights=tis_weights(old_k, b.sampling_logprobs, b.lags, rl.tis_cap) if lagged else None,
                off_policy=b.off_policy,
            )
            self.engine.backward(loss, scale_wrt_gas=False)
            out.loss += loss.item() / self.world_size
            for key, value in st.items():
                out.sums[key] = out.sums.get(key, 0.0) + value
            out.logprobs.append(lp.detach())
            out.entropy_sum += float((entropy * b.mask).sum())
        return out

    def _sampling_stats(self, batches: list[Batch], old: list[torch.Tensor], stats: StepStats) -> None:
        """How far the engine's sampling logprobs are from pi_old's (sampled rows only), and the mean truncated
        importance weight on lagged tokens."""
        mismatch = [0.0, 0.0, 0.0]  # |logp_train - logp_sample| sum, k3 sum, count
        is_sum = [0.0, 0.0]  # importance weights on lagged tokens: sum, count
        for old_k, b in zip(old, batches, strict=True):
            _add_mismatch(mismatch, old_k, b)
            rows = (b.lags > 0).unsqueeze(-1) & (b.mask > 0)
            if bool(rows.any()):
                w = tis_weights(old_k, b.sampling_logprobs, b.lags, self.cfg.rl.tis_cap)
                is_sum[0] += float(w[rows].sum())
                is_sum[1] += float(rows.sum())
        if mismatch[2]:
            stats.sampling_abs_diff, stats.sampling_kl = mismatch[0] / mismatch[2], mismatch[1] / mismatch[2]
        if is_sum[1]:
            stats.tis_weight_mean = is_sum[0] / is_sum[1]

    # ---- inspection, weights, checkpoints ----------------------------------------------------------------------
    @torch.no_grad()
    def log_probs(self, items: Sequence[Turn | Sample], temperature: float = 1.0) -> list[list[float]]:
        """Current-policy logprob of every generated token of each turn, at `temperature` (for tests and mismatch
        checks)."""
        samples = [x if isinstance(x, Sample) else Sample.from_turn(x) for x in items]
        out: list[list[float]] = [[] for _ in samples]
        parts, tree = self._parts(samples)
        for idx in parts:
            batch = self._collate([samples[i] for i in idx], tree).to(self.device)
            lp = self._logprobs(self.engine, batch, temperature).float().cpu()
            for row, i in enumerate(idx):
                out[i] = lp[row][batch.mask[row].cpu() > 0].tolist()
        return out

    def named_full_parameters(self, device: str | None = "cpu") -> Iterator[tuple[str, torch.Tensor]]:
        """(HF name, full tensor) for every parameter, gathered one at a time under ZeRO-3 (a collective: every
        rank must iterate). Tensors are copies on `device` (None = the training device), in the training dtype.
        Tied weights appear once, under the name transformers keeps (e.g. model.embed_tokens.weight)."""
        import deepspeed

        zero3 = self.cfg.learner.zero_stage == 3
        for name, p in self.engine.module.named_parameters():
            if zero3:
                with deepspeed.zero.GatheredParameters([p], modifier_rank=None):
                    yield name, p.data.detach().to(device or p.device, copy=True)
            else:
                yield name, p.data.detach().to(device or p.device, copy=True)

    def push_weights(
        self, engines: Sequence[EngineHandle], method: str | None = None, version: int | None = None
    ) -> PushStats | None:
        """Send the current weights to every inference engine (learner/weight_sync.py); the weight version is kept
        in the learner's state, so it survives a resume. `version`: push under that version instead of the next
        one (the current weights again, to an engine that was restarted). Every rank must call it (ZeRO-3
        gathers); rank 0 pushes and returns the push's stats, the others None."""
        from learner.weight_sync import WeightPusher

        method = method or self.cfg.learner.weight_sync
        if self.rank != 0:
            for _ in self.named_full_parameters():
                pass
            return None
        pusher = self._pushers.setdefault(method, WeightPusher(method))  # type: ignore[arg-type]
        pusher.version = self.state.weight_version
        stats = pusher.push(self._in_engine_dtype(self.named_full_parameters()), engines, version=version)
        self.state.weight_version = stats.version
        return stats

    def _in_engine_dtype(
        self, named: Iterator[tuple[str, torch.Tensor]]
    ) -> Iterator[tuple[str, torch.Tensor]]:
        """The weights as the engines hold them (`model.dtype`): an fp32 learner feeding a bf16 engine sends half
        the bytes, and vLLM loads them without a dtype-mismatch warning per tensor."""
        want = getattr(torch, self.cfg.model.dtype, None)
        for name, t in named:
            yield name, (t.to(want) if isinstance(want, torch.dtype) and t.is_floating_point() else t)

    def resume(self) -> int:
        """The RL steps already done (0 on a fresh start). Resuming itself happens at construction, following
        `learner.resume` (auto | never | a folder)."""
        return self.state.rl_steps

    def resumed(self) -> bool:
        """Whether this learner started from a checkpoint."""
        return self.resumed_from is not None

    def driver_state(self) -> dict[str, Any]:
        """The driver's own state saved with the checkpoint this learner resumed from (`extra`)."""
        return dict(self.state.extra)

    def weight_version(self) -> int:
        """The version of the current weights (that of the last push; a resumed learner's from its checkpoint)."""
        return self.state.weight_version

    def current_model_path(self) -> str:
        """The folder an inference engine should start from: the newest checkpoint written or resumed, else the
        initial model."""
        return self.last_checkpoint or self.resumed_from or self.model_path

    def save_checkpoint(
        self,
        root: str | None = None,
        extra: dict[str, Any] | None = None,
        *,
        tag: str | None = None,
        iteration: int | None = None,
        optimizer: bool = True,
    ) -> str:
        """Write `<root>/ckpt-<learner iteration>` crash-safely (see learner/checkpoint.py); returns its path.
        `extra` (the driver's own state), `tag` and the driver's `iteration` are kept in trainer_state.json.
        `optimizer=False` writes a weights-only checkpoint (no DeepSpeed state: a quarter of the size in fp32),
        for a point that resumes with a fresh optimizer anyway (the BC result: RL starts with a fresh Adam).
        Under ZeRO-3 the DeepSpeed state is always written (the partitioned weights load only through it)."""
        optimizer = optimizer or self.cfg.learner.zero_stage == 3
        if extra is not None:
            self.state.extra = extra
        self.state.tag, self.state.driver_iteration = tag, iteration
        path = ckpt.save(
            self.engine,
            self.rank,
            Path(root) if root else self.checkpoint_root,
            self.state,
            self.named_full_parameters(),
            self.tokenizer,
            optimizer=optimizer,
            keep=self.cfg.learner.keep_checkpoints,
        )
        self.last_checkpoint = str(path)
        return self.last_checkpoint

    def load_checkpoint(self, path: str | Path) -> ckpt.LearnerState:
        """Restore weights, optimizer, scheduler, RNG and counters from a checkpoint folder, or from the newest
        complete checkpoint when `path` is a root that holds several (learner/checkpoint.py `load`)."""
        _, saved = ckpt.load(self.engine, self.rank, path)
        saved.model_source = self.model_path
        self.state = saved
        return self.state

    def maybe_resume(self) -> str | None:
        found = ckpt.resolve_resume(self.cfg.learner.resume, self.checkpoint_root)
        if found is None:
            return None
        self.load_checkpoint(found)
        return str(found)


def _load_tokenizer(path: str) -> Any:
    """The model folder's tokenizer, copied into checkpoints; a folder without one (a random model built from a
    config, as in bench/) trains all the same, since the learner never tokenizes text."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as e:
        import warnings

        warnings.warn(f"no tokenizer in {path} ({e}); checkpoints will hold none", stacklevel=2)
        return None


@dataclass
class _Pass:
    """One gradient pass over a batch's micro-batches."""

    loss: float = 0.0  # the summed M-GRPO loss
    sums: dict[str, float] = field(default_factory=dict)  # policy_loss's token sums, added over micro-batches
    logprobs: list[torch.Tensor] = field(default_factory=list)  # [B, K] per micro-batch, detached
    entropy_sum: float = 0.0  # full-vocabulary entropy summed over the trained tokens


def probe_indices(n: int, share: float) -> list[int]:
    """`ceil(share * n)` of the indices 0..n-1 (at least one), evenly spaced: micro-batches come longest first,
    so the probe spans the batch's row lengths."""
    if n <= 0:
        return []
    k = min(n, max(1, math.ceil(share * n - 1e-9)))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)} if k > 1 else {n // 2})


def _masked_sum(values: Iterable[torch.Tensor], batches: Sequence[Batch]) -> float:
    """Sum of per-token values ([B, K] per micro-batch) over the trained tokens of the matching micro-batches."""
    return sum(float((v * b.mask).sum()) for v, b in zip(values, batches, strict=True))


def _add_mismatch(acc: list[float], train_lp: torch.Tensor, b: Batch) -> None:
    """Accumulate how far the engine's sampling logprobs are from the learner's on the same tokens; off-policy
    (expert) rows have no sampler and are left out."""
    known = (b.mask > 0) & torch.isfinite(b.sampling_logprobs) & ~b.off_policy.unsqueeze(-1)
    if not bool(known.any()):
        return
    t, s = train_lp.detach().float()[known], b.sampling_logprobs[known]
    acc[0] += float((t - s).abs().sum())
    acc[1] += float((torch.exp(s - t) - (s - t) - 1).sum())
    acc[2] += float(known.sum())
