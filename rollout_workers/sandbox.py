"""Sandbox tokens for the bundled sites, asked for over HTTP so browser actors on any machine can use them."""

from __future__ import annotations

import httpx


class SandboxClient:
    def __init__(self, site_url: str, timeout: float = 10.0):
        self.site_url = site_url.rstrip("/")
        self._client = httpx.AsyncClient(timeout=timeout)

    async def new(self) -> str:
        r = await self._client.post(f"{self.site_url}/__sandbox__")
        r.raise_for_status()
        return r.json()["token"]

    async def drop(self, token: str) -> None:
        await self._client.delete(f"{self.site_url}/__sandbox__/{token}")
