"""Routing: every WebArena-Lite config becomes a valid plan; func: calls parse with ast; bad configs are errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.tasks import load_tasks
from reward.funcs import REGISTRY, FuncError, Special, parse_call, reddit_get_post_url
from reward.plan import HtmlStep, PlanError, StringStep, UrlStep, build_plan

LITE = Path(__file__).resolve().parents[3] / "shared" / "webarena" / "test_webarena_lite.raw.json"
URLS = {
    "shopping": "http://127.0.0.1:7770",
    "shopping_admin": "http://127.0.0.1:7780/admin",
    "reddit": "http://127.0.0.1:9999",
    "gitlab": "http://127.0.0.1:8023",
    "map": "http://127.0.0.1:3000",
    "wikipedia": "http://127.0.0.1:8888",
}


@pytest.fixture(scope="module")
def lite():
    if not LITE.exists():
        pytest.skip(f"{LITE} not present")
    return load_tasks(LITE), json.loads(LITE.read_text())


def test_all_165_configs_route_to_their_checks(lite):
    tasks, raw = lite
    assert len(tasks) == 165
    kinds = {"string_match": StringStep, "url_match": UrlStep, "program_html": HtmlStep}
    for task, cfg in zip(tasks, raw, strict=True):
        plan = build_plan(task.with_urls(URLS))
        assert [s.kind for s in plan.steps] == cfg["eval"]["eval_types"], task.task_id
        for step, kind in zip(plan.steps, cfg["eval"]["eval_types"], strict=True):
            assert isinstance(step, kinds[kind])
        html = [s for s in plan.steps if isinstance(s, HtmlStep)]
        if html:
            assert len(html[0].targets) == len(cfg["eval"]["program_html"])
            for target, spec in zip(html[0].targets, cfg["eval"]["program_html"], strict=True):
                loc = spec["locator"]
                expected = "page" if not loc.strip() else "func" if loc.startswith("func:") else "js"
                assert target.locator_kind == expected
                assert target.url_kind == (
                    "last" if spec["url"] == "last" else "func" if spec["url"].startswith("func:") else "url"
                )
                assert "__" not in target.url or target.url_kind == "func"  # placeholders filled
        assert plan.needs_page == bool(html)


def test_lite_func_calls_parse_to_registered_helpers(lite):
    _, raw = lite
    calls = [
        t[k]
        for c in raw
        for t in c["eval"]["program_html"]
        for k in ("url", "locator")
        if t[k].startswith("func:")
    ]
    assert len(calls) >= 10
    names = {parse_call(c).name for c in calls}
    assert names == {
        "shopping_get_latest_order_url",
        "reddit_get_post_url",
        "gitlab_get_project_memeber_role",
    }


def test_parse_call_reads_literals_and_special_names():
    c = parse_call("func:gitlab_get_project_memeber_role(__page__, 'vinta')")
    assert c.name == "gitlab_get_project_memeber_role" and c.args == (Special("__page__"), "vinta")
    assert c.uses_page
    assert parse_call("reddit_get_post_url('__last_url__')").args == ("__last_url__",)
    assert parse_call("func:shopping_get_latest_order_url()").args == ()


@pytest.mark.parametrize(
    "text,msg",
    [
        ("func:os.system('rm -rf /')", "expected helper_name"),
        ("func:__import__('os')", "unknown helper"),
        ("func:shopping_get_latest_order_urll()", "known helpers: gitlab_get_project_memeber_role"),
        ("func:reddit_get_post_url(open('/etc/passwd').read())", "only literal arguments"),
        ("func:reddit_get_post_url(x)", "only literal arguments"),
        ("func:reddit_get_post_url('a', 'b')", "takes 1 argument"),
        ("func:gitlab_get_project_memeber_role('a', 'b')", "expects page, str"),
        ("func:reddit_get_post_url(url='x')", "keyword"),
        ("func:reddit_get_post_url(", "not a call"),
    ],
)
def test_parse_call_rejects_anything_but_a_registered_call(text, msg):
    with pytest.raises(FuncError, match=msg.replace("(", r"\(")):
        parse_call(text)


def test_unknown_helper_error_lists_every_known_helper():
    with pytest.raises(FuncError) as e:
        parse_call("func:nope()")
    assert all(name in str(e.value) for name in REGISTRY)


@pytest.mark.parametrize(
    "url,post",
    [
        ("http://h:9999/f/nyc/123/is-car-necessary", "http://h:9999/f/nyc/123/"),
        ("http://h:9999/f/nyc/123/slug/comment/5", "http://h:9999/f/nyc/123/"),
        ("http://h:9999/f/nyc", "http://h:9999/f/nyc"),  # not a post: unchanged
        ("http://h:9999/f/nyc/", "http://h:9999/f/nyc//"),  # WebArena's split gives an empty post id here
        ("http://h:9999/user/x/y", "http://h:9999/user/x/y"),
    ],
)
def test_reddit_get_post_url(url, post):
    assert reddit_get_post_url(url) == post


def _cfg(eval_spec: dict) -> dict:
    return {
        "sites": ["shopping"],
        "task_id": 7,
        "start_url": "__SHOPPING__",
        "intent": "x",
        "eval": eval_spec,
    }


@pytest.mark.parametrize(
    "spec,msg",
    [
        ({"eval_types": ["magic_match"]}, "unsupported 'magic_match'"),
        ({"eval_types": ["url_match"], "reference_url": ""}, "reference_url"),
        ({"eval_types": ["url_match"], "reference_url": "http://x", "url_note": "FUZZY"}, "url_note"),
        ({"eval_types": ["string_match"], "reference_answers": {"regex": "x"}}, "unknown key 'regex'"),
        ({"eval_types": ["program_html"], "program_html": []}, "without targets"),
        (
            {
                "eval_types": ["program_html"],
                "program_html": [
                    {"url": "last", "locator": "window.alert(1)", "required_contents": {"exact_match": "x"}}
                ],
            },
            "unknown locator",
        ),
        (
            {
                "eval_types": ["program_html"],
                "program_html": [{"url": "last", "locator": "", "required_contents": {"contains": ["x"]}}],
            },
            "required_contents",
        ),
        (
            {
                "eval_types": ["program_html"],
                "program_html": [
                    {"url": "func:evil()", "locator": "", "required_contents": {"must_include": ["x"]}}
                ],
            },
            "unknown helper",
        ),
    ],
)
def test_bad_configs_are_errors_naming_task_and_field(spec, msg):
    from common.tasks import Task

    with pytest.raises(PlanError, match=msg) as e:
        build_plan(Task.model_validate(_cfg(spec)))
    assert "task 7" in str(e.value)


def test_no_eval_or_exec_in_reward_package():
    src = "".join(p.read_text() for p in (Path(__file__).resolve().parents[2] / "reward").glob("*.py"))
    assert "eval(" not in src.replace("literal_eval(", "").replace("page.evaluate(", "").replace(
        ".evaluate(", ""
    )
    assert "exec(" not in src


def test_a_task_whose_checks_hold_placeholders_is_a_recorded_error():
    """Tasks are filled where they are loaded; the reward actor does not fill them again, and says so."""
    from common.records import FinalState
    from common.tasks import Task
    from reward.actor import RewardActor

    unfilled = Task.model_validate(_cfg({"eval_types": ["url_match"], "reference_url": "__SHOPPING__/cart"}))
    with RewardActor(env_urls=URLS, live=False) as actor:
        reward = actor.score(unfilled, FinalState(url="http://127.0.0.1:7770/cart"))
        assert (
            reward.score is None and "__SHOPPING__" in reward.error and "where it is loaded" in reward.error
        )
        filled = actor.score(unfilled.with_urls(URLS), FinalState(url="http://127.0.0.1:7770/cart"))
        assert filled.score == 1.0, filled.checks
    assert actor.stats["errors"] == 1
