"""Helpers shared by the code host's seed, routes and queries: roles, dates, project paths."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone

TS_FORMAT = "%Y-%m-%d %H:%M:%S"
ROLES = {10: "Guest", 20: "Reporter", 30: "Developer", 40: "Maintainer", 50: "Owner"}
ROLE_LEVELS = {v: k for k, v in ROLES.items()}
SSH_HOST = "ssh://git@localhost:2222"


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
