"""How every part launches Chromium: one set of flags and one lookup of the executable.

Used by the browser actors and by the reward actor's own browser, so the page a check reads is rendered the way the
episode saw it.
"""

from __future__ import annotations

import os
import shutil

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # A hidden tab's timers are throttled to 1/s; the browser actor's settle wait relies on timers in the active tab.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
]


def chromium_executable() -> str | None:
    """$WEBAGENT_CHROMIUM, else the system Chromium, else None (Playwright's own download, if installed)."""
    explicit = os.environ.get("WEBAGENT_CHROMIUM")
    if explicit:
        return explicit
    for name in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.path.exists(name):
            return name
    return shutil.which("chromium")
