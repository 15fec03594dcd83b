"""Training rows built token-exactly from Turns, grouped into micro-batches by a token budget.

One Sample = one Turn: its exact prompt ids then its exact completion ids (never re-tokenized), with the loss mask of
`Turn.loss_mask` (1 only on generated tokens). Micro-batches are left-padded so that every row's completion sits at
the right edge: the model then only has to project the last K hidden states to the vocabulary (`logits_to_keep`),
which on a 49k vocabulary is most of the saving on long prompts with short actions.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from common.records import Trajectory, TrajectoryGroup, Turn
from learner.algos import AdvantageStats, grpo_advantages, mgrpo_sample_weights


@dataclass
class Sample:
    """One training row."""

    input_ids: list[int]  # [L] prompt ids + completion ids, exactly as the engine saw / produced them
    loss_mask: list[int]  # [L] 1 on generated tokens
    advantage: float = 0.0  # the trajectory's advantage (RL); unused in BC
    weight: float = 1.0  # M-GRPO weight (see algos.mgrpo_sample_weights)
    # [C] engine logprobs, for the mismatch report and the importance weights of lagged turns
    sampling_logprobs: list[float] = field(default_factory=list)
    where: str = ""  # "task#sample/turn", for error messages
    version: int = 0  # the weight version that sampled the turn
    lag: int = 0  # weight versions between the sampler's and the learner's (rollout.overlap_with_learner)

    @classmethod
    def from_turn(cls, turn: Turn, where: str = "", **kw: Any) -> Sample:
        return cls(
            input_ids=list(turn.prompt_ids) + list(turn.completion_ids),
            loss_mask=turn.loss_mask,
            sampling_logprobs=list(turn.logprobs),
            where=where,
            version=int(turn.weight_version),
            **kw,
        )

    @property
    def trained_tokens(self) -> int:
        return sum(self.loss_mask[1:])  # the first token has no predictor


def _turn_samples(traj: Trajectory, max_len: int, skipped: dict[str, int], **kw: Any) -> list[Sample]:
    out = []
    for turn in traj.turns:
        where = f"{traj.id}/turn{turn.index}"
        if not turn.completion_ids:
            skipped["empty_completion"] += 1
            continue
        if not turn.prompt_ids:
            raise ValueError(
                f"{where}: the turn has no prompt_ids; trajectories must carry the exact prompt ids "
                "(build them with common.prompts) before training"
            )
        if len(turn.prompt_ids) + len(turn.completion_ids) > max_len:
            skipped["too_long"] += 1
            continue
        out.append(Sample.from_turn(turn, where=where, **kw))
    return out


def demo_samples(trajs: Sequence[Trajectory], max_len: int) -> tuple[list[Sample], dict[str, int]]:
    """BC rows: every turn of every demonstration with a completion; over-long turns are skipped and counted."""
    skipped = {"empty_completion": 0, "too_long": 0}
    samples = [s for t in trajs for s in _turn_samples(t, max_len, skipped)]
    return samples, skipped


def rl_samples(
    groups: Sequence[TrajectoryGroup],
    max_len: int,
    eps: float,
    keep_zero_advantage: bool,
    learner_version: int | None = None,
) -> tuple[list[Sample], AdvantageStats, dict[str, int]]:
    """RL rows with their advantage and M-GRPO weight; with `learner_version`, each row's lag (versions between the
    weights that sampled the turn and the learner's).

    Trajectories whose reward is None get no advantage and no rows. Rows with advantage 0 carry no policy gradient;
    they are dropped unless `keep_zero_advantage` (needed when a KL penalty acts on them) but their groups still
    count in the weights, as in the paper's batch average.
    """
    for g in groups:
        if g.failed:
            raise ValueError(
                f"group of task {g.task_id} holds an infrastructure failure; re-run it, never train it"
            )
    trajs = [t for g in groups for t in g.trajectories]
    gids = [gi for gi, g in enumerate(groups) for _ in g.trajectories]
    adv, stats = grpo_advantages([t.reward for t in trajs], gids, eps=eps)
    skipped = {"empty_completion": 0, "too_long": 0, "zero_advantage": 0}
    rows: list[tuple[Sample, Hashable, Hashable]] = []
    for ti, (traj, a, gi) in enumerate(zip(trajs, adv, gids, strict=True)):
        if a is None:
            continue
        rows += [(s, gi, ti) for s in _turn_samples(traj, max_len, skipped, advantage=a)]
    weights = mgrpo_sample_weights([r[1] for r in rows], [r[2] for r in rows])
    samples = []
    for (s, _, _), w in zip(rows, weights, strict=True):
        s.weight = w
        if learner_version is not None:
            s.lag = max(0, learner_version - s.version)
        if s.advantage == 0.0 and not keep_zero_advantage:
            skipped["zero_advantage"] += 1
            continue
        samples.append(s)
    return samples, stats, skipped


def micro_batches(samples: Sequence[Sample], token_budget: int) -> list[list[int]]:
    """Indices of samples per micro-batch, so that rows * longest row <= token_budget (a longer row goes alone).

    Longest first, greedy: padding stays small because neighbours have similar lengths.
    """
    order = sorted(range(len(samples)), key=lambda i: len(samples[i].input_ids), reverse=True)
    batches: list[list[int]] = []
    for i in order:
        if batches:
            cur = batches[-1]
            longest = len(samples[cur[0]].input_ids)
            if (len(cur) + 1) * longest <= token_budget:
                cur.append(i)
                continue
        batches.append([i])
    return batches


@dataclass
class Batch:
    """Tensors of one left-padded micro-batch (B rows, L positions, K = positions whose logits are needed)."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    position_ids: torch.Tensor  # [B, L]
    logits_to_keep: (
        int  # K + 1: the model returns logits for the last K + 1 positions, the last one is unused
    )
    targets: torch.Tensor  # [B, K] the token ids predicted by those logits
    mask: torch.Tensor  # [B, K] float, 1 on trained tokens
    advantages: torch.Tensor  # [B]
    weights: torch.Tensor  # [B]
    sampling_logprobs: torch.Tensor  # [B, K] engine logprobs on trained tokens (NaN where unknown)
    lags: torch.Tensor  # [B] weight versions the row's sampler was behind the learner

    def to(self, device: torch.device | str) -> Batch:
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()}
        return Batch(**moved)


