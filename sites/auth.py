"""Passwords and Playwright storage states for the bundled sites.

Password hashes use werkzeug's `pbkdf2:sha256:<n>$salt$hex` format (checked with werkzeug's check_password_hash),
but the salt is passed in so that seeding stays deterministic (the same seed gives the same database bytes).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from werkzeug.security import check_password_hash

from sites.core import SiteSpec

# Practice sites: a modest work factor keeps seeding hundreds of users within a second.
_ITERATIONS = 2000


def hash_password(password: str, salt: str) -> str:
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), _ITERATIONS).hex()
    return f"pbkdf2:sha256:{_ITERATIONS}${salt}${digest}"


def check_password(pwhash: str, password: str) -> bool:
    return bool(pwhash) and check_password_hash(pwhash, password)


def login_cookie(spec: SiteSpec, base_url: str, timeout: float = 10.0) -> dict[str, str]:
    """Logs the site's default user in over HTTP and returns its session cookie {name: value}."""
    import httpx

    user, password = spec.default_user
    data = {spec.login.user_field: user, spec.login.password_field: password}
    resp = httpx.post(
        base_url.rstrip("/") + spec.login.path, data=data, follow_redirects=False, timeout=timeout
    )
    name = f"{spec.key}_session"
    if resp.status_code not in (301, 302, 303) or name not in resp.cookies:
        raise RuntimeError(
            f"{spec.key}: logging in {user!r} at {spec.login.path} failed "
            f"(HTTP {resp.status_code}, cookies {list(resp.cookies)})"
        )
    return {name: resp.cookies[name]}


def storage_state(cookies: dict[str, str], host: str) -> dict[str, Any]:
    """Playwright's storage-state JSON shape (what `browser.new_context(storage_state=...)` reads)."""
    return {
        "cookies": [
            {
                "name": k,
                "value": v,
                "domain": host,
                "path": "/",
                "expires": -1,
                "httpOnly": True,
                "secure": False,
                "sameSite": "Lax",
            }
            for k, v in cookies.items()
        ],
        "origins": [],
    }


def write_storage_state(spec: SiteSpec, base_url: str, host: str, path: Path) -> Path:
    state = storage_state(login_cookie(spec, base_url), host)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(path)
    return path
