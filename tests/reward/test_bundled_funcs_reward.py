"""The bundled func: helpers against the real bundled sites (login from the storage state, data from the sandbox)."""

from __future__ import annotations

import json
import re

import pytest

from common.records import FinalState
from common.tasks import Task


@pytest.fixture(scope="module")
def sites():
    server_mod = pytest.importorskip("sites.server")
    srv = server_mod.SiteServer(base_port=0, sites=["shopping", "shopping_admin"])
    try:
        srv.start()
    except Exception as e:  # noqa: BLE001 - the sites are built in parallel; skip until they start
        pytest.skip(f"bundled sites did not start: {e}")
    yield srv
    srv.stop()


def _task(targets, urls):
    """A task as the driver hands it over: placeholders filled where it is loaded."""
    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": 5,
            "start_url": "__SHOPPING__",
            "intent": "x",
            "eval": {"eval_types": ["program_html"], "program_html": targets},
        }
    ).with_urls(urls)


def _cookie_header(state: dict, token: str) -> dict[str, str]:
    jar = {c["name"]: c["value"] for c in state["cookies"]}
    jar["wa_sandbox"] = token
    return {"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items())}


def test_latest_order_and_review_helpers_on_bundled_sites(sites):
    import httpx

    from reward.actor import RewardActor

    token = sites.new_sandbox()
    state = json.loads(sites.storage_state_path("shopping").read_text())
    headers = _cookie_header(state, token)
    # An independent client finds what the checks should see.
    api = httpx.get(f"{sites.urls['shopping']}/__api__/orders/latest", headers=headers).json()
    page = httpx.get(api["url"], headers=headers).text
    skus = re.findall(r"\b[A-Z0-9][A-Z0-9-]{5,}\b", page.split("order-details-items")[1])
    assert skus, "the order page lists SKUs"
    review = httpx.get(f"{sites.urls['shopping_admin']}/__api__/reviews/latest", params={"sku": skus[0]})
    author = review.json()["author"] if review.status_code == 200 else ""

    order = {
        "url": "func:shopping_get_latest_order_url()",
        "locator": 'document.querySelector(".order-details-items.ordered").outerText',
    }
    with RewardActor(env_urls=sites.urls, helpers="bundled") as actor:
        final = FinalState(storage_state=state, sandbox=token)
        good = actor.score(
            _task([{**order, "required_contents": {"must_include": [skus[0]]}}], sites.urls), final
        )
        assert good.score == 1.0, good.checks
        bad = actor.score(
            _task([{**order, "required_contents": {"must_include": ["NOT-A-SKU-123"]}}], sites.urls), final
        )
        assert bad.score == 0.0
        logged_out = actor.score(
            _task([{**order, "required_contents": {"must_include": [skus[0]]}}], sites.urls),
            FinalState(sandbox=token),
        )
        assert logged_out.score == 0.0  # no login: the helper finds no order
        rev = {
            "url": "__SHOPPING__/",
            "locator": f"func:shopping_get_sku_latest_review_author('{skus[0]}')",
            "required_contents": {"exact_match": author},
        }
        assert actor.score(_task([rev], sites.urls), final).score == 1.0
