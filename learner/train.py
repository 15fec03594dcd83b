"""The training run: behaviour cloning, then M-GRPO, with evaluations in between — on one machine or a Ray cluster.

    # one machine (starts a local Ray with its dashboard on 127.0.0.1:8265, and the bundled sites)
    python -m learner.train --config configs/cpu_demo.yaml
    # a running cluster (RAY_ADDRESS is set by `ray job submit`)
    ray job submit --working-dir . -- python -m learner.train --config configs/qwen2.5-3b_webarena_lite.yaml

The phases come from `phases` in the config (e.g. [eval, bc, eval, rl, eval]). Each RL iteration samples
`rl.tasks_per_iteration` tasks, runs a group of `rl.group_size` episodes per task in parallel browser actors
(own contexts, own sandboxes), scores them with the reward actor, and hands the groups to the learner as they finish;
the learner's M-GRPO update is followed by a weight push to every engine.

How this departs from the paper (WebAgent-R1): the paper batches turns of all episodes in lockstep and sleeps after
actions; here every episode advances on its own and groups are consumed in completion order. Groups with an
infrastructure failure are re-run whole instead of trained half-finished. Sandboxed sites (bundled) mean parallel
rollouts of a writing task never see each other's changes. Optional overlap of rollouts with the update records
the weight-version lag on every turn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import time
from dataclasses import asdict
from typing import Any

from common.cli import config_from_args, run
from common.config import TrainConfig, add_config_args, expand
from common.records import Trajectory, TrajectoryGroup, dump_jsonl, load_jsonl
from learner.collect import Draws, collect
from learner.progress import Progress, drop_iterations
from learner.trackers import Trackers
from learner.weight_sync import PushStats
from rollout_workers.metrics import RayMetrics, RolloutSummary, summarize
from rollout_workers.preflight import check_training
from rollout_workers.stack import Stack, ensure_dir, init_ray

log = logging.getLogger("learner.train")


class Run:
    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.out = ensure_dir(cfg.output_dir)
        self.stack = Stack(cfg)
        self.learner: Any = None
        self.metrics: RayMetrics | None = None
        self.iteration = 0
        self.history: list[dict[str, Any]] = []
        self.bc_checkpoint: str | None = None
        self.progress = Progress()
        self.trackers: Trackers | None = None  # TensorBoard / W&B / MLflow: every _log record, after start()
        self._last_log = time.time()  # the console's seconds per RL iteration

    # --- bring-up ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        import ray

        info = init_ray(self.cfg)
        print(f"[train] Ray up; dashboard: {info.get('dashboard')}", flush=True)
        self.metrics = RayMetrics(self.cfg.logging.metrics)
        (self.out / "config.json").write_text(self.cfg.model_dump_json(indent=2))
        if "bc" in self.cfg.phases or "rl" in self.cfg.phases:
            from learner.actor import LearnerActor

            self.learner = (
                ray.remote(LearnerActor)
                .options(
                    name="learner", num_cpus=self.cfg.learner.num_cpus, num_gpus=self.cfg.learner.num_gpus
                )
                .remote(self.cfg)
            )
            self.iteration = ray.get(self.learner.resume.remote())
        resumed = self.learner is not None and ray.get(self.learner.resumed.remote())
        found = Progress.load(self.out) if self.cfg.learner.resume != "never" else None
        if found is not None and (resumed or "bc" not in self.cfg.phases[: found.next_phase]):
            self.progress = found
            self.bc_checkpoint = found.bc_checkpoint
            print(f"[train] resuming at phase {found.next_phase} of {self.cfg.phases}", flush=True)
        else:
            self.progress = Progress()
            for name in ("log.jsonl", "rollouts.jsonl", "progress.json", "trackers.json", "tensorboard"):
                old = self.out / name
                if old.exists():  # a fresh run in a used folder: keep the old files beside it, never append
                    old.rename(self.out / f"{old.stem}.{int(old.stat().st_mtime)}{old.suffix}")
        self.trackers = Trackers(self.out, self.cfg)  # a resumed run continues the runs in trackers.json
        # Engines load the newest weights: the resumed checkpoint when there is one.
        model_path, version = None, 0
        if self.learner is not None:
            model_path = ray.get(self.learner.current_model_path.remote())
            version = ray.get(self.learner.weight_version.remote())
        self.stack.start(model_path, weight_version=version)
        self.stack.worker.on_group = self.metrics.record_group
        served = {k: "served by each browser actor on its node" for k in self.stack.local_sites}
        print(f"[train] sites: {self.stack.urls | served}", flush=True)

    # --- phases -------------------------------------------------------------------------------------------------
    async def phase_eval(self, label: str) -> RolloutSummary:
        from rollout_workers.evaluate import evaluate

        await self._heal()
        tasks = self.stack.tasks("test")
        show = self.cfg.logging.progress
        summary, groups = await evaluate(self.stack.worker, tasks, self.cfg, label=label, progress=show)
        self._save_groups(groups, f"eval_{label}.jsonl", phase="eval", label=label)
        record: dict[str, Any] = {"phase": "eval", "label": label, **summary.to_json()}
        if (
            self.cfg.environment.kind != "miniwob"
        ):  # answers a constant scores, successes that never read the page
            from rollout_workers.guessing import blind_successes, constant_answer_baseline

            played = {g.task_id for g in groups}
            evaluated = [t for t in tasks if t.task_id in played]
            record["constant_baseline"] = constant_answer_baseline(self.stack.tasks("train"), evaluated)
            record["blind"] = blind_successes([t for g in groups for t in g.trajectories], evaluated)
        if self.cfg.eval.sampled_per_task > 0 and label in self.cfg.eval.sampled_at:
            sampled, sgroups = await evaluate(
                self.stack.worker, tasks, self.cfg, label=f"{label} sampled", progress=show, sampled=True
            )
            self._save_groups(sgroups, f"eval_{label}_sampled.jsonl", phase="eval", label=f"{label}_sampled")
            record.update(
                sampled_success=sampled.success,
                sampled_success_ci95=sampled.success_ci95,
                sampled_episodes=sampled.episodes,
                sampled_temperature=self.cfg.inference.temperature,
            )
        self.metrics.record_eval(summary, label)
        self._log(record)
        self._log_paired(label)
        return summary

    def _log_paired(self, label: str) -> None:
        """This evaluation against the run's previous one, episode by episode (greedy, and sampled when both have
        it): the paired difference, its 95% bootstrap interval, exact McNemar p and the flips each way."""
        from learner.report import paired_from_files

        earlier = [s for s in self.progress.evals if s != label]
        if not earlier:
            return
        for kind in ("greedy", "sampled"):
            d = paired_from_files(self.out, earlier[-1], label, kind=kind, seed=self.cfg.seed)
            if d is not None:
                self._log(
                    {"phase": "paired", "before": earlier[-1], "after": label, "kind": kind, **d.to_json()}
                )

    async def phase_bc(self) -> None:
        demos, report = await self._demos()
        held = self.cfg.bc.held_out if len(demos) > 2 * self.cfg.bc.held_out else 0
        # The held-out slice is spread over templates: every k-th demonstration of the template-balanced list.
        step = max(1, len(demos) // held) if held else 0
        held_out = demos[::step][:held] if held else []
        train = [d for d in demos if all(d is not h for h in held_out)]
        turns = sum(len(d.turns) for d in train)
        prompt = [len(t.prompt_ids) for d in train for t in d.turns]
        print(
            f"[train] BC on {len(train)} demonstrations ({turns} turns, mean prompt "
            f"{sum(prompt) / max(1, len(prompt)):.0f} tokens), {len(held_out)} held out; expert: "
            f"{report.get('solved')}/{report.get('played')} solved, {report.get('over_budget', 0)} over "
            "inference.max_new_tokens",
            flush=True,
        )
        stats = await self._call("train_bc", train, held_out, timeout=self.cfg.bc.timeout_s)
        self._log(
            {
                "phase": "bc",
                "demos": len(train),
                "held_out_demos": len(held_out),
                "expert": report,
                **stats.to_json(),
            }
        )
        await self._push()
        # weights only: RL, and a run resumed from here, start with a fresh optimizer
        self.bc_checkpoint = await self._call("save_checkpoint", tag="bc", optimizer=False)

    async def phase_rl(self) -> None:
        rl = self.cfg.rl
        sampler, expert, guided = await self._rl_setup()
        begun = await self._call("begin_rl", self.bc_checkpoint)
        start = self.iteration
        if start:  # resumed: the sampler continues where the checkpoint left it; later iterations run again
            sampler.restore((await self._call("driver_state")).get("sampler"))
            dropped = drop_iterations(self.out / "log.jsonl", start, trajectories=False)
            dropped += drop_iterations(self.out / "rollouts.jsonl", start, trajectories=True)
            print(f"[train] resuming RL at iteration {start}; {dropped} records of later iterations dropped")
        overlap = self.cfg.rollout.overlap_with_learner
        print(
            f"[train] RL on {sampler.size} train tasks ({sampler.excluded} demonstration tasks left out); "
            f"reference: {begun['reference']}"
            + ("; dynamic sampling" if rl.dynamic_sampling else "")
            + ("; expert guidance" if expert is not None else "")
            + ("; rollouts overlap the learner (one version of lag)" if overlap else ""),
            flush=True,
        )

        def rollouts(iteration: int) -> asyncio.Task:
            return asyncio.create_task(
                collect(
                    self.stack.worker, sampler, self.cfg, iteration, expert=expert, guided_templates=guided
                )
            )

        it, stalled = start, 0
        # the next iteration's rollouts, started during this update (overlap)
        pending: asyncio.Task | None = None
        sampler_state = sampler.state()  # what a checkpoint saves: the sampler before the next iteration drew
        while it < rl.iterations:
            self.iteration = it
            self.metrics.record_progress(it, stalled)
            if pending is None:
                await self._heal()
                pending = rollouts(it)
            draws: Draws = await pending
            pending = None
            roll = summarize(draws.policy_groups(), draws.seconds)
            if draws.drawn and draws.outcomes.get("failed", 0) == draws.drawn:
                stalled += 1
                await self._stalled(it, stalled, draws, roll)
                continue
            stalled = 0
            self.metrics.record_progress(it, stalled)
            roll.curriculum = sampler.weights()
            sampler_state = sampler.state()
            self._save_groups(draws.groups, "rollouts.jsonl", append=True, phase="rl", iteration=it)
            if overlap and it + 1 < rl.iterations:
                # sampled with the weights of before this update; the push below lands between engine requests,
                # so each turn carries the one version that wrote it (lag <= 1 when iteration it+1 trains)
                pending = rollouts(it + 1)
            await self._heal()  # before the update: a restored engine gets the weights its peers hold
            stats = await self._call("rl_step", draws.train)
            push = await self._push()
            self.metrics.record_rollouts(roll)
            self.metrics.record_sampling(draws.to_json())
            self.metrics.record_update(stats.tokens_per_s)
            self._log(
                {
                    "phase": "rl",
                    "iteration": it,
                    "rollout": roll.to_json(),
                    "sampling": draws.to_json(),
                    "resting_tasks": sampler.resting(it + 1),
                    "learner": stats.to_json(),
                    "push": asdict(push),
                }
            )
            it += 1
            if self.cfg.learner.checkpoint_every and it % self.cfg.learner.checkpoint_every == 0:
                # a resumed run draws the in-flight iteration's tasks again from this state: the same tasks
                extra = {"sampler": sampler_state}
                await self._call("save_checkpoint", extra=extra, tag=f"rl-{it}", iteration=it)
        self.iteration = rl.iterations
        await self._call(
            "save_checkpoint", extra={"sampler": sampler.state()}, tag="rl", iteration=rl.iterations
        )

    async def _rl_setup(self) -> tuple[Any, Any, set[Any] | None]:
        """The task sampler (with the filters of rl.*), the expert policy for guidance (None when off) and the
        templates it may guide (those it solved in the demonstrations; None = any)."""
        from learner.curriculum import TaskSampler
        from rollout_workers.policy import ExpertPolicy

        rl, ro = self.cfg.rl, self.cfg.rollout
        solved = None
        demos: list[Trajectory] = []
        if rl.expert_solvable or rl.expert_guidance or rl.exclude_demo_tasks:
            demos, report = await self._demos()
            if report.get("by_template"):
                solved = {
                    int(k) if str(k).isdigit() else k for k, v in report["by_template"].items() if v["solved"]
                }
        exclude = {d.task_id for d in demos} if rl.exclude_demo_tasks else set()
        sampler = TaskSampler(self.stack.tasks("train"), rl, solved, seed=self.cfg.seed, exclude=exclude)
        expert = None
        if rl.expert_guidance:
            expert = ExpertPolicy(self.stack.builder, ro.grammar, ro.thinking, style=self.cfg.bc.reply_style)
        return sampler, expert, solved

    async def _stalled(self, it: int, stalled: int, draws: Draws, roll: RolloutSummary) -> None:
        """Nothing to train on (every group hit an outage): not an iteration. Back off and try again, and give up
        clearly once the sites have stayed down for rl.max_stalled_iterations tries."""
        self.metrics.record_progress(it, stalled)
        self._log({"phase": "rl_stalled", "iteration": it, "attempt": stalled, "rollout": roll.to_json()})
        if stalled >= self.cfg.rl.max_stalled_iterations:
            first = draws.groups[0].trajectories[0].failure if draws.groups else "no groups"
            raise RuntimeError(
                f"RL iteration {it}: every group failed {stalled} times in a row (last: {first})"
            )
        await asyncio.sleep(min(300.0, self.cfg.rollout.retry_backoff_s * 2**stalled))

    async def _call(self, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
        """A learner call with a bound (learner.call_timeout_s unless given) and a failure that names it."""
        limit = self.cfg.learner.call_timeout_s if timeout is None else timeout
        try:
            return await asyncio.wait_for(getattr(self.learner, method).remote(*args, **kwargs), limit)
        except asyncio.TimeoutError as e:
            raise TimeoutError(f"the learner's {method} gave no answer within {limit:.0f}s") from e

    async def _heal(self) -> None:
        """Engines out of service (dead, restarted by Ray, or hung) get the current weights and serve again."""
        router = self.stack.router
        if router is None or not router.down:
            return

        async def restore(i: int) -> None:
            if self.learner is None:  # no learner: the weights an engine starts with are the run's weights
                return
            await self._call(
                "push_weights", [self.stack.engines[i]], self.cfg.learner.weight_sync, version=router.version
            )

        back = await router.heal(restore)
        self._log({"phase": "engines", "back_in_service": back, "down": dict(router.down)})

    async def _push(self) -> PushStats:
        """Push the weights to the engines in service. An engine that fails during the push goes out of service
        (healed before the next rollouts) and the others get the same version again."""
        router = self.stack.router
        for attempt in (1, 2):
            serving = router.serving()
            if not serving:
                raise RuntimeError(f"no engine is serving: {router.down}")
            version = None if attempt == 1 else router.version + 1
            try:
                stats = await self._call(
                    "push_weights",
                    [self.stack.engines[i] for i in serving],
                    self.cfg.learner.weight_sync,
                    version=version,
                )
                break
            except Exception as e:
                if attempt == 2:
                    raise
                for i in serving:
                    try:
                        await router.probe(i)
                    except Exception as why:  # noqa: BLE001 - this engine is what failed the push
                        router.mark_down(i, f"weight push: {type(why).__name__}: {why}"[:300])
                log.warning("weight push failed (%s); again to the engines still serving", e)
        router.version = stats.version
        self.metrics.record_push(stats.seconds, stats.method)
        print(
            f"[train] weights pushed: {stats.bytes / 1e6:.0f} MB in {stats.seconds:.2f}s ({stats.method})",
            flush=True,
        )
        return stats

    async def _demos(self) -> tuple[list[Trajectory], dict[str, Any]]:
        """The BC data and the expert's report: a JSONL file (`bc.demos`), or the scripted expert's episodes scored
        1 on a template-balanced sample of the train split, played through the rollout loop and cached in the run
        folder (demos.jsonl + demos.report.json)."""
        if self.cfg.bc.demos:
            from learner.bc_data import with_token_ids

            demos = with_token_ids(
                load_jsonl(expand(self.cfg.bc.demos)), self.stack.builder, self.cfg.bc.reply_style
            )
            return demos, {"played": len(demos), "solved": len(demos), "by_template": {}}
        from rollout_workers.demos import collect_demos

        path, report_path = self.out / "demos.jsonl", self.out / "demos.report.json"
        if path.exists() and report_path.exists():
            return load_jsonl(str(path)), json.loads(report_path.read_text())
        t0 = time.time()
        demos, report = await collect_demos(
            self.stack.worker, self.stack.tasks("train"), self.cfg, limit=self.cfg.bc.max_demos
        )
        summary = {**report.as_dict(), "seconds": round(time.time() - t0, 1)}
        dump_jsonl(demos, str(path))
        report_path.write_text(json.dumps(summary, indent=1))
        return demos, summary

    # --- logging ------------------------------------------------------------------------------------------------
    def _log(self, record: dict[str, Any]) -> None:
        record = {"time": time.time(), **record}
        self.history.append(record)
        line = json.dumps(record, default=str)
        with open(self.out / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(line + "\n")
        if self.trackers is not None:
            self.trackers.log(json.loads(line))  # what log.jsonl holds, no more
        brief = {
            k: v
            for k, v in record.items()
            if k
            in (
                "phase",
                "label",
                "iteration",
                "success",
                "success_ci95",
                "loss",
                "demos",
                "loss_first",
                "loss_last",
                "before",
                "after",
                "kind",
                "difference",
                "ci95",
                "gained",
                "lost",
            )
        }
        if "rollout" in record:
            brief["success"] = record["rollout"]["success"]
            brief["prompt_tokens"] = record["rollout"].get("prompt_tokens_mean")
            brief["loss"] = record.get("learner", {}).get("loss")
            brief["no_signal"] = record.get("learner", {}).get("no_signal", False)
            sampling = record.get("sampling") or {}
            brief["groups"] = f"{sampling.get('kept')}/{sampling.get('drawn')} kept"
            if sampling.get("expert_members"):
                brief["expert"] = f"{sampling['expert_solved']}/{sampling['expert_members']} solved"
            brief["seconds"] = round(record["time"] - self._last_log, 1)
        if "sampled_success" in record:
            brief["sampled_success"] = record["sampled_success"]
        self._last_log = record["time"]
        print(f"[train] {json.dumps(brief, default=str)}", flush=True)

    def _save_groups(
        self, groups: list[TrajectoryGroup], name: str, append: bool = False, **tags: Any
    ) -> None:
        """Trajectories as JSONL, each tagged in `meta` with `tags` (phase, iteration) for resume and the viewer."""
        if self.cfg.logging.save_trajectories:
            trajs = [t for g in groups for t in g.trajectories]
            for t in trajs:
                t.meta.update(tags)
            dump_jsonl(trajs, str(self.out / name), append=append)

    async def main(self) -> dict[str, RolloutSummary]:
        p = self.progress
        ran = not p.finished
        if p.finished:
            print(f"[train] {self.out} holds a finished run: nothing to do (remove progress.json to re-run)")
        for i, phase in enumerate(self.cfg.phases):
            if i < p.next_phase:
                continue
            if phase == "eval":
                p.evals[p.stage] = await self.phase_eval(p.stage)
            elif phase == "bc":
                await self.phase_bc()
                p.stage, p.bc_checkpoint = "after_bc", self.bc_checkpoint
            elif phase == "rl":
                await self.phase_rl()
                p.stage = "after_rl"
            p.next_phase = i + 1
            p.save(self.out)
        if not p.finished:
            p.finished = True
            p.save(self.out)
        from learner.report import read_log, write_report

        report = write_report(self.out, read_log(self.out / "log.jsonl"), p.evals)
        print(f"[train] report: {report}", flush=True)
        total, ckpts = _folder_bytes(self.out), _folder_bytes(self.out / "checkpoints")
        if ran:  # a finished run submitted again logs nothing
            self._log({"phase": "run", "folder_bytes": total, "checkpoint_bytes": ckpts})
        print(
            f"[train] run folder {self.out}: {total / 1e9:.2f} GB, of which checkpoints {ckpts / 1e9:.2f} GB",
            flush=True,
        )
        return p.evals

    def close(self) -> None:
        """Take down what this run started (its actors go too, so a later run in the same Ray can reuse names)."""
        if self.trackers is not None:
            self.trackers.close()
        self.stack.close()
        if self.learner is not None:
            import ray

            ray.kill(self.learner)
            self.learner = None


def _folder_bytes(path: Any) -> int:
    from pathlib import Path

    root = Path(path)
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) if root.exists() else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m learner.train", description=__doc__.split("\n")[0])
    add_config_args(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per sandbox request is noise
    # Config, model, task files: a bad one is one error line and exit 2, before anything starts.
    cfg = config_from_args(args)
    check_training(cfg)
    from learner.run_lock import RunLock

    # One driver per output folder: a second one would interleave logs and checkpoints (RunFolderBusy names it).
    with RunLock(cfg.output_dir):
        run = Run(cfg)
        try:
            run.start()
            evals = asyncio.run(run.main())
        finally:
            run.close()
    print(json.dumps({k: v.success for k, v in evals.items()}, indent=1))
    return 0


if __name__ == "__main__":
    run(main)
