"""Run metrics: exported through `ray.util.metrics` (Ray's Prometheus endpoint and dashboard), one typed entry per
record, and summarised per batch of groups (`RolloutSummary`) for the JSONL log and the report. Names match deploy/grafana/webagent_dashboard.json (Ray adds the `ray_` prefix).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter as _Count
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from common.records import Trajectory, TrajectoryGroup

_LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30]
_TURN_BUCKETS = [1, 2, 3, 5, 8, 12, 16, 24, 32]


class RayMetrics:
    """Thin holder of the Ray metric objects; a no-op when Ray is not initialised (tests, local tools)."""

    def __init__(self, enabled: bool = True):
        self.enabled = False
        if not enabled:
            return
        try:
            import ray
            from ray.util import metrics as m
        except ImportError:
            return
        if not ray.is_initialized():
            return
        self.enabled = True
        self.episodes = m.Counter(
            "webagent_episodes_total", "finished episodes", tag_keys=("site", "outcome")
        )
        self.success = m.Gauge(
            "webagent_success_rate", "success rate of the last phase", tag_keys=("site", "phase")
        )
        self.reward_mean = m.Gauge(
            "webagent_reward_mean", "mean reward of the last batch", tag_keys=("phase",)
        )
        self.group_std = m.Gauge("webagent_group_reward_std", "mean per-group reward std of the last batch")
        self.zero_var = m.Gauge(
            "webagent_zero_variance_group_share", "share of groups with all-equal rewards"
        )
        self.turns = m.Histogram("webagent_turns_per_episode", "turns per episode", boundaries=_TURN_BUCKETS)
        self.parse_fail = m.Counter(
            "webagent_action_parse_failures_total", "completions with no valid action"
        )
        self.step_latency = m.Histogram(
            "webagent_step_latency_seconds", "browser step seconds", boundaries=_LATENCY_BUCKETS
        )
        self.gen_tps = m.Gauge("webagent_generate_tokens_per_second", "generated tokens/s in the last batch")
        self.learn_tps = m.Gauge("webagent_learner_tokens_per_second", "learner tokens/s in the last update")
        self.push_s = m.Gauge(
            "webagent_weight_push_seconds", "seconds of the last weight push", tag_keys=("method",)
        )
        self.infra = m.Counter("webagent_infra_failures_total", "infrastructure failures", tag_keys=("kind",))
        self.groups = m.Counter(
            "webagent_rl_groups_total",
            "RL groups drawn, by what became of them (kept for the update, dropped: all-equal rewards or failed)",
            tag_keys=("fate",),
        )
        self.expert_members = m.Counter(
            "webagent_rl_expert_members_total",
            "expert members played into all-failed groups",
            tag_keys=("outcome",),
        )
        self.iteration = m.Gauge("webagent_iteration", "current RL iteration")
        self.stalled = m.Gauge(
            "webagent_rl_stalled_tries", "tries in a row of an RL iteration in which every group failed"
        )

    def record_group(self, group: TrajectoryGroup) -> None:
        if not self.enabled:
            return
        for t in group.trajectories:
            site = t.sites[0] if t.sites else "unknown"
            outcome = (
                "infra_error"
                if t.failure
                else "unscorable"
                if t.reward is None
                else "success"
                if t.reward >= 1
                else "fail"
            )
            self.episodes.inc(1, tags={"site": site, "outcome": outcome})
            if t.failure:
                self.infra.inc(1, tags={"kind": "episode"})
            self.turns.observe(len(t.turns))
            for turn in t.turns:
                if turn.action is None:
                    self.parse_fail.inc(1)
                if "step" in turn.timings:
                    self.step_latency.observe(turn.timings["step"])

    def record_eval(self, summary: RolloutSummary, label: str) -> None:
        """An evaluation's success per site."""
        if self.enabled:
            for site, rate in summary.success_by_site.items():
                self.success.set(rate, tags={"site": site, "phase": label})

    def record_rollouts(self, summary: RolloutSummary) -> None:
        """An RL iteration's batch: reward, reward spread, share of groups without signal, generation speed."""
        if self.enabled:
            self.reward_mean.set(summary.success or 0.0, tags={"phase": "rl"})
            self.group_std.set(summary.group_reward_std or 0.0)
            self.zero_var.set(summary.zero_variance_group_share or 0.0)
            self.gen_tps.set(summary.generate_tokens_per_s or 0.0)

    def record_sampling(self, sampling: dict[str, Any]) -> None:
        """An RL iteration's draws (learner.collect.Draws.to_json): groups kept / dropped, expert members."""
        if not self.enabled:
            return
        solved = sampling["expert_solved"]
        counts = [
            (self.groups, sampling["kept"], {"fate": "kept"}),
            (self.groups, sampling["dropped"], {"fate": "dropped"}),
            (self.expert_members, solved, {"outcome": "success"}),
            (self.expert_members, sampling["expert_members"] - solved, {"outcome": "fail"}),
        ]
        for counter, n, tags in counts:
            if n > 0:  # Ray's counters refuse an increment of 0
                counter.inc(n, tags=tags)

    def record_update(self, tokens_per_s: float) -> None:
        if self.enabled:
            self.learn_tps.set(tokens_per_s or 0.0)

    def record_push(self, seconds: float, method: str) -> None:
        if self.enabled:
            self.push_s.set(seconds, tags={"method": method})

    def record_progress(self, iteration: int, stalled: int) -> None:
        """The RL iteration under way and how many tries of it in a row found every group failed."""
        if self.enabled:
            self.iteration.set(iteration)
            self.stalled.set(stalled)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of k successes in n trials (sound at 0/n and n/n, unlike the normal one)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class RolloutSummary:
    """What a batch of groups did (an evaluation or an RL iteration's rollouts): the log's `rollout` record and the
    evaluation entries of the log, the progress file and the report."""

    episodes: int = 0
    success: float | None = None  # mean reward of the scored episodes
    success_ci95: list[float] | None = None  # its 95% Wilson interval
    success_by_template: dict[str, dict[str, float]] = field(default_factory=dict)  # -> success, episodes
    success_by_site: dict[str, float] = field(default_factory=dict)
    prompt_tokens_mean: float | None = None
    prompt_tokens_max: int | None = None
    completion_tokens_mean: float | None = None
    unscorable: int = 0
    infra_failures: int = 0
    group_reward_std: float | None = None  # mean over groups of the reward's std
    zero_variance_group_share: float | None = None  # groups whose rewards are all equal (no RL signal)
    turns_per_episode: float | None = None
    parse_failures: int = 0
    termination: dict[str, int] = field(default_factory=dict)
    step_latency_median_s: float | None = None
    generated_tokens: int = 0
    seconds: float | None = None
    generate_tokens_per_s: float | None = None
    # mean seconds per episode in each stage (the turns' stages summed over the episode): where the time goes
    episode_seconds: dict[str, float] = field(default_factory=dict)
    curriculum: dict[str, Any] | None = None  # RL: the task sampler's template weights after this batch

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RolloutSummary:
        """From a log or progress entry; keys that are not fields (the entry's phase, label, time) are left out."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def summarize(groups: list[TrajectoryGroup], seconds: float | None = None) -> RolloutSummary:
    """Success overall, per template and per site, reward spread, turns, parse failures, step latency, generated
    tokens/s."""
    trajs = [t for g in groups for t in g.trajectories]
    scored = [t for t in trajs if t.reward is not None and not t.failure]
    per_site: dict[str, list[float]] = {}
    for t in scored:
        per_site.setdefault(t.sites[0] if t.sites else "unknown", []).append(t.reward)
    stds, zero = [], 0
    for g in groups:
        rs = [t.reward for t in g.trajectories if t.reward is not None]
        if len(rs) >= 1:
            stds.append(statistics.pstdev(rs))
            zero += int(len(set(rs)) <= 1)
    turns = [t for tr in trajs for t in tr.turns]
    steps = [t.timings["step"] for t in turns if "step" in t.timings]
    gen_tokens = sum(len(t.completion_ids) for t in turns)
    wins = sum(t.reward for t in scored)
    per_template: dict[str, list[float]] = {}
    for t in scored:
        per_template.setdefault(str(t.meta.get("template", "?")), []).append(t.reward)
    prompt_lens = [len(t.prompt_ids) for t in turns]
    return RolloutSummary(
        episodes=len(trajs),
        success=(wins / len(scored)) if scored else None,
        success_ci95=list(wilson(int(wins), len(scored))) if scored else None,
        success_by_template={
            k: {"success": sum(v) / len(v), "episodes": len(v)} for k, v in sorted(per_template.items())
        },
        prompt_tokens_mean=statistics.fmean(prompt_lens) if prompt_lens else None,
        prompt_tokens_max=max(prompt_lens) if prompt_lens else None,
        completion_tokens_mean=(gen_tokens / len(turns)) if turns else None,
        success_by_site={s: sum(v) / len(v) for s, v in sorted(per_site.items())},
        unscorable=sum(1 for t in trajs if t.reward is None and not t.failure),
        infra_failures=sum(1 for t in trajs if t.failure),
        group_reward_std=statistics.fmean(stds) if stds else None,
        zero_variance_group_share=zero / len(groups) if groups else None,
        turns_per_episode=statistics.fmean(len(t.turns) for t in trajs) if trajs else None,
        parse_failures=sum(1 for t in turns if t.action is None),
        termination=dict(_Count(t.termination for t in trajs)),
        step_latency_median_s=statistics.median(steps) if steps else None,
        generated_tokens=gen_tokens,
        seconds=seconds or None,
        generate_tokens_per_s=gen_tokens / seconds if seconds else None,
        episode_seconds=_stage_seconds(trajs),
    )


_STAGES = ("reset", "prompt", "generate", "step", "final_state", "score")


def _stage_seconds(trajs: list[Trajectory]) -> dict[str, float]:
    """Mean seconds per episode of each stage that was timed: reset, final state and score once per episode,
    prompt building, generation and the browser step summed over its turns. Episodes that failed are left out."""
    out = {}
    for stage in _STAGES:
        per_episode = [s for t in trajs if not t.failure and (s := _seconds_in(t, stage)) is not None]
        if per_episode:
            out[stage] = round(statistics.fmean(per_episode), 4)
    return out


def _seconds_in(t: Trajectory, stage: str) -> float | None:
    """The episode's own time for `stage`, else the sum over its turns; None where it was never timed."""
    if stage in t.timings:
        return t.timings[stage]
    timed = [u.timings[stage] for u in t.turns if stage in u.timings]
    return sum(timed) if timed else None
