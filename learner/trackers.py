"""Experiment trackers: every record the driver appends to log.jsonl also goes to TensorBoard, Weights & Biases
and/or MLflow (`logging.trackers`), under stable names and a global step, and a resumed run continues the same
tracker runs.

    trackers = Trackers(run_dir, cfg)   # after the driver decided between resume and a fresh run
    trackers.log(record)                # each log.jsonl record, as it is appended
    trackers.close()

Names: a record's numbers, flattened into slash-separated names under its phase.
    eval        eval/<label>/success, eval/<label>/success_ci95/lo and /hi,
                eval/<label>/success_by_template/<template>/success, eval/<label>/sampled_success, ...
    rl          rl/rollout/success, rl/sampling/kept, rl/sampling/drawn, rl/learner/advantages/<stat>,
                rl/learner/approx_kl, rl/learner/kl, rl/learner/entropy, rl/learner/clip_frac,
                rl/learner/tokens_per_s, rl/push/seconds, rl/iteration, ...
    bc          bc/step/loss, bc/step/grad_norm, bc/step/lr, ... at each BC step (the record's `history`);
                bc/held_out/token_accuracy, bc/held_out/nll, ... at each held-out check (before the first step,
                after each epoch); bc/loss_first, bc/loss_last, bc/demos, bc/expert/solved, ... at the phase's end
    paired      paired/<before>-<after>/<kind>/difference, .../ci95/lo and /hi, .../mcnemar_p, ...
    engines     engines/back_in_service, engines/down (how many engines)
    rl_stalled  rl_stalled/attempt, rl_stalled/rollout/...
    rl_budget   rl_budget/iterations, rl_budget/used_min, ... (the RL phase stopped at rl.time_budget_min)
    run         run/folder_bytes, run/checkpoint_bytes (the run folder's size on disk, at the end of a run)
Booleans become 0/1; strings, None and numbers that are not finite are left out (log.jsonl keeps them); a list of
numbers becomes name/0, name/1, ..., except a [lo, hi] interval (a key ending in ci95): name/lo, name/hi.
Characters a tracker refuses in a name become '_'.

Step: the learner's step count (BC and RL calls together, the learner's `iteration`). An RL record is at its
learner's step, a BC step at its own; a record without one (an evaluation, a paired difference) is at the step
logged last before it (0 before training). Within a run it never goes backwards. After a resume, an RL iteration
that had begun after the last checkpoint runs again and logs at the same step again (TensorBoard and MLflow then
hold both points; log.jsonl only the new one). W&B plots against `global_step`, since its own step must grow.

Resume: trackers.json in the run folder holds each tracker's run (W&B run id, MLflow run id and URI) and the last
step; a driver that resumes the run finds it and continues those runs; TensorBoard appends event files to
<run folder>/tensorboard. The driver moves trackers.json and tensorboard/ aside, with log.jsonl, when it starts a
fresh run in a used folder.

Failures: a tracker whose package is missing (`pip install -e '.[trackers]'`) or that fails to start or to log
(no API key, a server that refuses, any exception) costs one warning and is dropped; the others and log.jsonl go on.
"""

from __future__ import annotations

import json
import logging
import math
import netrc
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from common.config import LoggingConfig, TrainConfig

log = logging.getLogger("learner.trackers")

FILE = "trackers.json"
TENSORBOARD_DIR = "tensorboard"
_REFUSED = re.compile(r"[^A-Za-z0-9_\-./ ]")  # MLflow's rule is the narrowest of the three


def flatten(value: Any, name: str) -> dict[str, float]:
    """The numbers inside `value` as {slash/separated/name: float} (rules in the module docstring)."""
    if isinstance(value, bool):
        return {name: float(value)}
    if isinstance(value, int | float):
        return {name: float(value)} if math.isfinite(value) else {}
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            out.update(flatten(item, f"{name}/{_part(key)}"))
    elif isinstance(value, list | tuple) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        parts = ("lo", "hi") if name.endswith("ci95") and len(value) == 2 else range(len(value))
        for part, item in zip(parts, value, strict=True):
            out.update(flatten(item, f"{name}/{part}"))
    return out  # strings, None, lists of records: left to log.jsonl


def _part(key: Any) -> str:
    """A dict key as one part of a name: refused characters as '_', and never empty, '.' or '..' (MLflow takes
    names for paths)."""
    part = _REFUSED.sub("_", str(key))
    return "_" if part in ("", ".", "..") else part


