"""Rollouts that overlap the learner update (`scheduling.overlap_with_learner`) and the RL phase's time budget
(`rl.time_budget_min`), driven by the real RL loop of `learner.rl_phase.RLPhase` with small local parts: a rollout
worker whose episodes take time and stamp each turn with the engine's current weight version, and a learner that
turns groups into rows with the real `rl_samples` (lags included) and bumps the version on each push. No Ray, no
model: the loop's bookkeeping is what is tested. The budget tests give the phase a clock that only the learner's
update advances (10 s a step), so they read no real time.
"""

from __future__ import annotations

import asyncio
import json

import pytest
import torch

from common.config import load_config
from common.records import Observation, Trajectory, TrajectoryGroup, Turn
from common.tasks import Task
from learner.algos import policy_loss, tis_weights
from learner.engine_sync import EngineSync
from learner.learner_handle import LearnerHandle
from learner.report import read_log, write_report
from learner.rl_phase import RLClock, RLPhase
from learner.run_log import RunLog
from learner.run_parts import RunParts
from learner.samples import rl_samples
from learner.stats import StepStats
from learner.weight_sync import PushStats
from rollout_workers.metrics import RayMetrics
from rollout_workers.router import EngineRouter


class Engine:
    version = 0


class Worker:
    """Each turn of an episode is written by the engine version current at that moment."""

    def __init__(self, engine: Engine):
        self.engine, self.made = engine, []

    def parallel_groups(self, group_size):
        return 1  # one group at a time, as a pool of group_size browsers runs them

    async def run_group(self, task, group_size, *, iteration=0, **_):
        trajs = []
        for k in range(group_size):
            turns = []
            for i in range(3):
                await asyncio.sleep(0.01)
                turns.append(
                    Turn(
                        index=i,
                        observation=Observation(text="p"),
                        prompt_ids=[1, 2, 3],
                        completion_ids=[4, 5],
                        logprobs=[-0.5, -0.5],
                        weight_version=self.engine.version,
                    )
                )
            trajs.append(Trajectory(task_id=task.task_id, sample_idx=k, turns=turns, reward=float(k % 2)))
        group = TrajectoryGroup(task_id=task.task_id, trajectories=trajs, iteration=iteration)
        self.made.append(group)
        return group


class Learner:
    """The LearnerActor's methods the RL phase calls, as a plain local object (what LearnerHandle wraps)."""

    def __init__(self, engine: Engine, saved: dict | None = None):
        self.engine, self.version, self.trained, self.lags = engine, 0, [], []
        self.saved, self.checkpoints = saved or {}, []  # driver state to resume with; save_checkpoint calls
        self.clock_s = 0.0  # the budget tests' clock: each update takes 10 s of it

    async def begin_rl(self, reference=None):
        return {"reference": "current weights"}

    async def driver_state(self):
        return self.saved

    async def save_checkpoint(self, **kw):
        self.checkpoints.append(kw)
        return "ckpt"

    async def rl_step(self, groups):
        samples, _, _ = rl_samples(groups, 4096, 1e-6, keep_zero_advantage=True, learner_version=self.version)
        self.lags += [s.lag for s in samples]
        self.trained += [id(t) for g in groups for tr in g.trajectories for t in tr.turns]
        await asyncio.sleep(0.05)  # the update: overlapped rollouts advance meanwhile
        self.clock_s += 10.0
        return StepStats("rl", tokens_per_s=1.0)

    async def push_weights(self, engines, method=None, version=None):
        self.version += 1
        self.engine.version = self.version
        return PushStats("file", 0.0, 0, self.version, 1, 0.0, (0.0,))


class Stack:
    def __init__(self, worker):
        self.worker, self.engines = worker, [worker.engine]
        self.router = EngineRouter(self.engines)
        self.train = [
            Task(
                task_id=i,
                intent_template_id=i % 3,
                sites=["shopping"],
                start_url="http://h/",
                intent="t",
                eval={"eval_types": ["string_match"], "reference_answers": {"exact_match": "x"}},
            )
            for i in range(6)
        ]

    def tasks(self, split):
        return self.train


def _run(
    tmp_path,
    overlap: bool,
    *,
    iterations: int = 4,
    budget_min: float | None = None,
    start: int = 0,
    saved: dict | None = None,
):
    """The RL phase over 6 tasks, 2 groups of 2 an iteration; with `budget_min`, on the learner's clock. Returns
    the stack, the learner and the number of iterations the phase says it did."""
    cfg = load_config(
        None,
        [
            f"logging.output_dir={tmp_path}",
            f"scheduling.overlap_with_learner={str(overlap).lower()}",
            f"rl.iterations={iterations}",
            "rl.tasks_per_iteration=2",
            "rl.group_size=2",
            "rl.expert_solvable=false",
        ]
        + ([f"rl.time_budget_min={budget_min}"] if budget_min is not None else []),
    )
    engine = Engine()
    stack, learner = Stack(Worker(engine)), Learner(engine, saved)
    handle, metrics, log = (
        LearnerHandle(learner, cfg.learner),
        RayMetrics(enabled=False),
        RunLog(tmp_path, cfg),
    )
    sync = EngineSync(stack.router, handle, cfg.learner.weight_sync, metrics, log)
    phase = RLPhase(RunParts(cfg, tmp_path, stack, handle, metrics, log, sync), None)
    if budget_min is not None:
        phase.clock.now = lambda: learner.clock_s
    done = asyncio.run(phase.run(start=start))
    return stack, learner, done


