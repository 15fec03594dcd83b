"""Helpers shared by the code host's seed, routes and queries: roles, times and tokens, dates, project paths."""

from __future__ import annotations

import random
import re
import string
from datetime import date, datetime, timedelta, timezone

TS_FORMAT = "%Y-%m-%d %H:%M:%S"
ROLES = {10: "Guest", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}
ROLE_LEVELS = {v: k for k, v in ROLES.items()}
SSH_HOST = "ssh://git@localhost:2222"
# The seeded history spans these dates.
START = datetime(2021, 1, 1)
END = datetime(2023, 5, 31)
TOKEN_CHARS = string.ascii_letters + string.digits + "_-"


def ts(rng: random.Random, lo: datetime = START, hi: datetime = END) -> str:
    span = max(int((hi - lo).total_seconds()), 1)
    return (lo + timedelta(seconds=rng.randrange(span))).strftime(TS_FORMAT)


def token(rng: random.Random, n: int = 20) -> str:
    return "".join(rng.choice(TOKEN_CHARS) for _ in range(n))


def now_ts() -> str:
    return datetime.now(timezone.utc).strftime(TS_FORMAT)


def short_date(value: str | None) -> str:
    """'Jan 3, 2030' (GitLab's sidebar and list format) from 'YYYY-MM-DD[ HH:MM:SS]'."""
    if not value:
        return ""
    d = date.fromisoformat(value[:10])
    return f"{d:%b} {d.day}, {d.year}"


def project_path_from_name(name: str) -> str:
    """GitLab's default path for a new project name: spaces and odd characters become '-', case kept."""
    path = re.sub(r"[^A-Za-z0-9_.-]+", "-", name.strip()).strip("-.")
    return path or "project"


def role_name(level: int | None) -> str:
    return ROLES.get(level or 0, "")
