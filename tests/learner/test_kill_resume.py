"""A training run killed with SIGKILL at a random point of RL and submitted again ends as an uninterrupted run would:
the same task for every RL iteration, each iteration logged once, every saved trajectory tagged with its phase and
iteration. The runs are real `python -m learner.train` processes (own local Ray, bundled sites, vLLM engine,
DeepSpeed learner) on the tiny model; the kill takes the driver's whole process group, as a lost node would.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common.records import load_jsonl

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]
REPO = Path(__file__).resolve().parents[2]


def _overrides(model: str, out: Path) -> list[str]:
    """The smoke test's tiny run, as BC then four RL iterations with a checkpoint after each."""
    from test_train_smoke import tiny_overrides

    return [
        *tiny_overrides(model, str(out)),
        "model.dtype=float32",
        "phases=[bc, rl]",
        "scheduling.max_inflight_groups=1",
        "bc.max_demos=16",
        "bc.epochs=1",
        "bc.lr=1e-4",
        "rl.iterations=4",
        "rl.lr=1e-6",
        # the task sequence then depends only on the sampler's random state (a mixed curriculum also depends on
        # the sampled outcomes, which differ between any two runs)
        "rl.curriculum=uniform",
        "learner.checkpoint_every=1",
        "learner.keep_checkpoints=2",
        # the resubmitted run must continue the killed one's tracker runs
        "logging.trackers=[tensorboard,mlflow]",
    ]


def _start(model: str, out: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "learner.train", "--config", "configs/cpu_demo.yaml"]
    for o in _overrides(model, out):
        cmd += ["--set", o]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    log = open(out.parent / f"{out.name}.{time.time_ns()}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def _rl_records(out: Path) -> list[dict]:
    path = out / "log.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a torn last line while the run writes it
            continue
    return [r for r in rows if r.get("phase") == "rl"]


def _tasks_by_iteration(out: Path) -> dict[int, list]:
    got: dict[int, list] = {}
    for t in load_jsonl(str(out / "rollouts.jsonl")):
        assert t.meta["phase"] == "rl" and isinstance(t.meta["iteration"], int)
        got.setdefault(t.meta["iteration"], []).append(t.task_id)
    return {k: sorted(set(v)) for k, v in sorted(got.items())}


def _kill_group(proc: subprocess.Popen) -> None:
    # The driver leads its own process group, and its local Ray (raylet, GCS, workers, engines, browsers) joins it:
    # one killpg takes them all, as a lost machine would. `ray stop` is not used: it would also stop the Ray
    # cluster other tests of this session share.
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    time.sleep(2)


def test_sigkill_at_a_random_point_of_rl_then_resubmit_gives_the_uninterrupted_run(
    tiny_model_dir, tmp_path, monkeypatch
):
    whole = tmp_path / "whole"
    proc = _start(tiny_model_dir, whole)
    assert proc.wait(timeout=900) == 0
    want = _tasks_by_iteration(whole)
    assert sorted(want) == [0, 1, 2, 3]

    killed = tmp_path / "killed"
    rng = random.Random(os.getpid())
    kill_after = rng.randrange(0, 2)  # RL iterations logged before the kill (two or more are left to run)
    proc = _start(tiny_model_dir, killed)
    deadline = time.time() + 900
    while len(_rl_records(killed)) <= kill_after and proc.poll() is None and time.time() < deadline:
        time.sleep(0.5)
    # somewhere inside the next iteration: rollouts, update, push, checkpoint
    time.sleep(rng.uniform(0.0, 3.0))
    assert proc.poll() is None, "the run ended before it could be killed"
    _kill_group(proc)
    tracked = json.loads((killed / "trackers.json").read_text())["runs"]

    proc = _start(tiny_model_dir, killed)
    assert proc.wait(timeout=900) == 0
    assert _tasks_by_iteration(killed) == want
    iterations = [r["iteration"] for r in _rl_records(killed)]
    assert iterations == [0, 1, 2, 3]  # none repeated, none missing
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # as the driver does for its file store
    _assert_trackers_continued(killed, tracked)


def _assert_trackers_continued(out: Path, before: dict) -> None:
    """One MLflow run and one TensorBoard folder across the kill, with every RL iteration at its learner step; an
    iteration that had begun before the kill runs again and is logged again at the same step."""
    from mlflow.tracking import MlflowClient
    from tbparse import SummaryReader

    after = json.loads((out / "trackers.json").read_text())["runs"]
    assert before["mlflow"]["run_id"] and after["mlflow"] == before["mlflow"]
    client = MlflowClient(after["mlflow"]["uri"])
    assert len(client.search_runs([client.get_run(after["mlflow"]["run_id"]).info.experiment_id])) == 1
    history = client.get_metric_history(after["mlflow"]["run_id"], "rl/iteration")
    logged = {(r["learner"]["iteration"], r["iteration"]) for r in _rl_records(out)}
    assert {(m.step, int(m.value)) for m in history} == logged
    frame = SummaryReader(str(out / "tensorboard")).scalars
    rows = frame[frame["tag"] == "rl/iteration"]
    assert set(zip(rows["step"].astype(int), rows["value"].astype(int), strict=True)) == logged
    assert len(list((out / "tensorboard").glob("events.out.tfevents.*"))) == 2  # one per driver session