@pytest.mark.parametrize("overlap", [False, True])
def test_every_turn_is_trained_once_and_the_lag_stays_within_one_version(tmp_path, overlap):
    stack, learner, done = _run(tmp_path, overlap)
    assert done == 4
    made = [id(t) for g in stack.worker.made for tr in g.trajectories for t in tr.turns]
    # 4 iterations x 2 tasks: nothing sampled beyond the last iteration
    assert len(stack.worker.made) == 8
    # none trained twice, none lost
    assert sorted(learner.trained) == sorted(made) and len(set(made)) == len(made)
    assert max(learner.lags) <= 1
    if overlap:  # the next groups ran during the update, so some of their turns predate the push
        assert 0 < sum(learner.lags) < len(learner.lags)
    else:
        assert set(learner.lags) == {0}


def test_importance_weights_are_one_without_lag_and_truncated_with_it():
    learner = torch.tensor([[-0.1, -2.0, -0.3]])
    sampler = torch.tensor([[-0.1, -0.5, float("nan")]])
    assert torch.equal(tis_weights(learner, sampler, torch.tensor([0]), 2.0), torch.ones(1, 3))
    w = tis_weights(learner, sampler, torch.tensor([1]), 2.0)
    assert w[0, 0] == 1.0 and w[0, 1] == pytest.approx(torch.exp(torch.tensor(-1.5)).item())
    assert w[0, 2] == 1.0  # the sampler's logprob is unknown: no correction
    assert tis_weights(torch.tensor([[0.0]]), torch.tensor([[-3.0]]), torch.tensor([1]), 2.0).item() == 2.0
    lp = torch.tensor([[-0.2, -1.0, -0.4]], requires_grad=True)
    args = (lp, lp.detach(), torch.tensor([1.0]), torch.ones(1, 3), 0.2)
    plain, _ = policy_loss(*args)
    ones, _ = policy_loss(*args, is_weights=torch.ones(1, 3))
    assert torch.equal(plain, ones)
    half, _ = policy_loss(*args, is_weights=torch.full((1, 3), 0.5))
    assert half.item() == pytest.approx(plain.item() / 2)


def test_the_clock_fits_the_next_iteration_as_long_as_the_longest_so_far():
    assert RLClock(None, used_s=1e9, longest_s=1e9).fits()  # no budget: rl.iterations alone
    clock = RLClock(30.0)
    assert clock.fits()  # nothing timed yet: the first iteration starts
    clock.add(10.0, iteration=True)
    clock.add(5.0, iteration=False)  # a stall's back-off counts as time used, not as an iteration's length
    assert (clock.used_s, clock.longest_s) == (15.0, 10.0)
    assert clock.fits() and not clock.fits(ahead=2)  # 15 + 10 <= 30 < 15 + 20
    assert not clock.fits(current_s=16.0)  # the iteration in flight already runs longer than the longest
    again = RLClock(30.0)
    again.restore(clock.state())
    assert again.state() == clock.state()


@pytest.mark.parametrize("overlap", [False, True])
def test_the_phase_stops_at_the_last_iteration_that_fits_its_budget(tmp_path, overlap, capsys):
    # 10 s an iteration against 30 s: 0 + 10, 10 + 10 and 20 + 10 fit; 30 + 10 does not
    stack, learner, done = _run(tmp_path, overlap, iterations=10, budget_min=0.5)
    # the console's line of the record: iterations done of the cap, minutes used of the budget
    line = next(x for x in capsys.readouterr().out.splitlines() if '"rl_budget"' in x)
    assert '"iterations": 3, "of": 10, "budget_min": 0.5, "used_min": 0.5' in line
    assert done == 3
    # with overlap too, no group is drawn for an iteration that does not run: every group drawn is trained once
    made = [id(t) for g in stack.worker.made for tr in g.trajectories for t in tr.turns]
    assert len(stack.worker.made) == 6 and sorted(learner.trained) == sorted(made)
    final = learner.checkpoints[-1]
    assert final["tag"] == "rl" and final["iteration"] == 3
    assert final["extra"]["rl_clock"] == {"used_s": 30.0, "longest_s": 10.0}
    history = read_log(tmp_path / "log.jsonl")
    assert [h["iteration"] for h in history if h.get("phase") == "rl"] == [0, 1, 2]
    stop = [h for h in history if h.get("phase") == "rl_budget"]
    assert stop == [
        {
            **stop[0],
            "iterations": 3,
            "of": 10,
            "budget_min": 0.5,
            "used_min": 0.5,
            "longest_min": pytest.approx(0.17),
        }
    ]
    report = write_report(tmp_path, history, {}).read_text()
    assert "RL stopped after 3 of 10 iterations: 0.5 of the 0.5 minutes" in report


def test_a_resumed_phase_counts_the_minutes_saved_with_its_checkpoint(tmp_path):
    # killed after iteration 1 with 20 s used: iteration 2 still fits 30 s, iteration 3 does not
    saved = {"rl_clock": {"used_s": 20.0, "longest_s": 10.0}}
    stack, learner, done = _run(tmp_path, False, iterations=10, budget_min=0.5, start=2, saved=saved)
    assert done == 3 and len(stack.worker.made) == 2
    assert json.loads((tmp_path / "log.jsonl").read_text().splitlines()[-1])["phase"] == "rl_budget"
