"""Navigation confinement and the high-impact-action guard.

`AllowList` holds the origins (`scheme://host:port`) an episode may reach (the task's sites plus its start URL). It yields
 - `check(url)` for the browser-initiated navigations (`goto`) and for after-the-fact checks (redirects, which
   Playwright routes do not intercept), and
 - `block_regex()`: one regular expression matching every URL that is NOT allowed, handed to `context.route` so that
   only those requests are intercepted (allowed traffic never makes a round trip through Python).
`Guard` refuses actions whose URL or element text matches a configured pattern (the paper's limitations section:
block deleting an account and the like) and says which pattern matched.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from common.text import cut

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


def resolve_url(url: str, base: str) -> str:
    """A goto target: absolute as given, relative ones against the current page (the model often drops the host)."""
    url = url.strip()
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url):
        return url
    if base.startswith(("http://", "https://")):
        return urljoin(base, url)
    return url


class Guard:
    """Refuses actions whose target URL or element text matches one of `patterns` (case-insensitive regexes)."""

    def __init__(self, patterns: list[str]):
        self.patterns: list[re.Pattern[str]] = []
        for p in patterns:
            try:
                self.patterns.append(re.compile(p, re.IGNORECASE))
            except re.error as e:
                raise ValueError(f"rollout.blocked_patterns: bad regex {p!r}: {e}") from e

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def check(self, *texts: str | None) -> str | None:
        """None when nothing matches; otherwise the refusal message."""
        for p in self.patterns:
            for t in texts:
                if t and p.search(t):
                    return f"refused by the safety guard: {cut(t, 80)!r} matches the blocked pattern {p.pattern!r}"
        return None
