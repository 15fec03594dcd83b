"""learner.run_lock: a second driver on the same output folder is refused; a killed driver frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from learner.run_lock import RunFolderBusy, RunLock

ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys, time
from learner.run_lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(600)
"""


def _start_holder(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_driver_is_refused_while_the_first_lives_and_takes_over_after_sigkill(tmp_path):
    run = tmp_path / "run"
    first = _start_holder(run)
    try:
        with pytest.raises(RunFolderBusy, match=rf"pid {first.pid}"):
            RunLock(run).acquire()
        os.kill(first.pid, signal.SIGKILL)  # the driver dies without cleaning up
        first.wait(timeout=30)
        with RunLock(run) as second:
            assert second.held
            assert f'"pid": {os.getpid()}' in (run / ".run.lock").read_text()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_release_lets_the_next_driver_in_and_other_folders_are_independent(tmp_path):
    a, b = RunLock(tmp_path / "a").acquire(), RunLock(tmp_path / "b").acquire()
    with pytest.raises(RunFolderBusy):  # even in one process: a second open file is a second holder
        RunLock(tmp_path / "a").acquire()
    a.release()
    assert not a.held
    RunLock(tmp_path / "a").acquire().release()
    b.release()