def series(record: dict[str, Any], last_step: int) -> list[tuple[int, dict[str, float]]]:
    """One log.jsonl record as (step, metrics) points, in step order."""
    phase = _part(record.get("phase", "log"))
    body = {k: v for k, v in record.items() if k not in ("time", "phase")}
    if phase == "rl":
        return [(int(body.get("learner", {}).get("iteration", last_step)), flatten(body, "rl"))]
    if phase == "bc":
        return _bc_series(body, last_step)
    if phase == "eval":
        return [(last_step, flatten(body, f"eval/{_part(body.pop('label', ''))}"))]
    if phase == "paired":
        pair = _part(f"{body.pop('before', '')}-{body.pop('after', '')}")
        return [(last_step, flatten(body, f"paired/{pair}/{_part(body.pop('kind', ''))}"))]
    if phase == "engines":  # engine indices and reasons: what a chart can show is how many
        counts = {
            "back_in_service": len(body.get("back_in_service") or []),
            "down": len(body.get("down") or {}),
        }
        return [(last_step, flatten(counts, "engines"))]
    return [(last_step, flatten(body, phase))]


def _bc_series(body: dict[str, Any], last_step: int) -> list[tuple[int, dict[str, float]]]:
    """BC's steps at their own step, each held-out check at the step after which it was measured, the phase's
    totals at its last step."""
    history, checks = body.pop("history", []) or [], body.pop("held_out", []) or []
    end = int(body.get("iteration", last_step))
    start = end - len(history)  # the learner's step count before BC's first step
    points = [
        (
            int(h.get("iteration", start + i + 1)),
            flatten({k: v for k, v in h.items() if k != "iteration"}, "bc/step"),
        )
        for i, h in enumerate(history)
    ]
    for check in checks:
        epoch = check.get("epoch", 0)
        step = start + sum(1 for h in history if (h.get("epoch") or 0) <= epoch)
        points.append((step, flatten({k: v for k, v in check.items() if k != "epoch"}, "bc/held_out")))
    points.append((end, flatten(body, "bc")))
    return sorted(points, key=lambda p: p[0])


def hyperparameters(cfg: TrainConfig) -> dict[str, str | int | float | bool]:
    """The run config as {dotted.key: scalar}, the names `--set` takes; lists and None as JSON text."""
    out: dict[str, str | int | float | bool] = {}

    def walk(value: Any, name: str) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(item, f"{name}.{key}" if name else str(key))
        elif isinstance(value, str | int | float | bool):
            out[name] = value
        else:
            out[name] = json.dumps(value)

    walk(cfg.model_dump(mode="json"), "")
    return out


class Trackers:
    """The trackers of one run folder; `log` and `close` never raise (see the module docstring)."""

    def __init__(self, run_dir: str | Path, cfg: TrainConfig):
        self.dir = Path(run_dir)
        saved: dict[str, Any] = {}
        if (self.dir / FILE).exists():
            try:
                saved = json.loads((self.dir / FILE).read_text(encoding="utf-8"))
            except ValueError as e:  # torn or edited by hand: new tracker runs; log.jsonl is unharmed
                log.warning("%s is not JSON (%s): the trackers start new runs", self.dir / FILE, e)
        self.step: int = int(saved.get("step", 0))
        self.runs: dict[str, dict[str, Any]] = saved.get("runs", {})
        self.active: dict[str, Any] = {}
        params = hyperparameters(cfg)
        for name in cfg.logging.trackers:
            try:
                self.active[name] = _OPEN[name](self.dir, cfg.logging, self.runs.setdefault(name, {}), params)
            except ImportError as e:
                log.warning(
                    "tracker %s is not installed (%s; pip install -e '.[trackers]'): the run goes on without it",
                    name,
                    e,
                )
            except Exception as e:  # noqa: BLE001 - any failure of a tracker must leave the run going
                log.warning(
                    "tracker %s did not start (%s: %s): the run goes on without it", name, type(e).__name__, e
                )
        self._save()

    def log(self, record: dict[str, Any]) -> None:
        walltime = float(record.get("time") or 0.0) or None
        try:
            points = series(record, self.step)
        except Exception as e:  # noqa: BLE001 - a record of an unexpected shape stays in log.jsonl alone
            log.warning(
                "record not sent to the trackers (%s: %s): %s", type(e).__name__, e, str(record)[:200]
            )
            return
        for name, tracker in list(self.active.items()):
            try:
                for step, metrics in points:
                    if metrics:
                        tracker.log(metrics, step, walltime)
            except Exception as e:  # noqa: BLE001
                self._drop(name, f"failed to log ({type(e).__name__}: {e})")
        if points:
            self.step = points[-1][0]
            self._save()

    def close(self) -> None:
        for name in list(self.active):
            try:
                self.active[name].close()
            except Exception as e:  # noqa: BLE001
                log.warning("tracker %s failed to close (%s: %s)", name, type(e).__name__, e)
        self.active.clear()

    def _drop(self, name: str, why: str) -> None:
        log.warning("tracker %s %s: the run goes on without it", name, why)
        tracker = self.active.pop(name)
        try:
            tracker.close()
        except Exception:  # noqa: BLE001, S110 - it already failed; its warning is out
            pass

    def _save(self) -> None:
        tmp = self.dir / f"{FILE}.tmp"
        tmp.write_text(json.dumps({"step": self.step, "runs": self.runs}, indent=1), encoding="utf-8")
        os.replace(tmp, self.dir / FILE)


