"""The allow-list of origins an episode (and the reward checks of its pages) may reach.

`AllowList` holds the origins (`scheme://host:port`): the task's sites plus its start URL. It yields
 - `check(url)` for the browser-initiated navigations (`goto`) and for after-the-fact checks, and
 - `block_regex()`: one regular expression matching every URL that is NOT allowed, handed to `context.route` so that
   only those requests are intercepted (allowed traffic never makes a round trip through Python).
Shared by the rollout browser (browser_actors) and the reward actor's browser (reward), hence in common.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Pages the browser itself shows; they are never blocked (blank tabs, Chromium's own error page for a dead host).
_INTERNAL = ("about:blank", "chrome-error://chromewebdata/")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_forms(url: str) -> set[str]:
    """`scheme://host:port` plus, for a default port, `scheme://host` (Chromium drops ':80' from http URLs)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = (parts.hostname or "").lower()
    if not host or parts.scheme not in _DEFAULT_PORTS:
        return set()
    if ":" in host:  # IPv6 literal: URLs carry it in brackets
        host = f"[{host}]"
    port = parts.port or _DEFAULT_PORTS[parts.scheme]
    forms = {f"{parts.scheme}://{host}:{port}"}
    if port == _DEFAULT_PORTS[parts.scheme]:
        forms.add(f"{parts.scheme}://{host}")
    return forms


class AllowList:
    """The origins (`scheme://host:port`) one episode may navigate to or load anything from."""

    def __init__(self, urls: list[str]):
        self.origins: set[str] = set()
        for u in urls:
            if u:
                self.origins |= _origin_forms(u)

    def check(self, url: str) -> str | None:
        """None when `url` may be loaded; otherwise the reason it may not."""
        if url in _INTERNAL or url.startswith("chrome-error://"):
            return None
        parts = urlsplit(url)
        if parts.scheme not in _DEFAULT_PORTS:
            return f"the '{parts.scheme or '?'}:' scheme is not allowed"
        if parts.username or parts.password:
            return "URLs with credentials are not allowed"
        origin = f"{parts.scheme}://{(parts.netloc or '').lower()}"
        if origin not in self.origins:
            allowed = ", ".join(sorted(self.origins)) or "none"
            return f"'{origin}' is not in the allow-list ({allowed})"
        return None

    def block_regex(self) -> re.Pattern[str]:
        """Matches every URL outside the allow-list (an allowed origin followed by a path is the only way out)."""
        if not self.origins:
            return re.compile(r"^")
        origins = "|".join(re.escape(o) for o in sorted(self.origins))
        return re.compile(rf"^(?!(?:{origins})(?:[/?#]|$))")
