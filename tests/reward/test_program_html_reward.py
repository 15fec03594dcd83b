"""program_html on real Chromium against local fixture pages: locators, prep_actions, func: helpers, sandboxes."""

from __future__ import annotations

import asyncio

from common.records import FinalState
from common.tasks import Task


def _task(targets: list[dict], eval_types=("program_html",), **extra) -> Task:
    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": 42,
            "start_url": "__SHOPPING__",
            "intent": "check the page",
            "eval": {"eval_types": list(eval_types), "program_html": targets, **extra},
        }
    )


def _t(url: str, locator: str, contents: dict, **kw) -> dict:
    return {"url": url, "locator": locator, "required_contents": contents, **kw}


def _score(actor, targets, final_url="", **kw):
    final = FinalState(url=final_url, **kw)
    return actor.score(_task(targets).with_urls(actor.env_urls), final)


def test_whole_page_content_is_unescaped(reward_actor, fixture_site):
    r = _score(reward_actor, [_t("__SHOPPING__/plain", "", {"must_include": ["Fish & Chips", "Canceled"]})])
    assert r.score == 1.0, r.checks
    assert all(c.type == "program_html.must_include" for c in r.checks)


def test_js_locators_exact_match_and_values(reward_actor, fixture_site):
    targets = [
        _t("__SHOPPING__/plain", 'document.querySelector("#status").outerText', {"exact_match": "canceled"}),
        _t("last", "document.querySelector('[name=\"product[price]\"]').value", {"exact_match": "27.00"}),
        _t("last", "document.querySelector('.count').outerText", {"required_values": ["> 1000"]}),
        _t("last", "document.querySelectorAll('p').length", {"exact_match": "1"}),
    ]
    r = _score(reward_actor, targets)
    assert r.score == 1.0, r.checks
    assert len(r.checks) == 4


def test_a_check_with_its_own_url_never_loads_the_final_page_and_last_loads_it_once(
    reward_actor, fixture_site, page_hits
):
    own = [_t("__SHOPPING__/plain", "", {"must_include": ["Canceled"]})]
    r = _score(reward_actor, own, final_url=f"{fixture_site}/form")
    assert r.score == 1.0, r.checks
    assert page_hits == ["/plain"]  # the episode's last page (/form) is not loaded first: one load per check
    page_hits.clear()
    r = _score(reward_actor, [_t("last", "", {"must_include": ["What"]})], final_url=f"{fixture_site}/form")
    assert r.score == 1.0, r.checks
    assert page_hits == ["/form"]


def test_spread_locator_result_is_read_as_python_text(reward_actor):
    # WebArena str()s the evaluated value: an array becomes a Python list repr, which must_include searches.
    loc = (
        "[...document.querySelector('.submission__inner').querySelectorAll('[href],[src]')]"
        ".map(e => e.getAttribute('href'))"
    )
    r = _score(reward_actor, [_t("__REDDIT__/f/books/123/", loc, {"must_include": ["['/img/abc.jpg']"]})])
    assert r.score == 1.0, r.checks


def test_url_last_checks_the_final_page_and_a_missing_element_scores_zero(reward_actor, fixture_site):
    ok = _score(
        reward_actor,
        [_t("last", 'document.querySelector("#status").outerText', {"exact_match": "Canceled"})],
        final_url=f"{fixture_site}/plain",
    )
    assert ok.score == 1.0
    bad = _score(
        reward_actor,
        [
            _t("last", 'document.querySelector("#nope").outerText', {"exact_match": "Canceled"}),
            _t("__SHOPPING__/plain", "", {"must_include": ["Canceled"]}),
        ],
        final_url=f"{fixture_site}/plain",
    )
    assert bad.score == 0.0
    assert [c.type for c in bad.checks] == [
        "program_html.locator"
    ]  # the throw ends the step, as in WebArena-Lite


