"""The code host's constants (`gitlab` in WebArena's placeholders): names, the default user, the seed, page size.

A leaf: the seed, the app and the views read these without importing the site's registration.
"""

from __future__ import annotations

SITE = "gitlab"
DB_GROUP = "gitlab"
DEFAULT_USER = "byteblaze"
DEFAULT_PASSWORD = "hello1234"
SEED = 20240519
PAGE_SIZE = 20
