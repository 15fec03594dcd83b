"""The browser actor on the bundled sites: logged in through the storage state, inside a sandbox, writing."""

from __future__ import annotations

import importlib.util
import re

import pytest
from conftest import fast_cfg

from common import records as R
from common.tasks import Task

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sites.server") is None, reason="sites not built yet"
)


def _task(start: str, site: str) -> Task:
    return Task(
        sites=[site],
        task_id=f"ba-{site}",
        start_url=start,
        require_login=True,
        storage_state=f"./.auth/{site}_state.json",
        intent="test",
        eval={"eval_types": []},
    )


def test_shop_search_and_cart_in_own_sandbox(site_server):
    from browser_actors.actor import BrowserActor

    token = site_server.new_sandbox()
    a = BrowserActor(fast_cfg(), auth_dir=str(site_server.auth_dir), env_urls=site_server.urls)
    try:
        obs = a.reset(_task("__SHOPPING__/", "shopping").with_urls(site_server.urls), sandbox=token)
        assert "Welcome, Emma Lopez" in obs.text and obs.url.startswith(site_server.urls["shopping"])
        search = re.search(r'<input id="(\d+)" name="q"', obs.text).group(1)
        obs = a.step(R.Type(element_id=search, text="camera"))
        assert "/catalogsearch/result/" in obs.url and "q=camera" in obs.url and obs.last_action_error is None
        add = re.search(r'<button id="(\d+)"[^>]*> Add to Cart', obs.text).group(1)
        obs = a.step(R.Click(element_id=add))
        assert obs.last_action_error is None and obs.infra_error is None
        obs = a.step(R.Goto(url=site_server.urls["shopping"] + "/checkout/cart/"))
        assert re.search(r"[Cc]amera", obs.text)
        fs = a.final_state()
        assert fs.sandbox == token
        assert {"name": "wa_sandbox", "value": token} in [
            {"name": c["name"], "value": c["value"]} for c in fs.storage_state["cookies"]
        ]
        # a second episode without a sandbox sees the read-only default: the cart write stayed in the sandbox
        obs = a.reset(_task("__SHOPPING__/checkout/cart/", "shopping").with_urls(site_server.urls))
        assert not re.search(r"[Cc]amera", obs.text)
        # other sites are off the allow-list of a shopping task
        obs = a.step(R.Goto(url=site_server.urls["reddit"] + "/forums"))
        assert "blocked" in obs.last_action_error
    finally:
        a.close()


def test_admin_axtree_ids_act(site_server):
    from browser_actors.actor import BrowserActor

    a = BrowserActor(
        fast_cfg(observation="axtree"),
        auth_dir=str(site_server.auth_dir),
        env_urls=site_server.urls,
    )
    try:
        obs = a.reset(
            _task("__SHOPPING_ADMIN__/admin/", "shopping_admin").with_urls(site_server.urls),
            sandbox=site_server.new_sandbox(),
        )
        assert obs.mode == "axtree" and "RootWebArea" in obs.text
        link = re.search(r"\[(\d+)\] link 'Sales' url: \S+/admin/sales/order/", obs.text)
        assert link, obs.text[:3000]
        obs = a.step(R.Click(element_id=link.group(1)))
        assert "/admin/sales/order" in obs.url and obs.last_action_error is None
    finally:
        a.close()
