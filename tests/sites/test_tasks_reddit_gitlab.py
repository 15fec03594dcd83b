"""Task suites of the forum (reddit) and the code host (gitlab): configs validate and route to the reward checks,
splits are big enough with held-out templates, every eval type is used, reference answers match what the pages
serve, the scripted expert scores 1 under the real reward checks on a sample, and doing nothing scores 0 on every
state-changing and navigation template."""

from __future__ import annotations

import asyncio
import html
import json
import re
import subprocess
import sys
from collections import Counter

import httpx
import pytest

from common.tasks import Task
from sites import tasks as T

SITES = ["reddit", "gitlab"]
PLACEHOLDER = {"reddit": "__REDDIT__", "gitlab": "__GITLAB__"}


@pytest.fixture(scope="module")
def configs() -> dict[str, list[dict]]:
    return {s: T.split_configs(s, sites=SITES) for s in T.SPLITS}


@pytest.fixture(scope="module")
def server():
    """The two sites on free ports, over the cached seeds the task suites are computed from."""
    from sites.server import SiteServer

    with SiteServer(base_port=0, sites=SITES, max_sandboxes=32) as srv:
        yield srv


def test_sizes_kinds_and_held_out_templates(configs):
    assert len(configs["train"]) >= 300 and len(configs["test"]) >= 75
    for site in SITES:
        ts = T.templates([site])
        assert len(ts) >= 15, site
        held = {t.id for t in ts if t.held_out}
        assert len(held) >= 2, site
        train = {c["intent_template_id"] for c in configs["train"] if c["sites"] == [site]}
        test = {c["intent_template_id"] for c in configs["test"] if c["sites"] == [site]}
        assert not held & train and held <= test
        assert {t.id for t in ts} - held <= train & test  # held-out instantiations of the other templates
        kinds = Counter(t.kind for t, _, _ in T.suite(sites=[site]))
        assert 0.3 <= kinds["info"] / sum(kinds.values()) <= 0.6, (site, kinds)
        assert kinds["state"] and kinds["nav"]


def test_configs_validate_and_route_to_the_checks(configs):
    from reward.plan import build_plan

    urls = {"reddit": "http://127.0.0.1:9", "gitlab": "http://127.0.0.1:10"}
    for c in configs["train"] + configs["test"]:
        site = c["sites"][0]
        assert c["start_url"].startswith(PLACEHOLDER[site])
        assert c["require_login"] is True and c["storage_state"] == f"./.auth/{site}_state.json"
        assert "{{" not in c["intent"]
        task = Task.model_validate(c)
        # raises on a check the reward cannot run (bad func:, empty reference)
        build_plan(task.with_urls(urls))
    ids = [c["task_id"] for c in configs["train"] + configs["test"]]
    assert len(set(ids)) == len(ids)


def test_every_eval_type_is_used(configs):
    evs = [c["eval"] for c in configs["train"] + configs["test"]]
    answers = Counter(k for e in evs if e.get("reference_answers") for k in e["reference_answers"])
    assert (
        answers["exact_match"] and answers["must_include"] and 0 < answers["fuzzy_match"] <= 0.05 * len(evs)
    )
    types = Counter(tuple(e["eval_types"]) for e in evs)
    assert types[("url_match",)] and types[("program_html",)] and types[("string_match",)]
    targets = [t for e in evs for t in e["program_html"]]
    assert any(t["url"] == "func:reddit_get_post_url('__last_url__')" for t in targets)
    assert any(t["locator"].startswith("func:gitlab_get_project_memeber_role(__page__, ") for t in targets)
    assert any(t["locator"].startswith("[...document.querySelectorAll") for t in targets)
    assert any(t.get("prep_actions") for t in targets)
    assert any("must_exclude" in t["required_contents"] for t in targets)
    assert any(t["url"] == "last" for t in targets)
    for needle in (
        ".submission__title",
        "div.submission__vote form",
        ".user-bio__biography",
        "#sidebar > section",
        ".block.assignee",
        ".cover-status",
    ):
        assert any(needle in t["locator"] for t in targets), needle