def test_prep_actions_run_before_the_locator(reward_actor):
    loc = "document.querySelector('[title=\"What\\'s on your mind?\"]').value"
    targets = [
        _t(
            "__SHOPPING__/form",
            loc,
            {"must_include": ["refund"]},
            prep_actions=["document.querySelector('textarea').value = 'I want a refund'"],
        )
    ]
    assert _score(reward_actor, targets).score == 1.0
    failing_prep = [_t("__SHOPPING__/form", loc, {"exact_match": ""}, prep_actions=["nope.nope()", "x = 1"])]
    assert _score(reward_actor, failing_prep).score == 1.0  # a failing prep action is ignored


def test_must_exclude(reward_actor):
    targets = [_t("__SHOPPING__/plain", "document.body.outerText", {"must_exclude": ["Pending", "Complete"]})]
    assert _score(reward_actor, targets).score == 1.0
    targets = [_t("__SHOPPING__/plain", "document.body.outerText", {"must_exclude": ["Canceled"]})]
    assert _score(reward_actor, targets).score == 0.0


def test_func_url_from_last_url_and_gitlab_role_locator(reward_actor, fixture_site):
    post = [
        _t(
            "func:reddit_get_post_url('__last_url__')",
            "document.querySelector('.submission__inner').outerText",
            {"must_include": ["big little lies", "can't stop it"]},
        )
    ]
    r = _score(reward_actor, post, final_url=f"{fixture_site}/f/books/123/big-little-lies/comment/9")
    assert r.score == 1.0, r.checks
    roles = [
        _t(
            "__GITLAB__/members",
            "func:gitlab_get_project_memeber_role(__page__, 'vinta')",
            {"must_include": ["Guest"]},
        ),
        _t(
            "last",
            "func:gitlab_get_project_memeber_role(__page__, 'lahwaacz')",
            {"exact_match": "Maintainer"},
        ),
        _t("last", "func:gitlab_get_project_memeber_role(__page__, 'nobody')", {"exact_match": ""}),
    ]
    assert _score(reward_actor, roles).score == 1.0


def test_bundled_helpers_read_the_episode_sandbox(reward_actor, fixture_site):
    targets = [
        _t(
            "func:shopping_get_latest_order_url()",
            'document.querySelector(".order-details-items.ordered").outerText',
            {"must_include": ["B0738JQG6Q"]},
        )
    ]
    assert _score(reward_actor, targets, sandbox="sb-1").score == 1.0
    none = _score(reward_actor, targets, sandbox="sb-2")  # this sandbox placed no order
    assert none.score == 0.0 and "found nothing" in none.checks[-1].why


def test_storage_state_and_sandbox_cookie_reach_the_page(reward_actor, fixture_site):
    state = {
        "cookies": [
            {
                "name": "shopping_session",
                "value": "s3cr3t",
                "domain": "127.0.0.1",
                "path": "/",
                "expires": -1,
                "httpOnly": False,
                "secure": False,
                "sameSite": "Lax",
            }
        ],
        "origins": [],
    }
    targets = [
        _t("__SHOPPING__/cookies", 'document.querySelector("#sb").outerText', {"exact_match": "tok-9"}),
        _t("last", 'document.querySelector("#sess").outerText', {"exact_match": "s3cr3t"}),
    ]
    assert _score(reward_actor, targets, sandbox="tok-9", storage_state=state).score == 1.0
    assert _score(reward_actor, targets).score == 0.0  # the next episode (a wiped context) sees neither


def test_a_storage_state_with_local_storage_reaches_the_page_and_leaves_with_its_episode(
    reward_actor, fixture_site
):
    # cookies alone are added to an idle context; local storage needs a new one, wiped after its episode
    state = {
        "cookies": [],
        "origins": [{"origin": fixture_site, "localStorage": [{"name": "cart", "value": "3"}]}],
    }
    targets = [
        _t("__SHOPPING__/plain", "document.defaultView.localStorage.getItem('cart')", {"exact_match": "3"})
    ]
    assert _score(reward_actor, targets, storage_state=state).score == 1.0
    assert _score(reward_actor, targets).score == 0.0  # the next episode's context has none of it


