"""The experiment trackers (learner/trackers.py) behind the driver's own log: records built the way the driver's
phases build them go through `RunLog.record` (learner/run_log.py), and each tracker's data is read back with that tracker's own reader (tbparse for
TensorBoard's event files, MlflowClient for the MLflow file store, the run's transaction log for offline W&B) and
compared with log.jsonl. Then a resume (one run per tracker, steps continue) and injected faults (a package that
will not import, a server that refuses, a tracker that fails while logging)."""

from __future__ import annotations

import json
import logging
import math
import socket
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from common.config import ConfigError, load_config
from common.records import Trajectory, TrajectoryGroup
from learner import trackers as trk
from learner.algos import AdvantageStats
from learner.collect import Draws
from learner.run_log import RunLog
from learner.stats import BCSummary, StepStats
from learner.weight_sync import PushStats
from rollout_workers.metrics import summarize
from rollout_workers.paired import paired_difference
from rollout_workers.stack import ensure_dir


def _group(rewards: list[float | None], task_id: int = 1) -> TrajectoryGroup:
    trajs = [
        Trajectory(task_id=task_id, sample_idx=k, reward=r, termination="stop", meta={"template": k % 2})
        for k, r in enumerate(rewards)
    ]
    return TrajectoryGroup(task_id=task_id, trajectories=trajs)


def _eval(label: str, rewards: list[float | None]) -> dict:
    return {"phase": "eval", "label": label, **summarize([_group(rewards)]).to_json()}


def _bc(start: int) -> dict:
    """BC of 3 steps (2 epochs) after `start` learner steps, held-out checks before and after each epoch."""
    history = [
        StepStats(
            "bc", iteration=start + i + 1, loss=loss, grad_norm=1.5 - i, lr=1e-3, epoch=epoch, samples=4
        )
        for i, (loss, epoch) in enumerate([(2.0, 1), (1.25, 1), (0.5, 2)])
    ]
    held_out = [
        {"epoch": e, "nll": 3.0 - e, "token_accuracy": 0.2 + 0.3 * e, "turn_exact": 0.1 * e} for e in range(3)
    ]
    summary = BCSummary(
        steps=3,
        turns=8,
        loss_first=2.0,
        loss_last=0.5,
        iteration=start + 3,
        held_out=held_out,
        history=history,
    )
    expert = {"played": 6, "solved": 4, "by_template": {"0": {"played": 3, "solved": 3}}}
    return {"phase": "bc", "demos": 4, "held_out_demos": 2, "expert": expert, **summary.to_json()}


def _rl(it: int, learner_step: int, wins: int) -> dict:
    groups = [_group([1.0] * wins + [0.0] * (4 - wins)), _group([0.0, 0.0, 0.0, None], task_id=2)]
    roll = summarize(groups, seconds=12.5)
    roll.curriculum = {"0": 0.75, "1": 0.25}
    draws = Draws(it, {}, groups=groups, train=groups[:1], drawn=2, outcomes={"mixed": 1, "all_failed": 1})
    advantages = AdvantageStats(groups=2, zero_variance_groups=1, unscorable=1).as_dict()
    stats = StepStats(
        "rl",
        iteration=learner_step,
        loss=0.1 * (it + 1),
        tokens_per_s=300.0 + it,
        advantages=advantages,
        approx_kl=0.01 * (it + 1),
        entropy=1.5,
        clip_frac=0.125,
        grad_norms=[0.5, 0.25],
    )
    push = PushStats("file", 0.75 + it, 10_000, it + 2, 1, 0.25, (0.5,))
    return {
        "phase": "rl",
        "iteration": it,
        "rollout": roll.to_json(),
        "sampling": draws.to_json(),
        "resting_tasks": 0,
        "learner": stats.to_json(),
        "push": asdict(push),
    }


