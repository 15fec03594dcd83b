"""The training run: behaviour cloning, then M-GRPO, with evaluations in between — on one machine or a Ray cluster.

    # one machine (starts a local Ray with its dashboard on 127.0.0.1:8265, and the bundled sites)
    python -m learner.train --config configs/cpu_demo.yaml
    # a running cluster (RAY_ADDRESS is set by `ray job submit`)
    ray job submit --working-dir . -- python -m learner.train --config configs/qwen2.5-3b_webarena_lite.yaml

The phases come from `phases` in the config (e.g. [eval, bc, eval, rl, eval]); this driver brings the parts up,
runs each phase in turn (learner/eval_phase.py, learner/bc_phase.py, learner/rl_phase.py) and records its progress
for an exact resume. Each RL iteration (`RLPhase.iteration`; the README's "One RL iteration, file by file") samples
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
from pathlib import Path
from typing import Any

from common.cli import config_from_args, run
from common.config import TrainConfig, add_config_args
from learner.bc_phase import run_bc
from learner.engine_sync import EngineSync
from learner.eval_phase import run_eval
from learner.learner_handle import LearnerHandle
from learner.progress import Progress, changed_settings
from learner.rl_phase import RLPhase
from learner.run_log import RunLog
from learner.run_parts import RunParts
from learner.trackers import Trackers
from rollout_workers.metrics import RayMetrics, RolloutSummary
from rollout_workers.preflight import check_training
from rollout_workers.stack import Stack, ensure_dir, init_ray

log = logging.getLogger("learner.train")


class Run:
    """Brings the parts up (`start`), runs the phases of `cfg.phases` in order (`main`), takes them down (`close`)."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.out = ensure_dir(cfg.output_dir)
        self.stack = Stack(cfg)
        self.learner: LearnerHandle | None = None
        self.log = RunLog(self.out, cfg)
        self.iteration = 0  # the RL iteration the RL phase starts at (a resumed learner's)
        self.bc_checkpoint: str | None = None
        self.progress = Progress()
        self.parts: RunParts | None = None  # what the phases share, once started

    # --- bring-up ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        info = init_ray(self.cfg)
        print(f"[train] Ray up; dashboard: {info.get('dashboard')}", flush=True)
        metrics = RayMetrics(self.cfg.logging.metrics)
        previous = self._previous_config()
        (self.out / "config.json").write_text(self.cfg.model_dump_json(indent=2))
        model_path, version, resumed = None, 0, False
        if "bc" in self.cfg.phases or "rl" in self.cfg.phases:
            self.learner = self._launch_learner()
            standing = asyncio.run(self.learner.bring_up())
            self.iteration, resumed = standing.rl_steps, standing.resumed
            # Engines load the newest weights: the resumed checkpoint when there is one.
            model_path, version = standing.model_path, standing.weight_version
        self._fresh_or_resume(resumed, previous)
        self.log.trackers = Trackers(self.out, self.cfg)  # a resumed run continues the runs in trackers.json
        self.stack.start(model_path, weight_version=version)
        self.stack.worker.on_group = metrics.record_group
        served = {k: "served by each browser actor on its node" for k in self.stack.local_sites}
        print(f"[train] sites: {self.stack.urls | served}", flush=True)
        sync = EngineSync(self.stack.router, self.learner, self.cfg.learner.weight_sync, metrics, self.log)
        self.parts = RunParts(self.cfg, self.out, self.stack, self.learner, metrics, self.log, sync)

    def _launch_learner(self) -> LearnerHandle:
        import ray

        from learner.actor import LearnerActor

        lc = self.cfg.learner
        actor = ray.remote(LearnerActor).options(name="learner", num_cpus=lc.num_cpus, num_gpus=lc.num_gpus)
        return LearnerHandle(actor.remote(self.cfg), lc)

    def _previous_config(self) -> dict[str, Any]:
        """The config.json a run in this folder was started with ({} when none or unreadable), before this run
        writes its own."""
        try:
            return json.loads((self.out / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def _fresh_or_resume(self, learner_resumed: bool, previous: dict[str, Any]) -> None:
        """Continue the phases of progress.json when the learner resumed too (or no BC lies behind them); else a
        fresh run, which moves the old files of a used folder aside. A resumed run whose settings differ from the
        killed one's says which, keeps the old config.json beside the new one and records the change in log.jsonl;
        one whose learner already holds rl.iterations RL steps or more says that its RL phase has nothing to run."""
        found = Progress.load(self.out) if self.cfg.learner.resume != "never" else None
        if found is not None and (learner_resumed or "bc" not in self.cfg.phases[: found.next_phase]):
            self.progress = found
            self.bc_checkpoint = found.bc_checkpoint
            print(f"[train] resuming at phase {found.next_phase} of {self.cfg.phases}", flush=True)
            self._say_what_changed(found, previous)
            return
        self.progress = Progress()
        for name in ("log.jsonl", "rollouts.jsonl", "progress.json", "trackers.json", "tensorboard"):
            old = self.out / name
            if old.exists():  # a fresh run in a used folder: keep the old files beside it, never append
                old.rename(self.out / f"{old.stem}.{int(old.stat().st_mtime)}{old.suffix}")

    def _say_what_changed(self, found: Progress, previous: dict[str, Any]) -> None:
        """A resumed run: the settings that differ from the killed run's `previous` config (printed, kept as
        config.<time>.json, logged as a `resume` record), and a warning when RL has no iteration left to run."""
        changes = changed_settings(previous, self.cfg.model_dump(mode="json")) if previous else []
        if changes and not found.finished:  # a finished run runs nothing, whatever its settings
            kept = self.out / f"config.{int(time.time())}.json"
            kept.write_text(json.dumps(previous, indent=2), encoding="utf-8")
            print(
                f"[train] WARNING: resumed with other settings than {kept.name}: {'; '.join(changes)}",
                flush=True,
            )
            self.log.record({"phase": "resume", "changed_settings": changes, "previous_config": kept.name})
        if "rl" in self.cfg.phases[found.next_phase :] and self.iteration >= self.cfg.rl.iterations > 0:
            print(
                f"[train] WARNING: the learner holds {self.iteration} RL iterations and rl.iterations is "
                f"{self.cfg.rl.iterations}: the RL phase has nothing left to run",
                flush=True,
            )

    # --- the phases, in order -------------------------------------------------------------------------------------
    async def main(self) -> dict[str, RolloutSummary]:
        assert self.parts is not None, "Run.start() brings the parts up first"
        p = self.progress
        ran = not p.finished
        if p.finished:
            print(f"[train] {self.out} holds a finished run: nothing to do (remove progress.json to re-run)")
        for i, phase in enumerate(self.cfg.phases):
            if i < p.next_phase:
                continue
            if phase == "eval":
                p.evals[p.stage] = await run_eval(self.parts, p.stage, earlier=list(p.evals))
            elif phase == "bc":
                self.bc_checkpoint = await run_bc(self.parts)
                p.stage, p.bc_checkpoint = "after_bc", self.bc_checkpoint
            elif phase == "rl":
                self.iteration = await RLPhase(self.parts, self.bc_checkpoint).run(start=self.iteration)
                p.stage = "after_rl"
            p.next_phase = i + 1
            p.save(self.out)
        if not p.finished:
            p.finished = True
            p.save(self.out)
        self._finish(ran)
        return p.evals

    def _finish(self, ran: bool) -> None:
        """report.md (and its figures), and the run folder's size."""
        from learner.report import read_log, write_report

        report = write_report(self.out, read_log(self.out / "log.jsonl"), self.progress.evals)
        print(f"[train] report: {report}", flush=True)
        total, ckpts = _folder_bytes(self.out), _folder_bytes(self.out / "checkpoints")
        if ran:  # a finished run submitted again logs nothing
            self.log.record({"phase": "run", "folder_bytes": total, "checkpoint_bytes": ckpts})
        print(
            f"[train] run folder {self.out}: {total / 1e9:.2f} GB, of which checkpoints {ckpts / 1e9:.2f} GB",
            flush=True,
        )

    def close(self) -> None:
        """Take down what this run started (its actors go too, so a later run in the same Ray can reuse names)."""
        self.log.close()
        self.stack.close()
        if self.learner is not None:
            self.learner.kill()
            self.learner = None


def _folder_bytes(path: Path) -> int:
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
