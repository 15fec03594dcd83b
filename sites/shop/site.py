"""Registration of the shop's two sites (storefront and admin) on one database group, "shop"."""

from __future__ import annotations

from pathlib import Path

from flask import Flask

from sites.core import DbGroup, LoginForm, SiteSpec
from sites.sandbox import SandboxStore
from sites.shop.seed import ADMIN_USER, DEFAULT_CUSTOMER, SCHEMA_PATH, seed

_HERE = Path(__file__).parent
DB = DbGroup("shop", seed=seed, sources=(SCHEMA_PATH, _HERE / "seed.py", _HERE / "catalog_data.py"))


def _storefront(store: SandboxStore) -> Flask:
    from sites.shop.storefront import create_app

    return create_app(store)


def _admin(store: SandboxStore) -> Flask:
    from sites.shop.admin import create_app

    return create_app(store)


SITES = [
    SiteSpec(
        key="shopping",
        port_offset=0,
        db=DB,
        create_app=_storefront,
        default_user=DEFAULT_CUSTOMER,
        login=LoginForm("/customer/account/loginPost/", "login[username]", "login[password]"),
        title="One Stop Market",
    ),
    SiteSpec(
        key="shopping_admin",
        port_offset=1,
        db=DB,
        create_app=_admin,
        default_user=ADMIN_USER,
        login=LoginForm("/admin/", "login[username]", "login[password]"),
        title="Magento Admin",
    ),
]