def _paired() -> dict:
    d = paired_difference([0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0], seed=0, resamples=200)
    return {"phase": "paired", "before": "before_bc", "after": "after_rl", "kind": "greedy", **d.to_json()}


def _records() -> list[dict]:
    return [
        _eval("before_bc", [0.0, 1.0, 0.0, 0.0]),
        _bc(start=0),
        _eval("after_bc", [1.0, 1.0, 0.0, 0.0]),
        _rl(0, learner_step=4, wins=1),
        _rl(1, learner_step=5, wins=3),
        _eval("after_rl", [1.0, 1.0, 1.0, 0.0]),
        _paired(),
    ]


def _expected(log: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Names the docs promise, each with its (step, value) points taken from log.jsonl by hand."""
    evals = {r["label"]: r for r in log if r["phase"] == "eval"}
    bc = next(r for r in log if r["phase"] == "bc")
    rl = [r for r in log if r["phase"] == "rl"]
    end_bc, end_rl = bc["iteration"], rl[-1]["learner"]["iteration"]
    out: dict[str, list[tuple[int, float]]] = {
        "eval/before_bc/success": [(0, evals["before_bc"]["success"])],
        "eval/before_bc/success_ci95/lo": [(0, evals["before_bc"]["success_ci95"][0])],
        "eval/before_bc/success_ci95/hi": [(0, evals["before_bc"]["success_ci95"][1])],
        "eval/after_bc/success": [(end_bc, evals["after_bc"]["success"])],
        "eval/after_rl/success": [(end_rl, evals["after_rl"]["success"])],
        "eval/after_rl/success_by_template/1/success": [
            (end_rl, evals["after_rl"]["success_by_template"]["1"]["success"])
        ],
        "bc/step/loss": [(h["iteration"], h["loss"]) for h in bc["history"]],
        # before the first step, after epoch 1 (2 steps), after epoch 2 (3 steps)
        "bc/held_out/token_accuracy": [
            (s, c["token_accuracy"]) for s, c in zip((0, 2, 3), bc["held_out"], strict=True)
        ],
        "bc/loss_last": [(end_bc, bc["loss_last"])],
        "bc/expert/solved": [(end_bc, bc["expert"]["solved"])],
        "paired/before_bc-after_rl/greedy/difference": [(end_rl, log[-1]["difference"])],
        "paired/before_bc-after_rl/greedy/ci95/hi": [(end_rl, log[-1]["ci95"][1])],
    }
    rl_names = {
        "rl/iteration": ("iteration",),
        "rl/rollout/success": ("rollout", "success"),
        "rl/sampling/kept": ("sampling", "kept"),
        "rl/sampling/drawn": ("sampling", "drawn"),
        "rl/learner/advantages/zero_variance_share": ("learner", "advantages", "zero_variance_share"),
        "rl/learner/approx_kl": ("learner", "approx_kl"),
        "rl/learner/entropy": ("learner", "entropy"),
        "rl/learner/clip_frac": ("learner", "clip_frac"),
        "rl/learner/tokens_per_s": ("learner", "tokens_per_s"),
        "rl/learner/grad_norms/1": ("learner", "grad_norms", 1),
        "rl/push/seconds": ("push", "seconds"),
        "rl/rollout/curriculum/0": ("rollout", "curriculum", "0"),
    }
    for name, path in rl_names.items():
        points = []
        for r in rl:
            value = r
            for key in path:
                value = value[key]
            points.append((r["learner"]["iteration"], float(value)))
        out[name] = points
    return out


def _cfg(tmp_path: Path, trackers: list[str], *extra: str):
    names = "[" + ",".join(trackers) + "]"
    return load_config(
        None,
        [f"logging.output_dir={tmp_path}", f"logging.trackers={names}", "logging.wandb_mode=offline", *extra],
    )


def _log_through_driver(cfg, records: list[dict]) -> tuple[RunLog, list[dict]]:
    """The driver's own path: RunLog.record appends to log.jsonl and hands the record on."""
    run = RunLog(ensure_dir(cfg.output_dir), cfg)
    run.trackers = trk.Trackers(run.out, cfg)
    for record in records:
        run.record(record)
    run.trackers.close()
    log = [json.loads(line) for line in (run.out / "log.jsonl").read_text().splitlines()]
    assert len(log) == len(records)
    return run, log


def _tensorboard(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tbparse import SummaryReader

    frame = SummaryReader(str(run_dir / trk.TENSORBOARD_DIR)).scalars
    out: dict[str, list[tuple[int, float]]] = {}
    for tag, step, value in zip(frame["tag"], frame["step"], frame["value"], strict=True):
        out.setdefault(tag, []).append((int(step), float(value)))
    return out


def _mlflow(run_dir: Path, name: str) -> list[tuple[int, float]]:
    from mlflow.tracking import MlflowClient

    state = json.loads((run_dir / trk.FILE).read_text())["runs"]["mlflow"]
    history = MlflowClient(state["uri"]).get_metric_history(state["run_id"], name)
    return sorted((m.step, m.value) for m in history)


def _wandb_records(run_file: Path):
    """The protobuf records of an offline W&B run's transaction log (run-<id>.wandb): LevelDB's log format after a
    7-byte header (':W&B', magic, version): 32 KiB blocks of chunks, each with a 7-byte header (crc32, little-endian
    length, type: 1 full, 2 first, 3 middle, 4 last). W&B ships no Python reader for it any more."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = run_file.read_bytes()
    assert data[:4] == b":W&B", run_file
    pos, pending = 7, b""
    while pos + 7 <= len(data):
        room = 32768 - pos % 32768
        if room < 7:  # a block's tail too short for a chunk header is padding
            pos += room
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if kind == 0:
            break
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def _wandb_rows(run_dir: Path) -> tuple[list[str], list[dict], dict]:
    """(the run id of each offline session, every history row in order, the first session's config)."""
    ids, rows, config = [], [], {}
    for run_file in sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb")):
        for record in _wandb_records(run_file):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                ids.append(record.run.run_id)
                config = config or {i.key: json.loads(i.value_json) for i in record.run.config.update}
            elif kind == "history":
                rows.append(
                    {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item}
                )
    return ids, rows, config


def _wandb_points(rows: list[dict], name: str) -> list[tuple[int, float]]:
    return [(row["global_step"], row[name]) for row in rows if name in row]


def _close(got: list[tuple[int, float]], want: list[tuple[int, float]], name: str) -> None:
    assert [s for s, _ in got] == [s for s, _ in want], (name, got, want)
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7), (name, got, want)  # TensorBoard keeps float32


def test_flatten_names_and_left_out_values():
    record = {
        "phase": "rl",
        "time": 1.0,
        "learner": {"iteration": 7, "loss": float("nan"), "no_signal": True, "grad_norms": [0.5, 0.25]},
        "rollout": {"success_ci95": [0.1, 0.9], "termination": {"stop": 3}, "curriculum": None},
        "push": {"method": "file", "engine_seconds": [1.0]},
        "odd key": {"a:b": 2, "": 3, "..": 4},
    }
    assert trk.series(record, last_step=3) == [
        (
            7,
            {
                "rl/learner/iteration": 7.0,
                "rl/learner/no_signal": 1.0,
                "rl/learner/grad_norms/0": 0.5,
                "rl/learner/grad_norms/1": 0.25,
                "rl/rollout/success_ci95/lo": 0.1,
                "rl/rollout/success_ci95/hi": 0.9,
                "rl/rollout/termination/stop": 3.0,
                "rl/push/engine_seconds/0": 1.0,
                "rl/odd key/a_b": 2.0,
                "rl/odd key/_": 4.0,
            },
        )
    ]
    # an evaluation has no step of its own: the last one logged
    assert trk.series({"phase": "eval", "label": "after_bc", "success": 0.5}, last_step=3) == [
        (3, {"eval/after_bc/success": 0.5})
    ]


def test_tracker_names_need_a_known_tracker_once():
    assert load_config(None, ["logging.trackers=[tensorboard,wandb,mlflow]"]).logging.trackers == [
        "tensorboard",
        "wandb",
        "mlflow",
    ]
    assert load_config(None, []).logging.trackers == ["tensorboard"]
    for bad in ("[tensorboard,tensorboard]", "[comet]"):
        with pytest.raises(ConfigError):
            load_config(None, [f"logging.trackers={bad}"])


def test_every_tracker_gets_what_log_jsonl_holds(tmp_path):
    cfg = _cfg(tmp_path, ["tensorboard", "wandb", "mlflow"], "rl.group_size=4")
    run, log = _log_through_driver(cfg, _records())
    expected = _expected(log)

    board = _tensorboard(run.out)
    ids, rows, config = _wandb_rows(run.out)
    for name, want in expected.items():
        _close(board.get(name, []), want, f"tensorboard {name}")
        _close(_mlflow(run.out, name), want, f"mlflow {name}")
        _close(_wandb_points(rows, name), want, f"wandb {name}")
    # nothing beyond the documented flattening, and all of it: every tracker has the same names
    names = {n for r in log for _, metrics in trk.series(r, 0) for n in metrics}
    assert set(board) == names
    assert {k for row in rows for k in row if not k.startswith("_")} == names | {"global_step"}
    assert len(ids) == 1

    # the config as hyper-parameters, under the names --set takes
    from mlflow.tracking import MlflowClient
    from tbparse import SummaryReader

    hp = SummaryReader(str(run.out / trk.TENSORBOARD_DIR)).hparams
    assert dict(zip(hp["tag"], hp["value"], strict=True))["rl.group_size"] == 4
    state = json.loads((run.out / trk.FILE).read_text())["runs"]
    params = MlflowClient(state["mlflow"]["uri"]).get_run(state["mlflow"]["run_id"]).data.params
    assert (
        params["rl.group_size"] == "4" and params["logging.trackers"] == '["tensorboard", "wandb", "mlflow"]'
    )
    assert config["rl.group_size"] == 4


def test_a_resumed_run_continues_each_trackers_run(tmp_path):
    cfg = _cfg(tmp_path, ["tensorboard", "wandb", "mlflow"])
    records = _records()
    run, _ = _log_through_driver(cfg, records[:4])  # killed after RL iteration 0
    first = json.loads((run.out / trk.FILE).read_text())
    assert first["step"] == 4

    again = trk.Trackers(run.out, cfg)  # the resumed driver
    for record in records[4:]:
        again.log(record)
    again.close()
    second = json.loads((run.out / trk.FILE).read_text())
    assert second["runs"]["wandb"]["id"] == first["runs"]["wandb"]["id"]
    assert second["runs"]["mlflow"]["run_id"] == first["runs"]["mlflow"]["run_id"]
    assert second["step"] == 5

    from mlflow.tracking import MlflowClient

    client = MlflowClient(second["runs"]["mlflow"]["uri"])
    experiment = client.get_experiment_by_name(cfg.logging.mlflow_experiment)
    assert len(client.search_runs([experiment.experiment_id])) == 1
    rl_steps = [(4, 0), (5, 1)]  # (learner step, RL iteration): the second from the resumed session
    assert [(s, int(v)) for s, v in _mlflow(run.out, "rl/iteration")] == rl_steps
    assert [s for s, _ in _mlflow(run.out, "eval/after_rl/success")] == [5]
    assert [(s, int(v)) for s, v in _tensorboard(run.out)["rl/iteration"]] == rl_steps
    assert len(list((run.out / trk.TENSORBOARD_DIR).glob("events.out.tfevents.*"))) == 2  # one log dir
    ids, rows, _ = _wandb_rows(run.out)
    assert (
        ids == [first["runs"]["wandb"]["id"]] * 2
    )  # two offline sessions of one run: `wandb sync` joins them
    assert [(s, int(v)) for s, v in _wandb_points(rows, "rl/iteration")] == rl_steps


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_missing_or_refusing_tracker_is_one_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(
        sys.modules, "wandb", None
    )  # `import wandb` raises ImportError, as when not installed
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    uri = f"http://127.0.0.1:{_refused_port()}"
    cfg = _cfg(tmp_path, ["wandb", "mlflow", "tensorboard"], f"logging.mlflow_uri={uri}")
    with caplog.at_level(logging.WARNING, logger="learner.trackers"):
        run, log = _log_through_driver(cfg, _records())
    warnings = [r.getMessage() for r in caplog.records if r.name == "learner.trackers"]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("tracker wandb is not installed")
    assert warnings[1].startswith("tracker mlflow did not start")
    board = _tensorboard(run.out)
    for name, want in _expected(log).items():
        _close(board.get(name, []), want, f"tensorboard {name}")


def test_a_tracker_that_fails_while_logging_is_dropped_with_one_warning(tmp_path, monkeypatch, caplog):
    cfg = _cfg(tmp_path, ["mlflow", "tensorboard"])
    calls = []

    def log_batch_then_fail(self, metrics, step, walltime):  # the store goes away after the first record
        calls.append(step)
        if len(calls) > 1:
            raise OSError("disk quota exceeded")
        original(self, metrics, step, walltime)

    original = trk._MLflow.log
    monkeypatch.setattr(trk._MLflow, "log", log_batch_then_fail)
    with caplog.at_level(logging.WARNING, logger="learner.trackers"):
        run, log = _log_through_driver(cfg, _records())
    warnings = [r.getMessage() for r in caplog.records if r.name == "learner.trackers"]
    assert warnings == [
        "tracker mlflow failed to log (OSError: disk quota exceeded): the run goes on without it"
    ], warnings
    assert len(calls) == 2  # dropped at its first failure, never called again
    assert _mlflow(run.out, "eval/before_bc/success") == [(0, log[0]["success"])]
    assert _mlflow(run.out, "bc/loss_last") == []
    board = _tensorboard(run.out)
    for name, want in _expected(log).items():
        _close(board.get(name, []), want, f"tensorboard {name}")


def test_a_torn_trackers_file_starts_new_runs_with_one_warning(tmp_path, caplog):
    cfg = _cfg(tmp_path, ["tensorboard"])
    (tmp_path / trk.FILE).write_text('{"step": 4, "runs": {"mlfl')  # the file cut off mid-write
    with caplog.at_level(logging.WARNING, logger="learner.trackers"):
        run, log = _log_through_driver(cfg, _records()[:2])
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [f"{tmp_path / trk.FILE} is not JSON"]
    assert json.loads((tmp_path / trk.FILE).read_text())["step"] == log[1]["iteration"]
    assert _tensorboard(run.out)["eval/before_bc/success"] == [(0, log[0]["success"])]


def test_wandb_is_offline_without_an_api_key(tmp_path, monkeypatch):
    for name in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc from `wandb login`
    assert not trk._wandb_key()
    cfg = _cfg(tmp_path / "run", ["wandb"], "logging.wandb_mode=auto")
    _log_through_driver(cfg, _records()[:1])
    assert json.loads((tmp_path / "run" / trk.FILE).read_text())["runs"]["wandb"]["mode"] == "offline"

    netrc = tmp_path / ".netrc"  # what `wandb login` writes
    netrc.write_text("machine api.wandb.ai\n  login user\n  password 0123456789abcdef\n")
    netrc.chmod(0o600)
    assert trk._wandb_key()
    netrc.unlink()
    monkeypatch.setenv("WANDB_API_KEY", "0123456789abcdef")
    assert trk._wandb_key()
