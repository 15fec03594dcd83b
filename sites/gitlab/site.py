"""Constants and registration of the code host site (`gitlab` in WebArena's placeholders; GitLab-like)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sites.core import DbGroup, LoginForm, SiteSpec

SITE = "gitlab"
DB_GROUP = "gitlab"
DEFAULT_USER = "byteblaze"
DEFAULT_PASSWORD = "hello1234"
SEED = 20240519
PAGE_SIZE = 20
_HERE = Path(__file__).parent


def _seed(db_path: Path) -> None:
    from sites.gitlab.seed import seed

    seed(db_path)


def _create_app(store: Any) -> Any:
    from sites.gitlab.app import create_app

    return create_app(store)


DB = DbGroup(
    DB_GROUP,
    seed=_seed,
    sources=tuple(
        _HERE / f for f in ("schema.sql", "seed.py", "seed_repo.py", "seed_text.py", "util.py", "site.py")
    ),
)
SITES = [
    SiteSpec(
        key=SITE,
        port_offset=3,
        db=DB,
        create_app=_create_app,
        default_user=(DEFAULT_USER, DEFAULT_PASSWORD),
        login=LoginForm("/users/sign_in", "user[login]", "user[password]"),
        title="GitLab",
    )
]
