"""Training rows built token-exactly from Turns, grouped into micro-batches by a token budget.

One Sample = one Turn: its exact prompt ids then its exact completion ids (never re-tokenized), with the loss mask of
`Turn.loss_mask` (1 only on generated tokens). Micro-batches are left-padded so that every row's completion sits at
the right edge: the model then only has to project the last K hidden states to the vocabulary (`logits_to_keep`),
which on a 49k vocabulary is most of the saving on long prompts with short actions.

RL rows carry their advantage (the trajectory's, or with `rl.advantage: step` the turn's, see
learner.algos.step_advantages), their M-GRPO weight and whether they are off-policy (expert-played).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from common.records import Observation, Trajectory, TrajectoryGroup, Turn
from learner.algos import AdvantageStats, grpo_advantages, mgrpo_sample_weights, step_advantages


@dataclass
class Sample:
    """One training row."""

    input_ids: list[int]  # [L] prompt ids + completion ids, exactly as the engine saw / produced them
    loss_mask: list[int]  # [L] 1 on generated tokens
    advantage: float = 0.0  # RL: the trajectory's advantage (+ omega * the turn's step one); unused in BC
    weight: float = 1.0  # M-GRPO weight (see algos.mgrpo_sample_weights)
    # [C] engine logprobs, for the mismatch report and the importance weights of lagged turns
    sampling_logprobs: list[float] = field(default_factory=list)
    where: str = ""  # "task#sample/turn", for error messages
    version: int = 0  # the weight version that sampled the turn
    lag: int = 0  # weight versions between the sampler's and the learner's (scheduling.overlap_with_learner)
    # RL: an expert-played turn (Trajectory.source == "expert"), sampled by no engine: no clip, no importance
    # weight, lag 0, left out of the mismatch statistic (see learner/algos.py)
    off_policy: bool = False

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

    @property
    def prompt_len(self) -> int:
        """P: the tokens before the first trained one (the turn's prompt; the completion follows)."""
        return next((i for i, m in enumerate(self.loss_mask) if m), len(self.loss_mask))


def _turn_samples(
    traj: Trajectory,
    max_len: int,
    skipped: dict[str, int],
    advantages: Sequence[float] | None = None,
    **kw: Any,
) -> list[Sample]:
    """The trainable rows of `traj`'s turns (`advantages`: [T] one per turn, when given); empty completions and
    over-long turns are counted in `skipped`."""
    out = []
    for j, turn in enumerate(traj.turns):
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
        extra = {"advantage": advantages[j]} if advantages is not None else {}
        out.append(Sample.from_turn(turn, where=where, **extra, **kw))
    return out


def anchor_key(obs: Observation) -> str:
    """A stable key of the page a turn saw (its anchor state): sha1 of its URL, title and full text. The prompt
    shows that page cut to the token budget, a function of the text, so equal keys mean equal page text in the
    prompt. The header fold (`prompt.fold_header`) also depends on the previous page; the key leaves it out on
    purpose: the state is the page, not the path to it."""
    blob = json.dumps([obs.url, obs.title, obs.text], ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()


def _turn_advantages(
    trajs: Sequence[Trajectory],
    gids: Sequence[Hashable],
    traj_adv: Sequence[float | None],
    eps: float,
    omega: float,
    stats: AdvantageStats,
) -> list[list[float] | None]:
    """[N][T_i] per-turn advantages A_traj + omega * A_step (None for an unscorable trajectory); the anchor
    counts go into `stats.anchors`."""
    keys = [[anchor_key(turn.observation) for turn in t.turns] for t in trajs]
    step, stats.anchors = step_advantages([t.reward for t in trajs], gids, keys, eps=eps)
    out: list[list[float] | None] = []
    for a, s in zip(traj_adv, step, strict=True):
        # a step advantage is None only where the trajectory's reward is, and then `a` is None too
        out.append(None if a is None else [a + omega * (x if x is not None else 0.0) for x in s])
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
    advantage: str = "trajectory",
    step_weight: float = 1.0,
    credit_no_ops: bool = True,
    baseline: str = "task",
    negative_scale: float = 1.0,
) -> tuple[list[Sample], AdvantageStats, dict[str, int]]:
    """RL rows with their advantage, M-GRPO weight and off-policy flag; with `learner_version`, each row's lag
    (versions between the weights that sampled the turn and the learner's; 0 for expert turns).

    `advantage`: "trajectory" gives every turn its trajectory's group-relative advantage; "step" adds
    `step_weight` (omega) times the turn's step advantage over anchor states (learner.algos.step_advantages).
    Trajectories whose reward is None get no advantage and no rows. Rows with advantage 0 carry no policy gradient;
    they are dropped unless `keep_zero_advantage` (needed when a KL penalty acts on them) but their groups still
    count in the weights, as in the paper's batch average.
    `baseline`: "task" compares each trajectory with its group (GRPO); "template" with every trajectory of the
    batch whose group's task has the same template (`meta["template"]`; a group without one is its own template),
    so the advantage statistics then count templates, not groups. Step credit and the M-GRPO weights stay per group.
    `credit_no_ops=False`: a positive advantage of a turn that did nothing (`no_op_turns`) becomes 0 (counted in
    the third return value as `no_op_credit`).
    `negative_scale`: every negative per-turn advantage is multiplied by it (1 = GRPO, 0 = positive only).
    """
    if not 0.0 <= negative_scale <= 1.0:
        raise ValueError(f"negative_scale {negative_scale} is outside [0, 1]")
    if advantage not in ("trajectory", "step"):
        raise ValueError(f"unknown advantage {advantage!r} (trajectory | step)")
    if baseline not in ("task", "template"):
        raise ValueError(f"unknown baseline {baseline!r} (task | template)")
    for g in groups:
        if g.failed:
            raise ValueError(
                f"group of task {g.task_id} holds an infrastructure failure; re-run it, never train it"
            )
    trajs = [t for g in groups for t in g.trajectories]
    gids = [gi for gi, g in enumerate(groups) for _ in g.trajectories]
    bids = [template_of(g) for g in groups for _ in g.trajectories] if baseline == "template" else gids
    adv, stats = grpo_advantages([t.reward for t in trajs], bids, eps=eps)
    per_turn = (
        _turn_advantages(trajs, gids, adv, eps, step_weight, stats)
        if advantage == "step"
        else [None if a is None else [a] * len(t.turns) for t, a in zip(trajs, adv, strict=True)]
    )
    skipped = {"empty_completion": 0, "too_long": 0, "zero_advantage": 0, "no_op_credit": 0}
    if not credit_no_ops:
        for traj, a in zip(trajs, per_turn, strict=True):
            for t in no_op_turns(traj) if a is not None else ():
                if a[t] > 0:
                    a[t] = 0.0
                    skipped["no_op_credit"] += 1
    if negative_scale != 1.0:
        for a in per_turn:
            if a is not None:
                a[:] = [x * negative_scale if x < 0 else x for x in a]
    rows: list[tuple[Sample, Hashable, Hashable]] = []
    for ti, (traj, a, gi) in enumerate(zip(trajs, per_turn, gids, strict=True)):
        if a is None:
            continue
        expert = traj.source == "expert"
        rows += [(s, gi, ti) for s in _turn_samples(traj, max_len, skipped, a, off_policy=expert)]
    weights = mgrpo_sample_weights([r[1] for r in rows], [r[2] for r in rows])
    samples = []
    for (s, _, _), w in zip(rows, weights, strict=True):
        s.weight = w
        if learner_version is not None and not s.off_policy:  # no weights sampled an expert turn
            s.lag = max(0, learner_version - s.version)
        if s.advantage == 0.0 and not keep_zero_advantage:
            skipped["zero_advantage"] += 1
            continue
        samples.append(s)
    return samples, stats, skipped


def template_of(group: TrajectoryGroup) -> Hashable:
    """The template a group's task belongs to, as the rollout recorded it; a group without one stands alone."""
    for t in group.trajectories:
        if t.meta.get("template") is not None:
            return ("template", t.meta["template"])
    return ("task", group.task_id)


def no_op_turns(traj: Trajectory) -> list[int]:
    """Indices of the turns whose action did nothing: the next observation reports an action error, or shows the
    same page (`anchor_key`: URL, title, text) and the same tabs as the one the action was taken on. The last turn
    is never listed (its effect is the episode's end, which the reward judges)."""
    out = []
    for t, (now, nxt) in enumerate(itertools.pairwise(traj.turns)):
        a, b = now.observation, nxt.observation
        same = anchor_key(a) == anchor_key(b) and (a.tabs, a.active_tab) == (b.tabs, b.active_tab)
        if b.last_action_error or same:
            out.append(t)
    return out


def micro_batches(
    samples: Sequence[Sample], token_budget: int, *, share_prompts: bool = False
) -> list[list[int]]:
    """Indices of samples per micro-batch, so that rows * longest row <= token_budget (a longer row goes alone).

    Longest first, greedy: padding stays small because neighbours have similar lengths. With `share_prompts`,
    rows whose prompts are identical (a group's first turns: G samples of one page) first form micro-batches of
    their own, which `collate` lays out with the prompt once (`shared_prompt`): P + n * C tokens of work instead
    of n * (P + C); the rest are packed as above.
    """
    batches: list[list[int]] = []
    rest = list(range(len(samples)))
    if share_prompts:
        by_prompt: dict[tuple[int, ...], list[int]] = {}
        for i, s in enumerate(samples):
            by_prompt.setdefault(tuple(s.input_ids[: s.prompt_len]), []).append(i)
        rest = []
        for prompt, idx in by_prompt.items():
            if len(idx) < 2 or not prompt:
                rest += idx
                continue
            longest = max(len(samples[i].input_ids) for i in idx) - len(prompt)
            per = max(1, (token_budget - len(prompt)) // max(1, longest))
            parts = [idx[k : k + per] for k in range(0, len(idx), per)]
            batches += [p for p in parts if len(p) > 1]
            rest += [p[0] for p in parts if len(p) == 1]
    order = sorted(rest, key=lambda i: len(samples[i].input_ids), reverse=True)
    start = len(batches)
    for i in order:
        if len(batches) > start:
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
    off_policy: torch.Tensor  # [B] bool: expert-played rows (Sample.off_policy)
    # [1, P] the rows' one prompt when they share it (`shared_prompt`): input_ids are then the completions
    # ([B, C], right-padded), position_ids continue after P, attention_mask covers [B, P + C], K = C
    prompt_ids: torch.Tensor | None = None

    def to(self, device: torch.device | str) -> Batch:
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()}
        return Batch(**moved)


def batch_logits(model: Any, batch: Batch) -> torch.Tensor:
    """[B, K, V] float32 next-token logits of `model` at the positions that predict `batch.targets` (the forward
    the learner trains with; callers choose the autocast around it)."""
    if batch.prompt_ids is not None:
        return _shared_prompt_logits(model, batch)
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        logits_to_keep=batch.logits_to_keep,
        use_cache=False,
    )
    return out.logits[:, :-1].float()


