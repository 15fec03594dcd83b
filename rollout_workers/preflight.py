"""The inputs of a run checked before it starts anything: model path, checkpoint, task files, demonstrations.

    cfg = config_from_args(args)                       # common.cli: config file and --set keys
    check_run(cfg, splits=("test",), checkpoint=args.checkpoint)

Used by the training driver, the evaluator, the demonstration writer and `rollout_workers.play`. Each bad input ends
the command with one `error:` line and exit status 2 (common.cli.fail) while nothing is running yet: a typo in a
task file used to surface after Ray, the sites and an engine were up, a missing checkpoint as five model-hub
retries and a Ray traceback.
"""

from __future__ import annotations

from common.cli import check_checkpoint, check_file, check_model_path, fail
from common.config import TrainConfig, expand
from rollout_workers.stack import split_tasks


def check_run(cfg: TrainConfig, splits: tuple[str, ...] = (), checkpoint: str | None = None) -> None:
    """The model (or `checkpoint`) and the task files of `splits` (parsed and every reward plan built)."""
    check_model_path(cfg.model.path)  # the prompt builder's tokenizer comes from here even with a checkpoint
    if checkpoint is not None:
        check_checkpoint(checkpoint)
    env = cfg.environment
    if env.kind == "webarena" and not env.urls:
        fail(
            "environment.urls is empty: environment.kind=webarena needs the sites' URLs (see deploy/README.md)"
        )
    for split in splits:
        path = env.train_tasks if split == "train" else env.test_tasks
        # the environments' own lists are checked by their tests; explicit MiniWoB++ seeds are checked here and the
        # instructions the stored table lacks are read now (once per process), before Ray and the engine start
        explicit = env.kind == "miniwob" and split == "test" and bool(cfg.eval.miniwob_seeds)
        if path or env.kind == "webarena" or explicit:
            try:
                split_tasks(cfg, split)
            except ValueError as e:
                fail(str(e))
    if env.kind == "miniwob" and env.miniwob_tasks:
        from sites.miniwob.tasks import checked_names

        try:
            checked_names(env.miniwob_tasks)
        except ValueError as e:
            fail(f"environment.miniwob_tasks: {e}")


def check_training(cfg: TrainConfig) -> None:
    """What `python -m learner.train` reads besides the splits: demonstrations and a named resume checkpoint."""
    check_run(cfg, splits=("train", "test"))
    if "bc" in cfg.phases and cfg.bc.demos:
        check_file(expand(cfg.bc.demos), "bc.demos", "a JSONL file of demonstrations, or '' for the expert")
    if cfg.learner.resume not in ("auto", "never"):
        check_checkpoint(cfg.learner.resume, "learner.resume")
