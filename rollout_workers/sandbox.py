"""Sandbox tokens for the bundled sites, asked for over HTTP so browser actors on any machine can use them.

Creating and dropping a sandbox needs the sites' admin key (sites/sandbox.py), which only the driver holds: given
here, or $WA_SANDBOX_KEY (a driver on another machine than the sites), or read from the sites' data folder
(`<data_dir>/.sandbox_key`, where a SiteServer on this machine keeps it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import httpx

KEY_HEADER = "X-WA-Sandbox-Key"


def driver_key(data_dir: str | Path | None = None) -> str:
    """The admin key: $WA_SANDBOX_KEY, else the key file of `data_dir` (default: the sites' default data dir)."""
    import os

    from sites.sandbox import KEY_FILE
    from sites.server import default_data_dir

    if os.environ.get("WA_SANDBOX_KEY"):
        return os.environ["WA_SANDBOX_KEY"]
    path = Path(data_dir or default_data_dir()) / KEY_FILE
    if not path.is_file():
        raise RuntimeError(
            f"no sandbox admin key: {path} does not exist; set WA_SANDBOX_KEY to the key of the sites' server "
            "(its data folder's .sandbox_key)"
        )
    return path.read_text().strip()


class Sandboxes(Protocol):
    """What a rollout needs of the sites' sandboxes: a fresh copy of the seeded data per episode, dropped once the
    group is scored (`SandboxClient` over HTTP; tests use the sites' own store)."""

    async def new(self) -> str: ...

    async def drop(self, token: str) -> None: ...


class SandboxClient:
    def __init__(self, site_url: str, timeout: float = 10.0, key: str | None = None):
        self.site_url = site_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=timeout, headers={KEY_HEADER: key or driver_key()})

    async def new(self) -> str:
        r = await self._client.post(f"{self.site_url}/__sandbox__")
        r.raise_for_status()
        return r.json()["token"]

    async def drop(self, token: str) -> None:
        await self._client.delete(f"{self.site_url}/__sandbox__/{token}")
