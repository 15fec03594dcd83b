"""What an episode starts from: its start URLs, the sites it may reach, its login state and its sandbox cookie."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from common.sites import SANDBOX_COOKIE, placeholder, site_key
from common.tasks import PLACEHOLDERS, Task

MULTI_URL_SEPARATOR = " |AND| "  # WebArena: several start URLs open in several tabs, the first one active


def check_filled(task: Task) -> None:
    """Placeholders are filled once, where tasks are loaded (`Task.with_urls`), or for the sites an actor serves
    itself, by the actor (`local_sites`); a start URL that still holds one (WebArena's or one of the task's own
    sites', e.g. __MINIWOB__) is refused with both ways named."""
    wanted = dict.fromkeys([*PLACEHOLDERS, *(placeholder(s) for s in task.sites)])
    left = [p for p in wanted if p in task.start_url]
    if left:
        raise ValueError(
            f"task {task.task_id}: start URL {task.start_url!r} still holds {', '.join(left)}; fill the task "
            "where it is loaded (Task.with_urls(environment urls)) or give the browser actor a server for that "
            "site (local_sites)"
        )


def start_urls(task: Task) -> list[str]:
    return [u.strip() for u in task.start_url.split(MULTI_URL_SEPARATOR) if u.strip()]


def site_urls(task: Task, env_urls: dict[str, str]) -> dict[str, str]:
    """Base URLs of the task's sites that the environment knows."""
    known = {site_key(k): v for k, v in env_urls.items()}
    return {s: known[site_key(s)] for s in task.sites if site_key(s) in known}


def allowed_urls(task: Task, env_urls: dict[str, str]) -> list[str]:
    return list(site_urls(task, env_urls).values()) + start_urls(task)


def storage_state_path(task: Task, auth_dir: str | None) -> Path | None:
    """The task's storage state file: `./.auth/x_state.json` resolves against `auth_dir` (WebArena's convention)."""
    if not task.storage_state:
        return None
    given = Path(task.storage_state)
    if auth_dir and not given.is_absolute():
        path = Path(auth_dir) / given.name
    else:
        path = given
    if not path.is_file():
        where = f" (auth dir: {auth_dir})" if auth_dir else " (no auth_dir given)"
        raise FileNotFoundError(
            f"task {task.task_id}: storage state {task.storage_state!r} -> {path} not found{where}"
        )
    return path


def sandbox_cookies(token: str, urls: list[str]) -> list[dict]:
    """One `wa_sandbox` cookie per host (cookies do not separate ports, so one serves every site on a host)."""
    hosts = sorted({urlsplit(u).hostname for u in urls if urlsplit(u).hostname})
    return [
        {
            "name": SANDBOX_COOKIE,
            "value": token,
            "domain": h,
            "path": "/",
            "httpOnly": True,
            "sameSite": "Lax",
        }
        for h in hosts
    ]
