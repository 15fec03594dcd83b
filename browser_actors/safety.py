"""The high-impact-action guard and goto targets; the allow-list itself is common.allowlist (shared with reward).

`Guard` refuses actions whose URL or element text matches a configured pattern (the paper's limitations section:
block deleting an account and the like) and says which pattern matched.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from common.allowlist import AllowList
from common.text import cut

__all__ = ["AllowList", "Guard", "resolve_url"]


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
                raise ValueError(f"browser.blocked_patterns: bad regex {p!r}: {e}") from e

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def check(self, *texts: str | None) -> str | None:
        """None when nothing matches; otherwise the refusal message."""
        for p in self.patterns:
            for t in texts:
                if t and p.search(t):
                    return f"refused by the safety guard: {cut(t, 80)!r} matches the blocked pattern {p.pattern!r}"
        return None