def _shared_prompt_logits(model: Any, batch: Batch) -> torch.Tensor:
    """The forward of a `shared_prompt` batch: the prompt once (its KV kept, with the graph), repeated over the B
    rows, then the completions on top of it. The prompt's last logits predict each completion's first token;
    completion position j predicts token j + 1. In backward the B rows' gradients meet in the one prompt, which is
    what B separate rows would sum to."""
    first = model(input_ids=batch.prompt_ids, use_cache=True, logits_to_keep=1)
    cache = first.past_key_values
    b = batch.input_ids.shape[0]
    cache.batch_repeat_interleave(b)
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        past_key_values=cache,
        use_cache=True,
    )
    head = first.logits[:, -1:].expand(b, 1, -1)
    return torch.cat([head, out.logits[:, :-1]], dim=1).float()


def shared_prompt(samples: Sequence[Sample]) -> bool:
    """Whether `collate` lays these rows out with their prompt once: two or more rows, one prompt."""
    if len(samples) < 2:
        return False
    p = samples[0].prompt_len
    return 0 < p and all(s.prompt_len == p and s.input_ids[:p] == samples[0].input_ids[:p] for s in samples)


def collate_shared(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Rows that share their prompt (`shared_prompt`): the prompt once ([1, P]), the completions right-padded
    ([B, C]); targets, mask and sampling logprobs in the completion's positions. `batch_logits` then computes the
    prompt once for the B rows (the learner's side of a group's shared first page)."""
    p = samples[0].prompt_len
    c = max(len(s.input_ids) - p for s in samples)
    b = len(samples)
    ids = torch.full((b, c), pad_id, dtype=torch.long)
    attn = torch.zeros((b, p + c), dtype=torch.long)
    attn[:, :p] = 1
    mask = torch.zeros((b, c), dtype=torch.float32)
    samp = torch.full((b, c), float("nan"), dtype=torch.float32)
    for r, s in enumerate(samples):
        n = len(s.input_ids) - p
        ids[r, :n] = torch.tensor(s.input_ids[p:], dtype=torch.long)
        attn[r, p : p + n] = 1
        mask[r, :n] = torch.tensor(s.loss_mask[p:], dtype=torch.float32)
        ones = [i for i, m in enumerate(s.loss_mask[p:]) if m]
        if len(s.sampling_logprobs) == len(ones):
            samp[r, ones] = torch.tensor(s.sampling_logprobs, dtype=torch.float32)
    return Batch(
        input_ids=ids,
        attention_mask=attn,
        position_ids=torch.arange(p, p + c).expand(b, c).clone(),
        logits_to_keep=c + 1,
        targets=ids,
        mask=mask,
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        weights=torch.tensor([s.weight for s in samples], dtype=torch.float32),
        sampling_logprobs=samp,
        lags=torch.tensor([s.lag for s in samples], dtype=torch.long),
        off_policy=torch.tensor([s.off_policy for s in samples], dtype=torch.bool),
        prompt_ids=torch.tensor([samples[0].input_ids[:p]], dtype=torch.long),
    )


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
        off_policy=torch.tensor([s.off_policy for s in samples], dtype=torch.bool),
    )