def test_cli_writes_a_file_that_validates(tmp_path):
    out = tmp_path / "test.json"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "sites",
            "tasks",
            "--split",
            "test",
            "--sites",
            ",".join(SITES),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    v = subprocess.run(
        [sys.executable, "-m", "common.tasks", "validate", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert v.returncode == 0 and f"{len(json.loads(out.read_text()))} tasks OK" in v.stdout, v.stderr


# -- reference answers against the pages --------------------------------------------------------------------------
def _client(srv, site: str) -> httpx.Client:
    state = json.loads(srv.storage_state_path(site).read_text())
    return httpx.Client(
        base_url=srv.urls[site], cookies={c["name"]: c["value"] for c in state["cookies"]}, timeout=30
    )


def _text(c: httpx.Client, path: str, **params) -> str:
    r = c.get(path, params=params)
    assert r.status_code == 200, (path, r.status_code)
    return html.unescape(re.sub(r"\s+", " ", r.text))


def _first(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    assert m, pattern
    return m.group(1).strip()


def _labels(n: int) -> str:
    return f"{n} comment{'' if n == 1 else 's'}"


PAGES = {  # template id -> (instance, reference, client) -> None; asserts the page shows the reference
    301: lambda i, ref, c: _labels(int(ref["exact_match"])) in _text(c, "/search", q=i.values["title"]),
    302: lambda i, ref, c: (
        _first(r'class="submission__comments-link"[^>]*>([^<]*)<', _text(c, f"/user/{i.values['user']}"))
        == _labels(int(ref["exact_match"]))
    ),
    303: lambda i, ref, c: (
        max(
            (int(n), f)
            for f, n in re.findall(
                r'class="forum-list__link">([^<]+)</a></td><td>[^<]*</td><td>\d+</td><td>(\d+)</td>',
                _text(c, "/forums"),
            )
            if f in i.values.values()
        )[1]
        == ref["must_include"][0]
    ),
    304: lambda i, ref, c: re.search(
        rf">{i.values['forum']}</a></td><td>[^<]*</td><td>{ref['exact_match']}</td>", _text(c, "/forums")
    ),
    305: lambda i, ref, c: (
        _first(r'class="submission__submitter" href="/user/([^"]+)"', _text(c, f"/f/{i.values['forum']}/new"))
        == ref["exact_match"]
    ),
    306: lambda i, ref, c: (
        _first(r'class="submission__link"[^>]*>([^<]*)<', _text(c, f"/f/{i.values['forum']}/top"))
        == ref["must_include"][0]
    ),
    307: lambda i, ref, c: (
        _first(r'class="submission__forum" href="/f/([^"]+)"', _text(c, f"/user/{i.values['user']}"))
        == ref["exact_match"]
    ),
    401: lambda i, ref, c: (
        _first(r'class="contributor-name">([^<]+)<', _text(c, f"/{i.values['project']}/-/graphs/main"))
        == ref["exact_match"]
    ),
    402: lambda i, ref, c: (
        f'Open <span class="badge">{ref["exact_match"]}</span>'
        in _text(c, f"/{i.values['project']}/-/issues", **{"label_name[]": i.values["label"]})
    ),
    403: lambda i, ref, c: re.search(
        rf'>{re.escape(i.values["author"])}</td><td>[^<]*</td><td class="commits-count">'
        rf"{ref['exact_match']}<",
        _text(c, f"/{i.values['project']}/-/graphs/main"),
    ),
    404: lambda i, ref, c: (
        _first(r'class="star-count"[^>]*>(\d+)<', _text(c, f"/{i.values['project']}")) == ref["exact_match"]
    ),
    405: lambda i, ref, c: all(
        n
        in _first(
            r'(data-testid="assignee-block".*?)</div> </div>',
            _text(c, f"/{i.values['project']}/-/issues/{i.values['iid']}"),
        )
        for n in ref["must_include"]
    ),
    406: lambda i, ref, c: re.search(
        rf'@{i.values["user"]}</span></div></td> <td data-label="Source">Direct member'
        rf'</td> <td data-label="Max role" class="col-max-role"><span class="member-role">'
        rf"{ref['exact_match']}<",
        _text(c, f"/{i.values['project']}/-/project_members"),
    ),
    407: lambda i, ref, c: (
        ref["must_include"][0]
        in _first(
            r'data-testid="sidebar-due-date">(.*?)</span>',
            _text(c, f"/{i.values['project']}/-/issues/{i.values['iid']}"),
        )
    ),
    408: lambda i, ref, c: (
        f'Merged <span class="badge">{ref["exact_match"]}</span>'
        in _text(c, f"/{i.values['project']}/-/merge_requests")
    ),
}


def test_reference_answers_agree_with_the_pages(server):
    clients = {s: _client(server, s) for s in SITES}
    checked = Counter()
    for t, inst, _ in T.suite(sites=SITES):
        if t.id in PAGES and checked[t.id] < 3:
            ref = t.build(inst)["eval"]["reference_answers"]
            assert PAGES[t.id](inst, ref, clients[t.site]), (t.id, inst.values, ref)
            checked[t.id] += 1
    assert set(checked) == set(PAGES)


def test_navigation_references_are_real_pages(server):
    """Every url_match reference (placeholders filled) is a page the site serves, so a right episode can end there."""
    clients = {s: _client(server, s) for s in SITES}
    for t, inst, _ in T.suite(sites=SITES):
        if t.kind == "nav":
            url = t.build(inst)["eval"]["reference_url"].replace(PLACEHOLDER[t.site], "")
            assert clients[t.site].get(url).status_code == 200, (t.id, url)


# -- the expert and the do-nothing baseline under the real reward checks -------------------------------------------
def _sample(per_kind: int) -> list[Task]:
    """A few tasks per (site, kind), from different templates, fuzzy-judged ones left out (they need a judge)."""
    picked: dict[tuple[str, str], list[Task]] = {}
    seen: set[int] = set()
    for t, inst, _ in T.suite(sites=SITES):
        cfg = t.build(inst)
        if "fuzzy_match" in (cfg["eval"].get("reference_answers") or {}) or t.id in seen:
            continue
        group = picked.setdefault((t.site, t.kind), [])
        if len(group) < per_kind:
            group.append(Task.model_validate(cfg))
            seen.add(t.id)
    return [task for group in picked.values() for task in group]


@pytest.mark.slow
def test_expert_scores_one_on_a_sample(server, local_rollout):
    from rollout_workers.policy import ExpertPolicy

    tasks = [t.with_urls(server.urls) for t in _sample(per_kind=2)]
    worker = local_rollout(server, overrides=["prompt.obs_max_tokens=6000", "model.max_context=8192"])
    policy = ExpertPolicy(worker.builder, "webarena", False)

    async def play():
        return [g async for g in worker.run_groups(tasks, 1, evaluation=True, policy=policy, max_turns=30)]

    trajs = [g.trajectories[0] for g in asyncio.run(play())]
    failed = [
        (t.task_id, t.reward, t.meta.get("gave_up") or t.failure, [c.why for c in t.checks if c.score != 1.0])
        for t in trajs
        if t.reward != 1.0
    ]
    assert len(trajs) == len(tasks) >= 10 and not failed, failed


@pytest.mark.slow
def test_doing_nothing_scores_zero_on_state_and_navigation_tasks(server):
    from browser_actors import BrowserActor
    from reward import RewardActor

    tasks, seen = [], set()
    for t, inst, _ in T.suite(sites=SITES):
        if t.kind != "info" and t.id not in seen:
            seen.add(t.id)
            tasks.append(Task.model_validate(t.build(inst)).with_urls(server.urls))
    browser = BrowserActor(None, auth_dir=str(server.auth_dir), env_urls=server.urls)
    rewarder = RewardActor(env_urls=server.urls, helpers="bundled")
    try:
        scores = {}
        for task in tasks:
            token = server.new_sandbox()
            browser.reset(task, token)
            final = browser.final_state().model_copy(update={"answer": ""})
            scores[task.task_id] = rewarder.score(task, final).score
            server.drop_sandbox(token)
    finally:
        browser.close()
        rewarder.close()
    assert len(scores) >= 20 and all(s == 0.0 for s in scores.values()), scores