def batch_logits(model: Any, batch: Batch) -> torch.Tensor:
    """[B, K, V] float32 next-token logits of `model` at the positions that predict `batch.targets` (the forward
    the learner trains with; callers choose the autocast around it)."""
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        logits_to_keep=batch.logits_to_keep,
        use_cache=False,
    )
    return out.logits[:, :-1].float()


def collate(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Left-pad the rows; keep only the right-edge window that holds every trained token."""
    length = max(len(s.input_ids) for s in samples)
    b = len(samples)
    ids = torch.full((b, length), pad_id, dtype=torch.long)
    attn = torch.zeros((b, length), dtype=torch.long)
    mask = torch.zeros((b, length), dtype=torch.float32)
    samp = torch.full((b, length), float("nan"), dtype=torch.float32)
    for r, s in enumerate(samples):
        n = len(s.input_ids)
        if len(s.loss_mask) != n:
            raise ValueError(f"{s.where}: loss mask has {len(s.loss_mask)} entries for {n} tokens")
        ids[r, length - n :] = torch.tensor(s.input_ids, dtype=torch.long)
        attn[r, length - n :] = 1
        row_mask = torch.tensor(s.loss_mask, dtype=torch.float32)
        row_mask[0] = 0.0  # nothing predicts a sequence's first token
        mask[r, length - n :] = row_mask
        ones = [i for i, m in enumerate(s.loss_mask) if m]
        # engine logprobs are known for exactly the generated tokens
        if len(s.sampling_logprobs) == len(ones):
            for i, lp in zip(ones, s.sampling_logprobs, strict=True):
                if i > 0:
                    samp[r, length - n + i] = lp
    nonzero = mask.sum(0).nonzero()
    first = int(nonzero.min()) if len(nonzero) else length - 1
    first = max(first, 1)
    position_ids = (attn.cumsum(-1) - 1).clamp(min=0)
    return Batch(
        input_ids=ids,
        attention_mask=attn,
        position_ids=position_ids,
        logits_to_keep=length - first + 1,
        targets=ids[:, first:],
        mask=mask[:, first:],
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        weights=torch.tensor([s.weight for s in samples], dtype=torch.float32),
        sampling_logprobs=samp[:, first:],
        lags=torch.tensor([s.lag for s in samples], dtype=torch.long),
    )
