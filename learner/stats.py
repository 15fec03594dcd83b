"""What the learner's calls return: one `StepStats` per optimizer call (BC or RL) and a `BCSummary` per BC phase.
The driver logs their `to_json()`; tests, benches and the report read their attributes. A value that was not
measured in a step is None and left out of `to_json()`, never logged as a number that is constant by construction
(e.g. the clip share of a single update, whose ratio is 1 by definition)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass
class StepStats:
    """One learner step of behaviour cloning or M-GRPO."""

    kind: Literal["bc", "rl"]
    iteration: int = 0  # the learner's step count after this step
    samples: int = 0  # turns in the batch
    loss: float = math.nan
    grad_norm: float = 0.0  # pre-clip gradient norm of the (last) optimizer step
    trained_tokens: int = 0  # tokens the loss covers (action tokens)
    micro_batches: int = 0
    seconds: float = 0.0
    tokens: int = 0  # every token the forward passes covered
    tokens_per_s: float = 0.0
    lr: float = 0.0
    skipped: bool = False  # no optimizer step was taken
    dropped: dict[str, int] = field(default_factory=dict)  # turns left out of the batch: reason -> count
    epoch: int | None = None  # BC: the pass over the demonstrations
    # RL only
    no_signal: bool = False  # every advantage was zero: no step
    advantages: dict[str, float] = field(default_factory=dict)  # learner.algos.AdvantageStats.as_dict()
    lag_max: int = 0  # policy versions between a turn's sampling and this update (overlap)
    lagged_samples: int = 0
    expert_rows: int = 0  # off-policy (expert-played) turns trained: no clip, no importance weight
    # How far the call moved the policy. U = rl.updates_per_batch; pi_old = the policy before the call. KLs are the
    # k3 estimator exp(new - old) - (new - old) - 1 on the batch's action tokens (sampled from pi_old, up to the
    # engine/learner mismatch), per trained token: an estimate of KL(pi_old || pi_new), not the exact one.
    approx_kl: float | None = None  # KL(pi_old || pi after the last step)
    approx_kl_steps: list[float] | None = None  # [U] KL(pi_old || pi after optimizer step k)
    # share of the micro-batches the last step's KL and entropy were measured on (rl.kl_probe_share)
    kl_probe_share: float | None = None
    grad_norms: list[float] | None = None  # [U] pre-clip gradient norm of each optimizer step
    # mean full-vocabulary entropy (nats) per action token of pi_old, at the sampling T
    entropy: float | None = None
    entropy_steps: list[float] | None = None  # [U + 1] the same of pi_old, then after each step
    # U >= 2: mean over passes 2..U of the share of tokens the clip was active on
    clip_frac: float | None = None
    clip_frac_steps: list[float] | None = None  # [U - 1] that share in pass k = 2..U
    ratio_mean: float | None = None  # U >= 2: mean pi / pi_old per token over passes 2..U
    ratio_steps: list[float] | None = None  # [U - 1] that mean in pass k = 2..U
    # kl_beta > 0: k3 KL of pi_old to the reference per trained token (the loss's term)
    kl: float | None = None
    sampling_abs_diff: float | None = None  # |learner logprob - engine logprob| per sampled token (pi_old)
    sampling_kl: float | None = None  # k3 of the same
    tis_weight_mean: float | None = None  # importance weights on lagged tokens (only when some lag)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class BCSummary:
    """A behaviour-cloning phase: its steps, their totals and the held-out checks before and after each epoch."""

    steps: int = 0  # optimizer steps taken
    turns: int = 0  # demonstration turns trained on
    dropped: dict[str, int] = field(default_factory=dict)  # turns left out: reason -> count
    loss_first: float = math.nan
    loss_last: float = math.nan
    tokens: int = 0
    trained_tokens: int = 0
    seconds: float = 0.0
    tokens_per_s: float = 0.0
    iteration: int = 0
    held_out: list[dict[str, float]] = field(default_factory=list)  # epoch, nll, token_accuracy, turn_exact
    history: list[StepStats] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
