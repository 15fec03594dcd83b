"""A lock on a run's output folder, so that two drivers never write one run (checkpoints, logs, rollouts).

The lock is an `fcntl.flock` on `<output_dir>/.run.lock`, held through an open file for as long as the driver lives:
the kernel drops it when the process ends in any way (exit, crash, SIGKILL), so a killed run leaves no stale lock
and the resubmitted job simply takes it again. The file names the holder (host, pid, start time) for the error
message of the driver that is refused. flock is honoured across machines on NFSv4 and on local disks; on a file
system without working locks (some FUSE mounts) the second driver is not stopped.

    with RunLock(cfg.output_dir):      # raises RunFolderBusy naming the holder
        ... the whole run ...
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from common.cli import InputError

LOCK_FILE = ".run.lock"


class RunFolderBusy(InputError):
    """Another live process holds the run folder."""


class RunLock:
    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> RunLock:
        """Take the lock now or raise RunFolderBusy; never waits (a second driver is a mistake, not a queue)."""
        if self._fd is not None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunFolderBusy(
                f"{self.folder} is in use by another driver ({holder}); give this run its own output_dir "
                "or stop that one"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        me = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (the file stays: removing it would let a third process lock a different inode)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        return f"host {info['host']}, pid {info['pid']}, since {info['since']}"
    except (ValueError, KeyError, OSError):
        return "holder unknown"
