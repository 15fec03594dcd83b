"""Paired comparison of two evaluations of the same held-out episodes (before / after a training phase).

Every evaluation of a run plays the same task sample (`evaluate.stratified_sample` with the run's seed), so episode
(task_id, sample_idx) of one evaluation and of the next form a pair. Comparing pairs instead of two independent
success rates removes the between-task variance: a 10-point gain on 100 tasks is invisible to two overlapping
Wilson intervals, yet clear when 12 tasks flip 0 -> 1 and 2 flip 1 -> 0.

    before, after, unmatched = align(load_jsonl("eval_after_bc.jsonl"), load_jsonl("eval_after_rl.jsonl"))
    diff = paired_difference(before, after)   # diff.difference, diff.ci95, diff.mcnemar_p, diff.gained, ...

Two statistics, both over the pairs scored in both evaluations:
- the 95% paired bootstrap (percentile) interval of the difference in success, resampling pairs, seeded;
- the exact McNemar test: under "no change" each discordant pair is a gain or a loss with probability 1/2, so the
  two-sided p-value is a binomial tail on the discordant pairs, computed exactly with integers.
With few discordant pairs the percentile interval is anti-conservative (4 gains, 0 losses in 10 pairs: the interval
excludes 0, p = 0.125); the exact test is the one to trust there.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np

from common.records import Trajectory

METHOD = "paired bootstrap 95% percentile interval (pairs resampled); exact McNemar test (two-sided binomial)"


@dataclass
class PairedDiff:
    """Two evaluations of the same episodes compared pair by pair; the rates and statistics are None without
    pairs."""

    n: int  # pairs scored in both evaluations
    left_out: int  # pairs left out because either side is unscorable (None)
    success_before: float | None
    success_after: float | None
    difference: float | None  # success_after - success_before
    ci95: list[float] | None  # [low, high] paired bootstrap interval of the difference
    mcnemar_p: float | None  # exact two-sided McNemar p-value (1.0 without discordant pairs)
    gained: int  # pairs that went 0 -> 1
    lost: int  # pairs that went 1 -> 0
    method: str = METHOD
    unmatched: int = 0  # episodes in only one of the two evaluations (set by callers that align trajectories)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def mcnemar_exact(gained: int, lost: int) -> float:
    """Exact two-sided McNemar p-value: 2 * P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1."""
    if gained < 0 or lost < 0:
        raise ValueError(f"McNemar needs counts >= 0, got gained={gained}, lost={lost}")
    m = gained + lost
    if m == 0:
        return 1.0
    tail = sum(math.comb(m, k) for k in range(min(gained, lost) + 1))
    # integers throughout, one division at the end: exact up to the final rounding, for any m
    return min(1.0, 2 * tail / 2**m)


def bootstrap_ci(diffs: list[int], *, seed: int = 0, resamples: int = 10000) -> list[float]:
    """95% percentile interval of the mean of per-pair differences (each -1, 0 or +1), pairs resampled with
    replacement. A resample of n pairs is fully described by how many of each kind it drew, so each resample is
    one multinomial draw of those three counts: exact, and fast for any n."""
    n = len(diffs)
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one pair")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    up, down = diffs.count(1), diffs.count(-1)
    probs = [up / n, down / n, (n - up - down) / n]
    counts = np.random.default_rng(seed).multinomial(n, probs, size=resamples)  # [resamples, 3]
    means = (counts[:, 0] - counts[:, 1]) / n  # [resamples]
    low, high = np.quantile(means, [0.025, 0.975])
    return [float(low), float(high)]


def paired_difference(
    before: list[float | None], after: list[float | None], *, seed: int = 0, resamples: int = 10000
) -> PairedDiff:
    """Compare two evaluations whose element i is the same episode; rewards are 0, 1 or None (unscorable: the
    pair is left out and counted)."""
    if len(before) != len(after):
        raise ValueError(f"paired lists differ in length: {len(before)} before, {len(after)} after")
    pairs = []
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        for side, v in (("before", a), ("after", b)):
            if v is not None and v not in (0, 1):
                raise ValueError(f"pair {i}: {side} reward {v!r} is not 0, 1 or None (McNemar needs binary)")
        if a is not None and b is not None:
            pairs.append((int(a), int(b)))
    left_out = len(before) - len(pairs)
    gained = sum(1 for a, b in pairs if (a, b) == (0, 1))
    lost = sum(1 for a, b in pairs if (a, b) == (1, 0))
    n = len(pairs)
    if n == 0:
        return PairedDiff(0, left_out, None, None, None, None, None, 0, 0)
    s_before = sum(a for a, _ in pairs) / n
    s_after = sum(b for _, b in pairs) / n
    return PairedDiff(
        n=n,
        left_out=left_out,
        success_before=s_before,
        success_after=s_after,
        difference=(gained - lost) / n,
        ci95=bootstrap_ci([b - a for a, b in pairs], seed=seed, resamples=resamples),
        mcnemar_p=mcnemar_exact(gained, lost),
        gained=gained,
        lost=lost,
    )


class Aligned(NamedTuple):
    """Rewards of the episodes found in both evaluations, in the first one's order, and what had no partner."""

    before: list[float | None]
    after: list[float | None]
    unmatched: int  # episodes of either list whose (task_id, sample_idx) the other list lacks


def _by_key(trajs: list[Trajectory], which: str) -> dict[tuple[Any, int], Trajectory]:
    out: dict[tuple[Any, int], Trajectory] = {}
    for t in trajs:
        key = (t.task_id, t.sample_idx)
        if key in out:
            raise ValueError(f"{which}: episode {t.id} appears twice; pairs need one episode per key")
        out[key] = t
    return out


def _reward(t: Trajectory) -> float | None:
    # an infrastructure failure was never judged on the agent's merit: unscorable, as in `summarize`
    return None if t.failure else t.reward


def align(before: list[Trajectory], after: list[Trajectory]) -> Aligned:
    """Match two evaluations' trajectories by (task_id, sample_idx)."""
    a, b = _by_key(before, "before"), _by_key(after, "after")
    common = [k for k in a if k in b]
    return Aligned(
        before=[_reward(a[k]) for k in common],
        after=[_reward(b[k]) for k in common],
        unmatched=len(a) + len(b) - 2 * len(common),
    )
