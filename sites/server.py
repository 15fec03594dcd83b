"""Start and stop all bundled sites in this process (one werkzeug threaded server per site, in threads).

    with SiteServer(base_port=0, data_dir=tmp) as srv:   # base_port=0: free ports (tests)
        srv.urls["shopping"]          -> "http://127.0.0.1:<port>"
        token = srv.new_sandbox()     # a private copy of every site's data, for one rollout
        srv.sandbox_key               -> the admin key HTTP clients send to create / drop sandboxes
        srv.storage_state_path("shopping")  -> <data_dir>/.auth/shopping_state.json

Seeded databases are cached under `<data_dir>/seed/` keyed by a hash of their seed sources, so a start after the
first takes about a second. `python -m sites serve` wraps this class.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from common.sites import SANDBOX_COOKIE, SITE_PLACEHOLDERS
from sites.core import DbGroup, SiteSpec, load_sites
from sites.sandbox import KEY_FILE, SandboxStore, load_or_create_key

SEED_FORMAT = "1"  # bump to invalidate every cached seed (e.g. when core's seeding contract changes)


def default_data_dir() -> Path:
    from common.config import cache_dir

    return Path(os.environ.get("WA_SITES_DIR", cache_dir() / "sites"))


def seed_version(db: DbGroup) -> str:
    h = hashlib.sha256(f"{SEED_FORMAT}:{db.name}".encode())
    for src in db.sources:
        h.update(Path(src).read_bytes())
    return h.hexdigest()[:16]


def ensure_seed(db: DbGroup, data_dir: Path) -> Path:
    """The cached seeded file of a DB group, seeding it first when missing (safe across processes)."""
    seed_dir = Path(data_dir) / "seed"
    seed_dir.mkdir(parents=True, exist_ok=True)
    path = seed_dir / f"{db.name}-{seed_version(db)}.sqlite"
    if path.exists():
        return path
    with open(seed_dir / f".{db.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be seeding the same group right now
        if not path.exists():
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.unlink(missing_ok=True)
            db.seed(tmp)
            os.chmod(tmp, 0o444)  # the seed is never written after this
            os.replace(tmp, path)
    return path


def _quiet_handler() -> type:
    from werkzeug.serving import WSGIRequestHandler

    class QuietHandler(WSGIRequestHandler):
        # Per-request console lines would drown training logs; the /metrics endpoint records every request.
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    return QuietHandler


class SiteServer:
    def __init__(
        self,
        host: str = "127.0.0.1",
        base_port: int = 7770,
        data_dir: Path | str | None = None,
        sites: list[str] | tuple[str, ...] | None = None,
        max_sandboxes: int = 256,
        idle_timeout_s: float = 1800.0,
        write_auth: bool = True,
    ) -> None:
        self.host = host
        self.base_port = base_port
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.site_keys = sites
        self.max_sandboxes = max_sandboxes
        self.idle_timeout_s = idle_timeout_s
        self.write_auth = write_auth
        self.specs: list[SiteSpec] = []
        self.urls: dict[str, str] = {}
        self.store: SandboxStore | None = None
        self._servers: list[Any] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    # -- start / stop ----------------------------------------------------------------------------------------
    def start(self) -> dict[str, str]:
        from werkzeug.serving import make_server

        if self._servers:
            return self.urls
        self.specs = load_sites(self.site_keys)
        if not self.specs:
            raise RuntimeError("no site packages are available")
        seeds = {s.db.name: ensure_seed(s.db, self.data_dir) for s in self.specs}
        key = load_or_create_key(self.data_dir / KEY_FILE)
        self.store = SandboxStore(
            self.data_dir, seeds, self.max_sandboxes, self.idle_timeout_s, admin_key=key
        )
        try:
            for spec in self.specs:
                port = self.base_port + spec.port_offset if self.base_port else 0
                srv = make_server(
                    self.host,
                    port,
                    spec.create_app(self.store),
                    threaded=True,
                    request_handler=_quiet_handler(),
                )
                self._servers.append(srv)
                self.urls[spec.key] = f"http://{self.host}:{srv.server_port}"
                t = threading.Thread(target=srv.serve_forever, name=f"site-{spec.key}", daemon=True)
                t.start()
                self._threads.append(t)
            janitor = threading.Thread(target=self._janitor, name="sites-janitor", daemon=True)
            janitor.start()
            self._threads.append(janitor)
            if self.write_auth:
                self.write_storage_states()
        except BaseException:
            self.stop()
            raise
        return self.urls

    def stop(self) -> None:
        self._stop.set()
        for srv in self._servers:
            srv.shutdown()
            srv.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._servers.clear()
        self._threads.clear()
        if self.store is not None:
            self.store.close()

    def __enter__(self) -> SiteServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _janitor(self) -> None:
        # Idle clean-up also runs on every sandbox creation; this catches servers that stop creating them.
        interval = max(1.0, min(60.0, self.idle_timeout_s / 4))
        while not self._stop.wait(interval):
            if self.store is not None:
                self.store.cleanup()

    # -- sandboxes and auth ----------------------------------------------------------------------------------
    def new_sandbox(self) -> str:
        assert self.store is not None, "start() first"
        return self.store.create()

    @property
    def sandbox_key(self) -> str:
        """The admin key for `POST /__sandbox__` and `DELETE /__sandbox__/<token>` (header X-WA-Sandbox-Key)."""
        assert self.store is not None, "start() first"
        return self.store.admin_key

    def drop_sandbox(self, token: str) -> bool:
        assert self.store is not None, "start() first"
        return self.store.drop(token)

    def sandbox_cookie(self, token: str) -> dict[str, Any]:
        """The cookie to add to a Playwright context (`context.add_cookies([...])`) to use a sandbox."""
        return {
            "name": SANDBOX_COOKIE,
            "value": token,
            "domain": self.host,
            "path": "/",
            "httpOnly": True,
            "secure": False,
            "sameSite": "Lax",
        }

    @property
    def auth_dir(self) -> Path:
        return self.data_dir / ".auth"

    def storage_state_path(self, site: str) -> Path:
        return self.auth_dir / f"{site}_state.json"

    def write_storage_states(self) -> dict[str, Path]:
        from sites.auth import write_storage_state

        return {
            s.key: write_storage_state(s, self.urls[s.key], self.host, self.storage_state_path(s.key))
            for s in self.specs
        }

    @property
    def placeholders(self) -> dict[str, str]:
        """WebArena placeholders (`__SHOPPING__` ...) -> base URL, for `common.tasks.fill_placeholders`."""
        return {SITE_PLACEHOLDERS[k]: url for k, url in self.urls.items()}
