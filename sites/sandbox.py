"""Per-rollout sandboxes: private copies of the seeded SQLite databases, selected by an unguessable token.

Layout under `data_dir`:
    seed/<group>-<version>.sqlite      the seeded database of one DB group (never written after seeding)
    sandboxes/<token>/<group>.sqlite   a sandbox's private copy, made lazily on first use of that group

A request without a token reads the seed through a read-only connection (`mode=ro` + `query_only`), so any write
there fails inside SQLite; the site layer turns that failure into a 403 page. Creating a sandbox only records the
token; each group's file is copied (milliseconds) the first time a request of that sandbox touches the group.
Idle sandboxes are dropped after `idle_timeout_s`, and the count is bounded (least recently used goes first), which
bounds the disk use to `max_sandboxes` x the seed size.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path

# secrets.token_urlsafe(16) gives 22 characters of this alphabet; anything else is rejected before it can reach
# the file system (no path traversal through a cookie).
TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


class UnknownSandbox(LookupError):
    """The request named a sandbox token that does not exist (never silently falls back to the default)."""


class ReadOnlyDefault(PermissionError):
    """A write was attempted on the shared, read-only default data."""


class SandboxStore:
    """Owns the seed databases of every DB group and all live sandboxes. Thread-safe."""

    def __init__(
        self, data_dir: Path, seeds: dict[str, Path], max_sandboxes: int = 64, idle_timeout_s: float = 1800.0
    ) -> None:
        self.data_dir = Path(data_dir)
        self.seeds = dict(seeds)  # DB group -> seeded file
        self.max_sandboxes = max_sandboxes
        self.idle_timeout_s = idle_timeout_s
        # One folder per store (pid + random) so that two servers sharing a data dir never touch each other's
        # sandboxes; folders left by dead processes are removed here.
        _remove_stale(self.data_dir / "sandboxes")
        self.root = self.data_dir / "sandboxes" / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._last_used: OrderedDict[str, float] = OrderedDict()  # token -> monotonic time, LRU order
        self._copy_locks: dict[str, threading.Lock] = {}

    # -- lifecycle -------------------------------------------------------------------------------------------
    def create(self) -> str:
        token = secrets.token_urlsafe(16)
        (self.root / token).mkdir(parents=True)
        with self._lock:
            self._last_used[token] = time.monotonic()
            self._copy_locks[token] = threading.Lock()
        self.cleanup()
        return token

    def drop(self, token: str) -> bool:
        """Deletes a sandbox and its files; False when it did not exist."""
        with self._lock:
            existed = self._last_used.pop(token, None) is not None
            self._copy_locks.pop(token, None)
        if existed:
            # Open connections of in-flight requests keep working on the unlinked files (POSIX semantics).
            shutil.rmtree(self.root / token, ignore_errors=True)
        return existed

    def cleanup(self, now: float | None = None) -> list[str]:
        """Drops sandboxes idle for longer than the time-out, then the least recently used above the bound."""
        now = time.monotonic() if now is None else now
        with self._lock:
            victims = [t for t, ts in self._last_used.items() if now - ts > self.idle_timeout_s]
            live = len(self._last_used) - len(victims)
            for t in self._last_used:
                if live <= self.max_sandboxes:
                    break
                if t not in victims:
                    victims.append(t)
                    live -= 1
        for t in victims:
            self.drop(t)
        return victims

    def close(self) -> None:
        for token in self.tokens():
            self.drop(token)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- queries ---------------------------------------------------------------------------------------------
    def tokens(self) -> list[str]:
        with self._lock:
            return list(self._last_used)

    def __len__(self) -> int:
        with self._lock:
            return len(self._last_used)

    def exists(self, token: str) -> bool:
        with self._lock:
            return token in self._last_used

    def touch(self, token: str) -> None:
        """Marks a sandbox as used now; raises UnknownSandbox for a token that is not live."""
        with self._lock:
            if token not in self._last_used:
                raise UnknownSandbox(token)
            self._last_used[token] = time.monotonic()
            self._last_used.move_to_end(token)

    def db_path(self, token: str | None, group: str) -> Path:
        """The file a request of `token` (None = read-only default) uses for `group`; copies it on first use."""
        seed = self.seeds[group]
        if token is None:
            return seed
        if not TOKEN_RE.match(token):
            raise UnknownSandbox(token)
        with self._lock:
            lock = self._copy_locks.get(token)
        if lock is None:
            raise UnknownSandbox(token)
        path = self.root / token / f"{group}.sqlite"
        with lock:
            if not path.exists():
                tmp = path.with_suffix(".tmp")
                shutil.copyfile(seed, tmp)
                os.replace(tmp, path)  # atomic: a concurrent reader never sees a half copy
        return path

    def connect(self, token: str | None, group: str) -> sqlite3.Connection:
        """A connection for one request. The default is opened read-only, so writes fail inside SQLite."""
        path = self.db_path(token, group)
        if token is None:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
            conn.execute("PRAGMA query_only = 1")
        else:
            conn = sqlite3.connect(path, timeout=10)
            conn.execute("PRAGMA foreign_keys = ON")
        conn.row_factory = sqlite3.Row
        return conn


def is_readonly_error(exc: BaseException) -> bool:
    return isinstance(exc, ReadOnlyDefault) or (
        isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc).replace("-", "")
    )


def _remove_stale(parent: Path) -> None:
    if not parent.is_dir():
        return
    for d in parent.iterdir():
        pid = d.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