class _TensorBoard:
    """Event files in <run folder>/tensorboard: `tensorboard --logdir runs/` shows every run by its folder."""

    def __init__(self, run_dir: Path, cfg: LoggingConfig, state: dict[str, Any], params: dict[str, Any]):
        from torch.utils.tensorboard import SummaryWriter
        from torch.utils.tensorboard.summary import hparams

        fresh = not state
        state["log_dir"] = str(run_dir / TENSORBOARD_DIR)
        self.writer = SummaryWriter(log_dir=state["log_dir"])
        if fresh:  # in the run's own event file (add_hparams would make a sub-run of it)
            for summary in hparams(params, {}):
                self.writer.file_writer.add_summary(summary)

    def log(self, metrics: dict[str, float], step: int, walltime: float | None) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, step, walltime=walltime)
        self.writer.flush()  # a record per phase or iteration: cheap, and nothing is lost to a crash

    def close(self) -> None:
        self.writer.close()


class _WandB:
    """A W&B run with a stored id; offline files in <run folder>/wandb unless the user has an API key."""

    def __init__(self, run_dir: Path, cfg: LoggingConfig, state: dict[str, Any], params: dict[str, Any]):
        import wandb

        mode = cfg.wandb_mode
        if mode == "auto":
            mode = os.environ.get("WANDB_MODE") or ("online" if _wandb_key() else "offline")
        fresh = "id" not in state
        run_id = state.get("id") or uuid.uuid4().hex[:8]
        self.run = wandb.init(
            project=cfg.wandb_project,
            name=cfg.run_name,
            id=run_id,
            resume="allow",
            dir=str(run_dir),
            mode=mode,
            config=params if fresh else None,
            # the driver's console (progress bars, prints) stays its own
            settings=wandb.Settings(console="off"),
            reinit="create_new",
        )
        state.update(id=self.run.id, mode=mode, project=cfg.wandb_project)
        self.run.define_metric("global_step")
        self.run.define_metric("*", step_metric="global_step")

    def log(self, metrics: dict[str, float], step: int, walltime: float | None) -> None:
        self.run.log({**metrics, "global_step": step})

    def close(self) -> None:
        self.run.finish()


def _wandb_key() -> bool:
    """Whether W&B has an API key: WANDB_API_KEY, or the netrc entry `wandb login` writes."""
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        return netrc.netrc().authenticators(host or "") is not None
    except (OSError, netrc.NetrcParseError):
        return False


class _MLflow:
    """An MLflow run in a store: by default a file store in <run folder>/mlruns."""

    def __init__(self, run_dir: Path, cfg: LoggingConfig, state: dict[str, Any], params: dict[str, Any]):
        uri = (
            cfg.mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI") or (run_dir / "mlruns").resolve().as_uri()
        )
        if uri.startswith("file:"):
            # MLflow 3 refuses the file store unless told: it is in maintenance, not gone, and needs no database
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=uri)
        known: dict[str, str] = {}
        if state.get("run_id") and state.get("uri") == uri:
            self.run_id = state["run_id"]
            known = dict(self.client.get_run(self.run_id).data.params)
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            found = self.client.get_experiment_by_name(cfg.mlflow_experiment)
            experiment = (
                found.experiment_id if found else self.client.create_experiment(cfg.mlflow_experiment)
            )
            self.run_id = self.client.create_run(experiment, run_name=cfg.run_name).info.run_id
        state.update(run_id=self.run_id, uri=uri)
        # params are write-once in MLflow: a resumed run adds the keys it did not have, and keeps the first values
        new = [Param(k, str(v)) for k, v in params.items() if k not in known]
        for i in range(0, len(new), 100):  # log_batch takes at most 100 params
            self.client.log_batch(self.run_id, params=new[i : i + 100])

    def log(self, metrics: dict[str, float], step: int, walltime: float | None) -> None:
        from mlflow.entities import Metric

        ms = int((walltime or time.time()) * 1000)
        batch = [Metric(name, value, ms, step) for name, value in metrics.items()]
        for i in range(0, len(batch), 1000):  # log_batch takes at most 1000 metrics
            self.client.log_batch(self.run_id, metrics=batch[i : i + 1000])

    def close(self) -> None:
        self.client.set_terminated(self.run_id)


_OPEN = {"tensorboard": _TensorBoard, "wandb": _WandB, "mlflow": _MLflow}
