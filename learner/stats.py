"""What the learner's calls return: one `StepStats` per optimizer call (BC or RL) and a `BCSummary` per BC phase.
The driver logs their `to_json()`; tests, benches and the report read their attributes."""

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
    grad_norm: float = 0.0
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
    kl: float = 0.0  # to the reference, per trained token
    clip_frac: float = 0.0
    approx_kl: float = 0.0  # to the policy before this update
    ratio_mean: float = 1.0
    sampling_abs_diff: float = math.nan  # |learner logprob - engine logprob| per token
    sampling_kl: float = math.nan
    tis_weight_mean: float = 1.0  # importance weights on lagged tokens

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
