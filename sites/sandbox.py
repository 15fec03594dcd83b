"""Per-rollout sandboxes: private copies of the seeded SQLite databases, selected by an unguessable token.

Layout under `data_dir`:
    seed/<group>-<version>.sqlite      the seeded database of one DB group (never written after seeding)
    sandboxes/<token>/<group>.sqlite   a sandbox's private copy, made lazily on first use of that group

A request without a token reads the seed through a read-only connection (`mode=ro` + `query_only`), so any write
there fails inside SQLite; the site layer turns that failure into a 403 page. Creating a sandbox only records the
token; each group's file is copied (milliseconds) the first time a request of that sandbox touches the group.
A sandbox is leased to its rollout until the driver drops it or it goes unused for `idle_timeout_s` (a driver that
died); a leased sandbox is never evicted to make room. At `max_sandboxes` live sandboxes, creating another is
refused (SandboxesFull, HTTP 503) instead, which bounds the disk use to `max_sandboxes` x the seed size.

Creating and dropping sandboxes needs the store's admin key (`X-WA-Sandbox-Key` over HTTP): the agent's browser can
reach every page of a site, so without it an agent could open sandboxes until other rollouts' were gone. The key
lives in `<data_dir>/.sandbox_key` (mode 0600), or comes from $WA_SANDBOX_KEY when the driver runs elsewhere.
"""

from __future__ import annotations

import hmac
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
KEY_FILE = ".sandbox_key"  # under the data dir: the admin key that creating and dropping sandboxes needs


class UnknownSandbox(LookupError):
    """The request named a sandbox token that does not exist (never silently falls back to the default)."""


class SandboxesFull(RuntimeError):
    """Every sandbox is leased: a new one would have to evict a live rollout's data, which is never done."""


class ReadOnlyDefault(PermissionError):
    """A write was attempted on the shared, read-only default data."""


class SandboxStore:
    """Owns the seed databases of every DB group and all live sandboxes. Thread-safe."""

    def __init__(
        self,
        data_dir: Path,
        seeds: dict[str, Path],
        max_sandboxes: int = 64,
        idle_timeout_s: float = 1800.0,
        admin_key: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.admin_key = admin_key or secrets.token_urlsafe(32)
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
        """A new leased sandbox; SandboxesFull when `max_sandboxes` are live and none has gone idle."""
        self.cleanup()
        token = secrets.token_urlsafe(16)
        with self._lock:
            if len(self._last_used) >= self.max_sandboxes:
                raise SandboxesFull(
                    f"all {self.max_sandboxes} sandboxes are in use (none idle for {self.idle_timeout_s:g} s); "
                    "drop finished ones or raise max_sandboxes"
                )
            self._last_used[token] = time.monotonic()
            self._copy_locks[token] = threading.Lock()
        (self.root / token).mkdir(parents=True)
        return token

    def authorized(self, key: str | None) -> bool:
        """Whether `key` is the admin key (constant-time compare)."""
        return bool(key) and hmac.compare_digest(str(key).encode(), self.admin_key.encode())

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
        """Drops sandboxes idle for longer than the time-out (their lease lapsed); live ones are never dropped."""
        now = time.monotonic() if now is None else now
        with self._lock:
            victims = [t for t, ts in self._last_used.items() if now - ts > self.idle_timeout_s]
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


def load_or_create_key(path: Path) -> str:
    """The admin key kept in `path` (made once, readable by its owner only); $WA_SANDBOX_KEY wins when set."""
    env = os.environ.get("WA_SANDBOX_KEY")
    if env:
        return env
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32))
        try:
            os.link(tmp, path)  # atomic, and never replaces a key another server already wrote
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()


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
