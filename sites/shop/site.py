"""Registration of the shop's two sites (storefront and admin) on one database group, "shop"."""

from __future__ import annotations

from pathlib import Path

from sites.core import DbGroup, LoginForm, SiteSpec
from sites.shop import admin, storefront
from sites.shop.seed import ADMIN_USER, DEFAULT_CUSTOMER, SCHEMA_PATH, seed

_HERE = Path(__file__).parent
DB = DbGroup("shop", seed=seed, sources=(SCHEMA_PATH, _HERE / "seed.py", _HERE / "catalog_data.py"))


SITES = [
    SiteSpec(
        key="shopping",
        port_offset=0,
        db=DB,
        create_app=storefront.create_app,
        default_user=DEFAULT_CUSTOMER,
        login=LoginForm("/customer/account/loginPost/", "login[username]", "login[password]"),
        title="One Stop Market",
    ),
    SiteSpec(
        key="shopping_admin",
        port_offset=1,
        db=DB,
        create_app=admin.create_app,
        default_user=ADMIN_USER,
        login=LoginForm("/admin/", "login[username]", "login[password]"),
        title="Magento Admin",
    ),
]
