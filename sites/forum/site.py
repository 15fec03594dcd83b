"""Constants and registration of the forum site (`reddit` in WebArena's placeholders; Postmill-like)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sites.core import DbGroup, LoginForm, SiteSpec

SITE = "reddit"
DB_GROUP = "forum"
DEFAULT_USER = "MarvelsGrandpa"
DEFAULT_PASSWORD = "test1234"
SEED = 20240517
PAGE_SIZE = 25
_HERE = Path(__file__).parent


def _seed(db_path: Path) -> None:
    from sites.forum.seed import seed

    seed(db_path)


def _create_app(store: Any) -> Any:
    from sites.forum.app import create_app

    return create_app(store)


DB = DbGroup(
    DB_GROUP,
    seed=_seed,
    sources=tuple(_HERE / f for f in ("schema.sql", "seed.py", "seed_text.py", "util.py", "site.py")),
)
SITES = [
    SiteSpec(
        key=SITE,
        port_offset=2,
        db=DB,
        create_app=_create_app,
        default_user=(DEFAULT_USER, DEFAULT_PASSWORD),
        login=LoginForm("/login_check", "_username", "_password"),
        title="Postmill",
    )
]
