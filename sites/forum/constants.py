"""The forum's constants (`reddit` in WebArena's placeholders): names, the default user, the seed, page size.

A leaf: the seed, the app and the views read these without importing the site's registration.
"""

from __future__ import annotations

SITE = "reddit"
DB_GROUP = "forum"
DEFAULT_USER = "MarvelsGrandpa"
DEFAULT_PASSWORD = "test1234"
SEED = 20240517
PAGE_SIZE = 25
