"""Registration of the forum site (`reddit` in WebArena's placeholders; Postmill-like): its database and its app."""

from __future__ import annotations

from pathlib import Path

from sites.core import DbGroup, LoginForm, SiteSpec
from sites.forum.app import create_app
from sites.forum.constants import DB_GROUP, DEFAULT_PASSWORD, DEFAULT_USER, SITE
from sites.forum.seed import seed

_HERE = Path(__file__).parent

DB = DbGroup(
    DB_GROUP,
    seed=seed,
    sources=tuple(_HERE / f for f in ("schema.sql", "seed.py", "seed_text.py", "util.py", "constants.py")),
)
SITES = [
    SiteSpec(
        key=SITE,
        port_offset=2,
        db=DB,
        create_app=create_app,
        default_user=(DEFAULT_USER, DEFAULT_PASSWORD),
        login=LoginForm("/login_check", "_username", "_password"),
        title="Postmill",
    )
]
