"""Helpers shared by the forum's seed, routes and queries: slugs, hot ranking, timestamps."""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone

TS_FORMAT = "%Y-%m-%d %H:%M:%S"
# Listing orders (SQL over `submissions s`), shared by the pages and by queries.py so both agree.
SORTS = {
    "hot": "s.hot DESC, s.id DESC",
    "new": "s.created_at DESC, s.id DESC",
    "top": "(s.upvotes - s.downvotes) DESC, s.id DESC",
    "old": "s.created_at ASC, s.id ASC",
}
# Reference epoch for the hot ranking; only differences matter.
_EPOCH = datetime(2020, 1, 1, tzinfo=timezone.utc)


def slugify(title: str, max_len: int = 60) -> str:
    """Postmill-style slug: lower-case words joined by '-', cut at a word boundary."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    slug = ""
    for w in words:
        nxt = f"{slug}-{w}" if slug else w
        if len(nxt) > max_len:
            break
        slug = nxt
    return slug or "-"


def parse_ts(ts: str) -> datetime:
    return datetime.strptime(ts, TS_FORMAT).replace(tzinfo=timezone.utc)


def now_ts() -> str:
    return datetime.now(timezone.utc).strftime(TS_FORMAT)


def hot_score(upvotes: int, downvotes: int, created_at: str) -> float:
    """Reddit-like hot rank: log of the net score plus age (12.5 hours of recency is worth 10x the votes)."""
    score = upvotes - downvotes
    order = math.log10(max(abs(score), 1))
    sign = 1 if score > 0 else -1 if score < 0 else 0
    seconds = (parse_ts(created_at) - _EPOCH).total_seconds()
    return round(sign * order + seconds / 45000, 7)


def nice_date(ts: str) -> str:
    """'March 4, 2023 at 2:22 PM', the absolute form shown on pages (stable, unlike '2 years ago')."""
    d = parse_ts(ts)
    hour = d.hour % 12 or 12
    return f"{d:%B} {d.day}, {d.year} at {hour}:{d:%M} {'AM' if d.hour < 12 else 'PM'}"
