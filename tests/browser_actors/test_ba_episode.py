"""Pure helpers of an episode's start: placeholders, site URLs, storage-state paths, sandbox cookies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_task

from browser_actors import start_state as E
from common.tasks import load_tasks

# WebArena-Lite's 165 test configs, kept beside the repository (../shared/webarena/)
LITE = Path(__file__).resolve().parents[3] / "shared" / "webarena" / "test_webarena_lite.raw.json"


def test_site_urls_accept_placeholder_and_plain_keys():
    env = {"__SHOPPING_ADMIN__": "http://h:7780", "gitlab": "http://h:8023/"}
    task = make_task("__GITLAB__/a", sites=["gitlab", "shopping_admin", "map"])
    assert E.site_urls(task, env) == {"gitlab": "http://h:8023/", "shopping_admin": "http://h:7780"}
    filled = task.with_urls(env)
    assert filled.start_url == "http://h:8023/a"
    assert E.allowed_urls(filled, env) == ["http://h:8023/", "http://h:7780", "http://h:8023/a"]


def test_an_unfilled_task_is_a_clear_error():
    """Placeholders are filled where tasks are loaded; the actor checks and names what is left."""
    with pytest.raises(ValueError, match="still holds __GITLAB__.*where it is loaded"):
        E.check_filled(make_task("__GITLAB__/a", sites=["gitlab"]))
    E.check_filled(make_task("__GITLAB__/a", sites=["gitlab"]).with_urls({"gitlab": "http://h:8023"}))
    # a site outside WebArena's list (MiniWoB++'s pages, which browser actors serve themselves) is checked too
    with pytest.raises(ValueError, match="still holds __MINIWOB__.*local_sites"):
        E.check_filled(make_task("__MINIWOB__/miniwob/click-test.html", sites=["miniwob"]))


def test_storage_state_resolution(tmp_path):
    (tmp_path / "reddit_state.json").write_text(json.dumps({"cookies": [], "origins": []}))
    task = make_task("http://h/", storage_state="./.auth/reddit_state.json")
    assert E.storage_state_path(task, str(tmp_path)) == tmp_path / "reddit_state.json"
    absolute = make_task("http://h/", storage_state=str(tmp_path / "reddit_state.json"))
    assert E.storage_state_path(absolute, None) == tmp_path / "reddit_state.json"
    assert E.storage_state_path(make_task("http://h/"), str(tmp_path)) is None
    with pytest.raises(FileNotFoundError, match="no auth_dir given"):
        E.storage_state_path(task, None)


def test_sandbox_cookie_per_host_and_multi_tab_start():
    cookies = E.sandbox_cookies(
        "tok", ["http://127.0.0.1:7770", "http://127.0.0.1:9999/x", "http://b.example/"]
    )
    assert [(c["domain"], c["value"], c["path"]) for c in cookies] == [
        ("127.0.0.1", "tok", "/"),
        ("b.example", "tok", "/"),
    ]
    assert E.start_urls(make_task("http://a/1 |AND| http://a/2")) == ["http://a/1", "http://a/2"]


def test_every_webarena_lite_start_url_is_allowed_once_filled():
    env = {
        k: f"http://127.0.0.1:{7770 + i}"
        for i, k in enumerate(["shopping", "shopping_admin", "reddit", "gitlab", "map", "wikipedia"])
    }
    from browser_actors.safety import AllowList

    for task in load_tasks(LITE):
        filled = task.with_urls(env)
        allow = AllowList(E.allowed_urls(filled, env))
        for url in E.start_urls(filled):
            assert allow.check(url) is None, (task.task_id, url)