def test_the_next_episode_takes_the_last_ones_context_wiped(reward_actor, fixture_site, page_hits):
    # each episode reads what the one before left (storage, cookie, IndexedDB), then leaves its own traces
    targets = [
        _t(
            "__SHOPPING__/traces",
            "document.defaultView.seen",
            {"exact_match": "-|-|-|-"},
        ),
        _t("__SHOPPING__/cached", 'document.querySelector("#c").outerText', {"exact_match": "cached"}),
    ]
    reused = reward_actor.stats["contexts_reused"]
    for _ in range(3):
        assert _score(reward_actor, targets).score == 1.0
    assert reward_actor.stats["contexts_reused"] - reused >= 2  # the second and third took a used context
    assert (
        page_hits.count("/cached") == 3
    )  # no episode reads the HTTP cache (the allow-list's route turns it off)


def test_a_context_closed_while_idle_is_not_reused(reward_actor, fixture_site):
    targets = [
        _t("__SHOPPING__/plain", 'document.querySelector("#status").outerText', {"exact_match": "Canceled"})
    ]
    assert _score(reward_actor, targets).score == 1.0

    async def close_idle() -> int:
        closed = 0
        for future in list(reward_actor._idle):
            got = await future
            if got is not None:
                await got[1].close()
                closed += 1
        return closed

    assert reward_actor._ensure_loop().run(close_idle()) >= 1
    opened = reward_actor.stats["contexts_opened"]
    assert _score(reward_actor, targets).score == 1.0  # a new one was opened for it
    assert reward_actor.stats["contexts_opened"] > opened


def test_unreachable_site_is_unscorable_not_zero(reward_actor):
    targets = [_t("http://127.0.0.1:9/nothing", "", {"must_include": ["x"]})]
    r = _score(reward_actor, targets)
    assert r.score is None and "could not load" in r.checks[0].why


def test_url_match_after_program_html_sees_the_page_it_left(reward_actor, fixture_site):
    task = _task(
        [_t("__SHOPPING__/plain", "", {"must_include": ["Canceled"]})],
        eval_types=("program_html", "url_match"),
        reference_url="__SHOPPING__/plain",
    ).with_urls(reward_actor.env_urls)
    r = reward_actor.score(task, FinalState(url=f"{fixture_site}/elsewhere"))
    assert r.score == 1.0, r.checks


def test_many_episodes_scored_concurrently_in_order(reward_actor, fixture_site):
    items = []
    for i in range(6):
        sb = "sb-1" if i % 2 == 0 else "sb-x"
        items.append(
            (
                _task(
                    [_t("func:shopping_get_latest_order_url()", "", {"must_include": ["B0738JQG6Q"]})]
                ).with_urls(reward_actor.env_urls),
                FinalState(url="", sandbox=sb),
            )
        )
    rewards = reward_actor.score_many(items)
    assert [r.score for r in rewards] == [1.0, 0.0] * 3


def test_ascore_from_a_foreign_event_loop(reward_actor):
    task = _task([_t("__SHOPPING__/plain", "", {"must_include": ["Canceled"]})]).with_urls(
        reward_actor.env_urls
    )

    async def main():
        return await asyncio.gather(*(reward_actor.ascore(task, FinalState()) for _ in range(3)))

    assert [r.score for r in asyncio.run(main())] == [1.0, 1.0, 1.0]


def test_navigation_waits_for_network_idle_when_asked(fixture_urls):
    from reward.actor import RewardActor

    with RewardActor(env_urls=fixture_urls, settle="networkidle") as actor:
        r = actor.score(
            _task(
                [
                    _t(
                        "__SHOPPING__/late",
                        "document.querySelector('#late').outerText",
                        {"exact_match": "arrived json"},
                    )
                ]
            ).with_urls(fixture_urls),
            FinalState(),
        )
    assert r.score == 1.0, r.checks
