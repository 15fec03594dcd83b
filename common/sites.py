"""Names the bundled sites and their clients must agree on: the sandbox cookie and the site-key <-> placeholder map.

The sites set and read the sandbox cookie, the browser actors and the reward checks send it; task files name sites
by WebArena's placeholders (`__SHOPPING_ADMIN__`), configs and servers by site keys (`shopping_admin`). Both ends
import these from here, so a renamed cookie or a new site cannot leave one side behind.
"""

from __future__ import annotations

SANDBOX_COOKIE = "wa_sandbox"
# The same token for HTTP clients that do not keep cookies (reward checks that fetch JSON).
SANDBOX_HEADER = "X-WA-Sandbox"

# Site key -> WebArena placeholder, in the order placeholders are substituted. Keys and names are WebArena's;
# `homepage` is WebArena's portal page, not a bundled site.
SITE_PLACEHOLDERS: dict[str, str] = {
    "shopping_admin": "__SHOPPING_ADMIN__",
    "shopping": "__SHOPPING__",
    "reddit": "__REDDIT__",
    "gitlab": "__GITLAB__",
    "map": "__MAP__",
    "wikipedia": "__WIKIPEDIA__",
    "homepage": "__HOMEPAGE__",
}


def site_key(name: str) -> str:
    """`__SHOPPING_ADMIN__` / `shopping_admin` / ` Shopping_Admin ` -> `shopping_admin`."""
    return name.strip().strip("_").lower()


def placeholder(name: str) -> str:
    """`shopping_admin` / `__SHOPPING_ADMIN__` -> `__SHOPPING_ADMIN__` (also for keys outside the map)."""
    return f"__{site_key(name).upper()}__"
