"""Every entry point refuses bad input with one `error:` line on stderr and exit status 2, before it starts anything
(issue 22): a missing config, a missing checkpoint or model, an unknown --set key, a malformed task file, a bad URL.

Each case runs the real command line in a subprocess with RAY_TMPDIR set to an empty folder; a Ray that started
would leave its session folder there, so the folder must still be empty afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MINIWOB = "configs/miniwob_cpu.yaml"
DEMO = "configs/cpu_demo.yaml"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """Bad inputs on disk, and a model folder that passes the checks (a config.json is all they read)."""
    d = tmp_path_factory.mktemp("inputs")
    (d / "model").mkdir()
    (d / "model" / "config.json").write_text("{}")
    (d / "syntax.json").write_text('[{"task_id": 1, "intent": "x",]')
    (d / "schema.json").write_text(json.dumps([{"task_id": 1, "intent": 3, "eval": "none"}]))
    (d / "run").mkdir()
    return {k: str(d / v) for k, v in {"dir": "", "model": "model", "run": "run"}.items()} | {
        "syntax": str(d / "syntax.json"),
        "schema": str(d / "schema.json"),
    }


def run_cli(args: list[str], ray_dir: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, RAY_TMPDIR=str(ray_dir), RAY_ADDRESS="", DISPLAY="", WAYLAND_DISPLAY="")
    t0 = time.monotonic()
    got = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return got, time.monotonic() - t0


# (entry point args with {model}/{syntax}/... filled from `inputs`, what the one line must say)
CASES = {
    # learner.train
    "train-missing-config": (
        ["-m", "learner.train", "--config", "nope.yaml"],
        "--config nope.yaml: no such file",
    ),
    "train-unknown-key": (
        ["-m", "learner.train", "--config", MINIWOB, "--set", "rl.lrr=1"],
        "unknown key 'rl.lrr' (did you mean 'rl.lr'?)",
    ),
    "train-missing-model": (
        ["-m", "learner.train", "--config", MINIWOB, "--set", "model.path=runs/nope-model"],
        "model.path runs/nope-model: no such folder",
    ),
    "train-task-syntax": (
        [
            "-m",
            "learner.train",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--set",
            "environment.train_tasks={syntax}",
        ],
        "environment.train_tasks: {syntax}: not valid JSON",
    ),
    "train-task-schema": (
        [
            "-m",
            "learner.train",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--set",
            "environment.test_tasks={schema}",
        ],
        "environment.test_tasks: {schema}: 1 invalid task(s): task 1: sites: Field required; task 1: start_url",
    ),
    "train-missing-resume": (
        [
            "-m",
            "learner.train",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--set",
            "learner.resume=runs/none/ckpt",
        ],
        "learner.resume runs/none/ckpt: no such folder",
    ),
    # rollout_workers.evaluate
    "eval-missing-config": (
        ["-m", "rollout_workers.evaluate", "--config", "nope.yaml"],
        "--config nope.yaml: no such file",
    ),
    "eval-missing-checkpoint": (
        [
            "-m",
            "rollout_workers.evaluate",
            "--config",
            MINIWOB,
            "--set",
            "model.path={model}",
            "--checkpoint",
            "runs/nope",
        ],
        "--checkpoint runs/nope: no such folder (expected a Hugging Face checkpoint folder with config.json",
    ),
    "eval-run-folder-as-checkpoint": (
        [
            "-m",
            "rollout_workers.evaluate",
            "--config",
            MINIWOB,
            "--set",
            "model.path={model}",
            "--checkpoint",
            "{run}",
        ],
        "--checkpoint {run}: no config.json in this folder",
    ),
    "eval-unknown-key": (
        ["-m", "rollout_workers.evaluate", "--config", MINIWOB, "--set", "scheduling.max_turn=3"],
        "unknown key 'scheduling.max_turn' (did you mean 'scheduling.max_turns'?)",
    ),
    "eval-old-rollout-key": (
        ["-m", "rollout_workers.evaluate", "--config", MINIWOB, "--set", "rollout.max_turns=3"],
        "the 'rollout' section was split into 'prompt', 'browser' and 'scheduling'; move its keys: "
        "rollout.max_turns -> scheduling.max_turns",
    ),
    "eval-task-syntax": (
        [
            "-m",
            "rollout_workers.evaluate",
            "--config",
            MINIWOB,
            "--set",
            "model.path={model}",
            "--set",
            "environment.test_tasks={syntax}",
        ],
        "environment.test_tasks: {syntax}: not valid JSON",
    ),
    "eval-task-schema": (
        [
            "-m",
            "rollout_workers.evaluate",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--split",
            "train",
            "--set",
            "environment.train_tasks={schema}",
        ],
        "environment.train_tasks: {schema}: 1 invalid task(s)",
    ),
    "eval-bad-turns": (
        ["-m", "rollout_workers.evaluate", "--config", MINIWOB, "--turns", "2,x"],
        "--turns 2,x: expected",
    ),
    # rollout_workers.play
    "play-missing-config": (
        ["-m", "rollout_workers.play", "--config", "nope.yaml", "--checkpoint", "{model}", "--task-id", "1"],
        "--config nope.yaml: no such file",
    ),
    "play-missing-checkpoint": (
        [
            "-m",
            "rollout_workers.play",
            "--set",
            "model.path={model}",
            "--checkpoint",
            "runs/nope",
            "--url",
            "http://127.0.0.1:7770/",
            "--task",
            "look",
        ],
        "--checkpoint runs/nope: no such folder",
    ),
    "play-unknown-key": (
        [
            "-m",
            "rollout_workers.play",
            "--set",
            "prompt.grammer=webrl",
            "--checkpoint",
            "{model}",
            "--task-id",
            "1",
        ],
        "unknown key 'prompt.grammer' (did you mean 'prompt.grammar'?)",
    ),
    "play-task-schema": (
        [
            "-m",
            "rollout_workers.play",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--set",
            "environment.train_tasks={schema}",
            "--checkpoint",
            "{model}",
            "--task-id",
            "1",
        ],
        "environment.train_tasks: {schema}: 1 invalid task(s)",
    ),
    "play-unknown-task": (
        [
            "-m",
            "rollout_workers.play",
            "--config",
            MINIWOB,
            "--set",
            "model.path={model}",
            "--checkpoint",
            "{model}",
            "--task-id",
            "no-such-task/3",
        ],
        "--task-id no-such-task/3: not in the MiniWoB++ task list",
    ),
    "play-unknown-task-bundled": (
        [
            "-m",
            "rollout_workers.play",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--checkpoint",
            "{model}",
            "--task-id",
            "999999",
        ],
        "--task-id 999999: no such task in the train or test split of this config (e.g. ",
    ),
    "play-url-off-the-allow-list": (
        [
            "-m",
            "rollout_workers.play",
            "--config",
            DEMO,
            "--set",
            "model.path={model}",
            "--checkpoint",
            "{model}",
            "--url",
            "https://example.com/",
            "--task",
            "look around",
        ],
        "--url https://example.com/: not on the allow-list of the configured sites (http://127.0.0.1:7770",
    ),
    "play-url-without-task": (
        ["-m", "rollout_workers.play", "--checkpoint", "{model}", "--url", "http://127.0.0.1:7770/"],
        "needs --task INSTRUCTION",
    ),
    "play-headed-without-display": (
        ["-m", "rollout_workers.play", "--checkpoint", "{model}", "--task-id", "1", "--headed"],
        "--headed needs a display",
    ),
    # rollout_workers.demos
    "demos-task-syntax": (
        [
            "-m",
            "rollout_workers.demos",
            "--config",
            MINIWOB,
            "--set",
            "model.path={model}",
            "--set",
            "environment.train_tasks={syntax}",
            "--out",
            "{dir}/demos.jsonl",
        ],
        "environment.train_tasks: {syntax}: not valid JSON",
    ),
    # learner.report
    "report-missing-run": (["-m", "learner.report", "runs/nope"], "RUN_DIR runs/nope: no such folder"),
    "report-folder-without-log": (
        ["-m", "learner.report", "{run}"],
        "RUN_DIR {run}: neither log.jsonl nor trajectories",
    ),
    # reward
    "reward-missing-batch": (
        ["-m", "reward", "score", "--batch", "nope.jsonl"],
        "--batch nope.jsonl: no such file",
    ),
    "reward-bad-url": (
        ["-m", "reward", "score", "--batch", "-", "--urls", "shopping=localhost:7770"],
        "--urls shopping=localhost:7770: not an http(s) URL",
    ),
    # sites
    "sites-unknown-site": (
        ["-m", "sites", "serve", "--sites", "shop"],
        "--sites shop: unknown site(s) shop; known:",
    ),
    "miniwob-unknown-task": (
        ["-m", "sites.miniwob", "tasks", "--split", "test", "--tasks", "click-buton"],
        "--tasks click-buton: not in the MiniWoB++ task list",
    ),
    # browser_actors
    "browser-bad-url": (
        ["-m", "browser_actors", "observe", "shop.local"],
        "URL shop.local: not an http(s) URL",
    ),
    "browser-missing-state": (
        ["-m", "browser_actors", "observe", "http://127.0.0.1:7770/", "--storage-state", "nope.json"],
        "--storage-state nope.json: no such file",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_exit_2_before_anything_starts(case, inputs, tmp_path):
    args, says = CASES[case]
    args = [a.format(**inputs) for a in args]
    ray_dir = tmp_path / "ray"
    ray_dir.mkdir()
    got, seconds = run_cli(args, ray_dir)
    assert got.returncode == 2, (got.returncode, got.stderr[-2000:])
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1, got.stderr[-2000:]
    assert lines[0].startswith("error: ") and says.format(**inputs) in lines[0], lines[0]
    assert "Traceback" not in got.stderr + got.stdout
    assert seconds < 30
    assert list(ray_dir.iterdir()) == []  # no Ray session was started


def test_a_run_folder_held_by_another_driver_is_one_line_and_exit_2(inputs, tmp_path):
    from learner.run_lock import RunLock

    ray_dir, folder = tmp_path / "ray", tmp_path / "busy-run"
    ray_dir.mkdir()
    with RunLock(folder):
        args = ["-m", "learner.train", "--config", DEMO, "--set", f"model.path={inputs['model']}"]
        got, _ = run_cli([*args, "--set", f"logging.output_dir={folder}"], ray_dir)
    assert got.returncode == 2, got.stderr[-2000:]
    [line] = got.stderr.strip().splitlines()
    assert line.startswith(f"error: {folder} is in use by another driver (")
    assert list(ray_dir.iterdir()) == []
