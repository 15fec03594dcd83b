"""Registration of the code host site (`gitlab` in WebArena's placeholders; GitLab-like): its database and its app."""

from __future__ import annotations

from pathlib import Path

from sites.core import DbGroup, LoginForm, SiteSpec
from sites.gitlab.app import create_app
from sites.gitlab.constants import DB_GROUP, DEFAULT_PASSWORD, DEFAULT_USER, SITE
from sites.gitlab.seed import seed

_HERE = Path(__file__).parent

DB = DbGroup(
    DB_GROUP,
    seed=seed,
    sources=tuple(
        _HERE / f
        for f in ("schema.sql", "seed.py", "seed_repo.py", "seed_text.py", "util.py", "constants.py")
    ),
)
SITES = [
    SiteSpec(
        key=SITE,
        port_offset=3,
        db=DB,
        create_app=create_app,
        default_user=(DEFAULT_USER, DEFAULT_PASSWORD),
        login=LoginForm("/users/sign_in", "user[login]", "user[password]"),
        title="GitLab",
    )
]
