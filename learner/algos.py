"""Pure functions of the learner: group-relative advantages, the M-GRPO policy loss, the BC loss, token logprobs.

No state, no DeepSpeed, no Ray: every function takes tensors / lists and returns tensors / numbers, so each one is
tested on hand-computed cases (tests/learner/test_algos.py).

Conventions (B = samples in a micro-batch, T = tokens kept per sample, V = vocabulary):
- one *sample* is one Turn: its exact prompt ids followed by its exact completion ids; the loss mask is 1 only on
  tokens the model generated (Turn.loss_mask), so prompts and observations are never trained;
- `logprobs[b, t]` is log pi(token t | tokens < t) of the target token at t, already gathered (not the full V).

M-GRPO (WebAgent-R1, arXiv 2505.16421, eq. for L_M-GRPO):

    L = - 1/G sum_i 1/|y_i| sum_j 1/|y_ij| sum_t [ min(r_ijt A_i, clip(r_ijt, 1-eps, 1+eps) A_i) - beta KL_ijt ]

with i over the G trajectories of a group, j over the |y_i| actions (turns) of trajectory i, t over the |y_ij| tokens
of action j, r = pi_theta / pi_old per token and A_i the trajectory's group-relative advantage shared by all its
tokens. We average over the groups of a batch as well. The per-level averages are realised with one weight per
sample, w = 1 / (groups * trajectories in the group * actions in the trajectory), so that micro-batches can be summed
in any split (see `mgrpo_sample_weights`).

Where this differs from GRPO (DeepSeekMath): GRPO has one completion per prompt and averages over its tokens; here a
trajectory is many (prompt, completion) pairs whose prompts differ turn by turn (history compression), so a token is
first averaged within its action, then actions within the trajectory, so long actions do not outweigh short ones and
long episodes do not outweigh short ones.

Where this differs from the paper's code (WebAgent-R1/Train/verifiers, built on TRL's GRPOTrainer): that code feeds a
whole episode as one sequence and takes TRL's per-sequence token mean, i.e. the mean over *all* action tokens of the
trajectory, not the action-then-turn mean of the paper's equation; it uses one update per batch (so pi_old is the
detached current policy and the ratio is 1); its advantage is (r - mean) / (std + 1e-4) with the unbiased std.
We follow the paper's equation, keep the unbiased std (as the code does), and take eps from config. The KL term is
the k3 estimator of both (exp(ref - logp) - (ref - logp) - 1), beta from config (default 0.001 as in the code).

Off-policy expert turns (`Trajectory.source == "expert"`, e.g. an expert-played member added to a group in which every
policy episode failed): no engine sampled them, so they have no sampling logprobs and no pi_old of their own. Their
pi_old is the learner's own policy before the update (the detached logprobs of the first pass, taken before any
step), so the ratio starts at 1 as for every other row. The ratio clip is not applied to
them on either side (the term is the plain r * A: the clip keeps the policy near the distribution that sampled the
tokens, and no sampling distribution stands behind these), they get no truncated importance weight (weight 1, lag 0),
and they are left out of the engine/learner logprob mismatch statistic. Otherwise they are ordinary rows: their
group-relative advantage, their M-GRPO weight, the KL term to the reference.

Step-level credit (`rl.advantage: step`, in the spirit of GiGPO, arXiv 2505.10978): within a group, turns of different
trajectories that saw the same page form an anchor-state group; each turn's step return is its trajectory's final
outcome reward (undiscounted: gamma = 1, so every turn of a trajectory has the same return; GiGPO's discount is left
out), and the step advantage is the group-relative one within the anchor group (`step_advantages`). A turn's
advantage is then A_traj + omega * A_step, omega = `rl.step_advantage_weight`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch


@dataclass
class AdvantageStats:
    """How much learning signal a batch of groups holds."""

    groups: int = 0
    zero_variance_groups: int = 0  # groups whose scorable rewards are all equal (a group of one included)
    singleton_groups: int = 0  # groups with exactly one scorable reward
    empty_groups: int = 0  # groups with no scorable reward at all
    unscorable: int = 0  # rewards that were None (left out of baselines, given no advantage)
    # rl.advantage=step only: anchor_groups, shared_anchor_groups, step_signal_groups (see `step_advantages`)
    anchors: dict[str, int] = field(default_factory=dict)

    @property
    def signal_groups(self) -> int:
        """Groups whose scorable rewards differ: the ones that give non-zero advantages."""
        return self.groups - self.zero_variance_groups - self.empty_groups

    @property
    def zero_variance_share(self) -> float:
        return self.zero_variance_groups / self.groups if self.groups else 0.0

    def as_dict(self) -> dict[str, float]:
        flat = {k: v for k, v in asdict(self).items() if k != "anchors"}
        return {**flat, "zero_variance_share": self.zero_variance_share, **self.anchors}


def grpo_advantages(
    rewards: Sequence[float | None], group_ids: Sequence[Hashable], eps: float = 1e-6, unbiased: bool = True
) -> tuple[list[float | None], AdvantageStats]:
    """Group-relative advantages (r - mean_group) / (std_group + eps).

    rewards: [N] one outcome reward per trajectory, None = could not be scored.
    group_ids: [N] trajectories with the same id form a group (same task, same start state).
    Returns advantages [N] (None where the reward was None: such a trajectory is not trained) and stats.
    A group whose scorable rewards are all equal, or that has a single scorable reward, gives 0 to each member
    (no signal; counted). `unbiased` uses the n-1 std, as the paper's code (TRL) does.
    """
    if len(rewards) != len(group_ids):
        raise ValueError(f"rewards ({len(rewards)}) and group_ids ({len(group_ids)}) differ in length")
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    adv: list[float | None] = [None] * len(rewards)
    stats = AdvantageStats(groups=len(members))
    for idx in members.values():
        scored = [i for i in idx if rewards[i] is not None]
        stats.unscorable += len(idx) - len(scored)
        if not scored:
            stats.empty_groups += 1
            continue
        values = [float(rewards[i]) for i in scored]  # type: ignore[arg-type]
        if any(math.isnan(v) for v in values):
            raise ValueError("a reward is NaN; use None for an unscorable reward")
        stats.singleton_groups += len(values) == 1
        if len(values) == 1 or max(values) == min(values):
            stats.zero_variance_groups += 1
            for i in scored:
                adv[i] = 0.0
            continue
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1 if unbiased else len(values))
        std = math.sqrt(var)
        for i, v in zip(scored, values, strict=True):
            adv[i] = (v - mean) / (std + eps)
    return adv, stats


def step_advantages(
    rewards: Sequence[float | None],
    group_ids: Sequence[Hashable],
    state_keys: Sequence[Sequence[Hashable]],
    eps: float = 1e-6,
    unbiased: bool = True,
) -> tuple[list[list[float | None]], dict[str, int]]:
    """Step advantages over anchor states (GiGPO-style, undiscounted).

    rewards: [N] outcome reward per trajectory (None = unscorable); group_ids: [N] as in `grpo_advantages`;
    state_keys: [N][T_i] one key per turn of trajectory i, equal for turns that saw the same observation.
    Within a group, the turns with the same key form an anchor group. A turn's step return is its trajectory's
    reward (gamma = 1). Each trajectory counts once in an anchor group however often it visited that state (its
    return is the same at every visit), so the anchor group's baseline is over distinct trajectories; the step
    advantage is then `grpo_advantages` within it: (R - mean) / (std + eps), unbiased std, 0 in an anchor group of
    one trajectory or with equal returns, None for an unscorable trajectory.
    Returns [N][T_i] step advantages and counts: anchor_groups, shared_anchor_groups (>= 2 scorable trajectories),
    step_signal_groups (returns that differ).
    """
    if not len(rewards) == len(group_ids) == len(state_keys):
        raise ValueError(
            f"rewards ({len(rewards)}), group_ids ({len(group_ids)}) and state_keys ({len(state_keys)}) "
            "differ in length"
        )
    anchor_of: dict[tuple[Hashable, Hashable], int] = {}
    pair_of: dict[
        tuple[int, int], int
    ] = {}  # (anchor, trajectory) -> its entry, one per trajectory and state
    for i, keys in enumerate(state_keys):
        for key in keys:
            a = anchor_of.setdefault((group_ids[i], key), len(anchor_of))
            pair_of.setdefault((a, i), len(pair_of))
    pairs = list(pair_of)
    adv, st = grpo_advantages([rewards[i] for _, i in pairs], [a for a, _ in pairs], eps, unbiased)
    out = [
        [adv[pair_of[(anchor_of[(group_ids[i], key)], i)]] for key in keys]
        for i, keys in enumerate(state_keys)
    ]
    counts = {
        "anchor_groups": st.groups,
        "shared_anchor_groups": st.groups - st.singleton_groups - st.empty_groups,
        "step_signal_groups": st.signal_groups,
    }
    return out, counts


def mgrpo_sample_weights(
    group_of_sample: Sequence[Hashable], traj_of_sample: Sequence[Hashable]
) -> list[float]:
    """Per-sample weights that turn a weighted sum of per-action mean losses into the M-GRPO average.

    group_of_sample, traj_of_sample: [S] the group and the trajectory each sample (turn) belongs to.
    Returns [S]: 1 / (groups * trajectories of its group * turns of its trajectory). The weights sum to 1.
    """
    turns: dict[Hashable, int] = {}
    trajs: dict[Hashable, set[Hashable]] = {}
    for g, t in zip(group_of_sample, traj_of_sample, strict=True):
        turns[t] = turns.get(t, 0) + 1
        trajs.setdefault(g, set()).add(t)
    n_groups = len(trajs)
    return [
        1.0 / (n_groups * len(trajs[g]) * turns[t])
        for g, t in zip(group_of_sample, traj_of_sample, strict=True)
    ]


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log softmax(logits)[target] per position, computed in float32.

    logits: [B, T, V] scores at positions that predict `targets`; targets: [B, T] token ids. Returns [B, T].
    """
    logits = logits.float()
    picked = torch.gather(logits, -1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Full-vocabulary entropy of softmax(logits) per position, in float32 (nats).

    logits: [B, T, V] (already divided by the sampling temperature). Returns [B, T]. Row by row, so that the
    temporaries are [T, V] and not a second and third copy of the whole [B, T, V].
    """
    rows = []
    for row in logits:
        logp = torch.log_softmax(row.float(), dim=-1)  # [T, V]
        rows.append(-(logp.exp() * logp).sum(-1))
    return torch.stack(rows) if rows else logits.new_zeros(logits.shape[:-1], dtype=torch.float32)


def _masked_row_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """[B, T] -> [B]: mean of x over the masked tokens of each row (0 for a row without tokens)."""
    return (x * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || ref): exp(ref - logp) - (ref - logp) - 1 (>= 0). Shapes [B, T] -> [B, T]."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1.0


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
    *,
    sample_weights: torch.Tensor | None = None,
    ref_logprobs: torch.Tensor | None = None,
    kl_beta: float = 0.0,
    is_weights: torch.Tensor | None = None,
    off_policy: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """The M-GRPO loss of one micro-batch (each row = one action).

    logprobs: [B, T] current policy (carries the gradient); old_logprobs: [B, T] the policy that made the batch
    (no gradient); advantages: [B] each row's advantage (the trajectory's, or with step credit the turn's);
    mask: [B, T] 1 on action tokens; sample_weights: [B] from `mgrpo_sample_weights` (default 1/B: a plain mean
    over actions); ref_logprobs: [B, T] frozen reference policy, needed when kl_beta > 0; is_weights: [B, T]
    truncated importance weights of turns sampled with older weights (`tis_weights`), applied to the policy term
    only; off_policy: [B] bool, rows no engine sampled (expert turns): no ratio clip and no importance weight for
    them (see the module docstring).
    Returns (loss, stats). Summing the losses of micro-batches that share one set of weights gives the batch loss.
    stats are token sums so that callers can add them over micro-batches: tokens, clipped (tokens where the clipped
    term was the active one; never an off-policy row's), approx_kl_sum (k3 of pi_old vs pi_theta), ref_kl_sum,
    ratio_sum.
    """
    mask = mask.to(logprobs.dtype)
    adv = advantages.to(logprobs.dtype).unsqueeze(-1)  # [B, 1]
    if sample_weights is None:
        sample_weights = torch.full(
            (logprobs.shape[0],), 1.0 / max(1, logprobs.shape[0]), device=logprobs.device
        )
    weights = sample_weights.to(logprobs.dtype)
    on_policy = torch.ones_like(mask, dtype=torch.bool)  # [B, T]: rows the clip and the weights apply to
    if off_policy is not None:
        on_policy = ~off_policy.to(torch.bool).unsqueeze(-1).expand_as(on_policy)
    ratio = torch.exp(logprobs - old_logprobs.detach())
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    per_token = -torch.where(on_policy, torch.minimum(unclipped, clipped), unclipped)
    if is_weights is not None:
        w = torch.where(on_policy, is_weights.detach().to(per_token.dtype), torch.ones_like(per_token))
        per_token = per_token * w
    ref_kl = torch.zeros_like(per_token)
    if kl_beta > 0.0:
        if ref_logprobs is None:
            raise ValueError("kl_beta > 0 needs ref_logprobs")
        ref_kl = kl_k3(logprobs, ref_logprobs.detach())
        per_token = per_token + kl_beta * ref_kl
    loss = (_masked_row_mean(per_token, mask) * weights).sum()
    with torch.no_grad():
        was_clipped = (clipped < unclipped) & (mask > 0) & on_policy  # the min picked the clipped term
        stats = {
            "tokens": float(mask.sum()),
            "clipped": float(was_clipped.sum()),
            "approx_kl_sum": float((kl_k3(logprobs, old_logprobs) * mask).sum()),
            "ref_kl_sum": float((ref_kl * mask).sum()),
            "ratio_sum": float((ratio * mask).sum()),
        }
    return loss, stats


def tis_weights(
    learner_logprobs: torch.Tensor, sampling_logprobs: torch.Tensor, lags: torch.Tensor, cap: float
) -> torch.Tensor:
    """[B, T] truncated importance weights min(pi_learner / pi_sampler, cap) for rows sampled with older weights
    (lag > 0), as in the asynchronous RL frameworks; exactly 1 on rows without lag and where the sampler's
    logprob is unknown (NaN). learner_logprobs: the policy before this update (detached)."""
    w = torch.exp(learner_logprobs.detach().float() - sampling_logprobs.float()).clamp(max=cap)
    w = torch.where(torch.isnan(sampling_logprobs), torch.ones_like(w), w)
    return torch.where((lags > 0).unsqueeze(-1), w, torch.ones_like(w))


def sft_loss(logprobs: torch.Tensor, mask: torch.Tensor, num_tokens: float | None = None) -> torch.Tensor:
    """Behaviour-cloning loss: token-level NLL on action tokens only.

    logprobs: [B, T]; mask: [B, T] 1 on action tokens. The sum is divided by `num_tokens` (the action tokens of the
    whole batch, so micro-batches add up to the batch mean) or, when None, by this micro-batch's own count.
    """
    mask = mask.to(logprobs.dtype)
    denom = float(num_tokens) if num_tokens is not None else float(mask.sum().clamp(min=1.0))
    return -(logprobs * mask).sum() / max(denom, 1.0)
