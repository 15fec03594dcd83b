"""The learner's rendezvous port does not leak into processes started after it (issue 12, item 16).

The fault, injected for real: a process that already runs a single-process learner starts another process with its
environment (what a Ray worker started later inherits), and that one starts its own learner; before the fix the
second bound the MASTER_PORT the first had left in the environment and failed with "address already in use".
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
WORKER = Path(__file__).with_name("rendezvous_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def _run(role: str, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, str(WORKER), role], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_a_later_process_starts_its_own_learner_and_nothing_leaks():
    got = _run("parent", _env())
    assert got["sum"] == 1.0 and got["leaked"] == []
    child = got["child"]
    assert child["rc"] == 0, child["err"]
    assert json.loads(child["out"][0]) == {"role": "child", "sum": 1.0, "leaked": [], "child": None}


def test_a_stale_master_port_in_the_environment_is_not_used_by_a_single_process():
    with socket.socket() as busy:  # a port that is taken, as a leaked MASTER_PORT of a live learner is
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        env = _env() | {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(busy.getsockname()[1])}
        got = _run("child", env)
    assert got["sum"] == 1.0
