"""`python -m rollout_workers.play`: one episode of a checkpoint, run to its end, printed turn by turn and written
to the viewer page. The base SmolLM2 folder stands in for a checkpoint; the episode need not succeed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def play(*args: str, out: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RAY_ADDRESS="")
    return subprocess.run(
        [sys.executable, "-m", "rollout_workers.play", *args, "--out", str(out)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=900,
    )


def check_episode(got: subprocess.CompletedProcess, out: Path, task_id: str, turns: int) -> dict:
    """The command ended well, printed every turn (page, reply, action) and wrote the episode and its page."""
    assert got.returncode == 0, got.stderr[-3000:]
    [line] = (out / "episode.jsonl").read_text().splitlines()
    traj = json.loads(line)
    assert traj["task_id"] == task_id and not traj["failure"]
    assert 1 <= len(traj["turns"]) <= turns and traj["termination"] in ("stop", "max_turns", "bad_replies")
    for n in range(1, len(traj["turns"]) + 1):
        assert f"--- turn {n}: " in got.stdout
    assert got.stdout.count("    page: ") == got.stdout.count("    model: ") == len(traj["turns"])
    assert got.stdout.count("    action: ") + got.stdout.count("    no action: ") == len(traj["turns"])
    assert f"[play] {traj['termination']} after {len(traj['turns'])} turn(s)" in got.stdout
    page = (out / "viewer.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)[1])
    [shown] = data["episodes"]  # the viewer's copy of the episode: every turn, in order
    assert shown["task"] == str(task_id) and shown["sample"] == 0
    assert [t["index"] for t in shown["turns"]] == [t["index"] for t in traj["turns"]]
    return traj


def test_play_a_miniwob_task_by_id(default_model_dir, tmp_path):
    got = play(
        "--checkpoint",
        default_model_dir,
        "--config",
        "configs/miniwob_cpu.yaml",
        "--task-id",
        "click-button/100003",
        "--set",
        "scheduling.max_turns=2",
        out=tmp_path,
    )
    traj = check_episode(got, tmp_path, "miniwob.click-button.100003", turns=2)
    assert traj["reward"] in (0.0, 1.0)  # scored by the page's own reward
    assert "/miniwob/click-button.html" in got.stdout


def test_play_a_bundled_site_from_a_url(default_model_dir, site_server, tmp_path):
    shop = site_server.urls["shopping"]
    got = play(
        "--checkpoint",
        default_model_dir,
        "--config",
        "configs/cpu_demo.yaml",
        "--set",
        f"environment.urls={{shopping: {shop}}}",
        "--set",
        "scheduling.max_turns=2",
        "--url",
        f"{shop}/",
        "--task",
        "What is the price of the cheapest laptop?",
        out=tmp_path,
    )
    traj = check_episode(got, tmp_path, "play", turns=2)
    assert traj["reward"] is None  # a free instruction has no checks
    assert f"--- turn 1: {shop}/" in got.stdout
