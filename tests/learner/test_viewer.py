"""The run's viewer.html in real Chromium: a run folder of ~500 realistic episodes (run_factory.py) written by
`python -m learner.report RUN_DIR`, opened from disk.

Every episode is listed and the page opens within a generous bound; the task, outcome, file and intent filters show
exactly the matching rows; an opened episode shows each turn's observation (long ones folded, never cut), reply and
action, and the reward's checks with their reasons; markup in an observation is shown as text and never runs; the
page requests nothing but itself.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from run_factory import INJECTION, TASKS, build_run

from learner import report
from rollout_workers.viewer import write_viewer

OPEN_BOUND_S = 10.0  # a functional guard (a page that hangs or renders row by row), not a benchmark


def outcome(t) -> str:
    """The outcome as the metrics count it (rollout_workers/metrics.py), for the filter's expected counts."""
    if t.failure:
        return "infra_error"
    return "unscorable" if t.reward is None else "success" if t.reward >= 1 else "fail"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    files = build_run(run_dir)
    assert report.main([str(run_dir)]) == 0
    episodes = [
        (name, t)
        for name in ("eval_before_bc.jsonl", "rollouts.jsonl", "eval_after_rl.jsonl")
        for t in files[name]
    ]
    return run_dir, episodes


@pytest.fixture
def page(browser, run):
    """The viewer, opened; `page.requests` lists every URL it asked for."""
    page = browser.new_page()
    page.requests = []
    page.on("request", lambda r: page.requests.append(r.url))
    page.set_default_timeout(15_000)
    t0 = time.monotonic()
    page.goto((run[0] / "viewer.html").as_uri(), wait_until="load")
    page.open_seconds = time.monotonic() - t0
    yield page
    page.close()


def visible_rows(page) -> int:
    return page.locator("#episodes tbody tr:visible").count()


def test_every_episode_is_listed_and_the_page_opens_quickly(page, run):
    _, episodes = run
    assert len(episodes) == 496
    assert page.open_seconds < OPEN_BOUND_S, page.open_seconds
    assert page.locator("#episodes tbody tr").count() == len(episodes)
    assert page.text_content("#shown") == f"{len(episodes)} of {len(episodes)} episodes"
    listed = page.eval_on_selector_all(
        "#episodes tbody tr",
        "rows => rows.map(r => [r.cells[0].textContent, r.cells[2].textContent, "
        "r.cells[3].textContent, r.cells[4].textContent])",
    )
    assert listed == [[name, str(t.task_id), str(t.sample_idx), outcome(t)] for name, t in episodes]
    # nothing but the page itself was requested (no scripts, styles or fonts from elsewhere)
    assert page.requests == [(run[0] / "viewer.html").as_uri()]


def test_filters_show_exactly_the_matching_rows(page, run):
    _, episodes = run

    def count(task=None, result=None, file=None):
        return sum(
            1
            for name, t in episodes
            if (task is None or str(t.task_id) == task)
            and (result is None or outcome(t) == result)
            and (file is None or name == file)
        )

    task = str(TASKS[4][0])  # a MiniWoB++ (string) id
    page.select_option("#f-task", task)
    assert visible_rows(page) == count(task=task) < len(episodes)
    page.select_option("#f-outcome", "fail")
    assert visible_rows(page) == count(task=task, result="fail") < count(task=task)
    assert page.text_content("#shown") == f"{count(task=task, result='fail')} of {len(episodes)} episodes"
    page.select_option("#f-task", "")
    for result in ("success", "fail", "unscorable", "infra_error"):
        page.select_option("#f-outcome", result)
        assert visible_rows(page) == count(result=result) > 0, result
    page.select_option("#f-outcome", "")
    page.select_option("#f-file", "rollouts.jsonl")
    assert visible_rows(page) == count(file="rollouts.jsonl") == 256
    page.select_option("#f-file", "")
    page.fill("#f-text", "espresso cup")
    assert visible_rows(page) == count(task=str(TASKS[1][0]))
    page.fill("#f-text", "")
    assert visible_rows(page) == len(episodes)
    # each option says how many episodes it selects
    label = page.eval_on_selector("#f-task", f"s => [...s.options].find(o => o.value === '{task}').text")
    assert label == f"{task} ({count(task=task)})"


def _detail(page) -> dict:
    return page.eval_on_selector(
        "#episode",
        """box => ({
            checks: [...box.querySelectorAll('table.checks tbody tr')].map(r => [...r.cells].map(c => c.textContent)),
            turns: [...box.querySelectorAll('.turn')].map(t => ({
                observation: t.querySelector('details.observation pre').textContent,
                open: t.querySelector('details.observation').open,
                reply: t.querySelector('pre.reply').textContent,
                action: t.querySelector('.action') ? t.querySelector('.action').textContent : null,
                error: t.querySelector('p.err') ? t.querySelector('p.err').textContent : null,
                parse: t.querySelector('span.err') ? t.querySelector('span.err').textContent : null,
            })),
            text: box.textContent,
        })""",
    )


def _pick(episodes, want):
    return next(i for i, (_, t) in enumerate(episodes) if want(t))


def test_an_opened_episode_shows_every_turn_and_the_checks(page, run):
    _, episodes = run
    # a multi-turn failure with a long observation, a failed action and a reply that did not parse
    i = _pick(
        episodes,
        lambda t: (
            outcome(t) == "fail"
            and len(t.turns) >= 3
            and any(turn.parse_error for turn in t.turns)
            and any(turn.observation.last_action_error for turn in t.turns)
            and any(len(turn.observation.text) > 2000 for turn in t.turns)
            and any(len(turn.observation.text) <= 2000 for turn in t.turns)
        ),
    )
    t = episodes[i][1]
    page.click(f"#episodes tbody tr[data-index='{i}']")
    shown = _detail(page)
    assert f"task {t.task_id} #{t.sample_idx} · fail · reward 0" in shown["text"]
    assert shown["checks"] == [[c.type, f"{c.score:g}", c.why] for c in t.checks]
    assert len(shown["turns"]) == len(t.turns)
    for turn, seen in zip(t.turns, shown["turns"], strict=True):
        obs = turn.observation
        assert seen["observation"] == obs.text  # whole, folded or not
        assert seen["open"] == (len(obs.text) <= 2000)  # long ones start folded
        assert seen["reply"] == turn.completion_text
        if turn.action is not None:
            assert json.loads(seen["action"]) == turn.action.model_dump()
        else:
            assert seen["parse"] == f"parse error: {turn.parse_error}"
        assert seen["error"] == (
            f"last action error: {obs.last_action_error}" if obs.last_action_error else None
        )

    # an infra-failed episode says so; an unscorable one shows the check that could not score
    page.click(f"#episodes tbody tr[data-index='{_pick(episodes, lambda t: t.failure is not None)}']")
    assert "infrastructure failure: browser crashed" in _detail(page)["text"]
    j = _pick(episodes, lambda t: t.reward is None and t.failure is None)
    page.click(f"#episodes tbody tr[data-index='{j}']")
    shown = _detail(page)
    assert "unscorable · reward n/a" in shown["text"]
    assert shown["checks"] == [[c.type, "n/a", c.why] for c in episodes[j][1].checks]


def test_markup_in_an_observation_is_text_and_never_runs(page, run):
    _, episodes = run
    i = _pick(episodes, lambda t: any(INJECTION in turn.observation.text for turn in t.turns))
    page.click(f"#episodes tbody tr[data-index='{i}']")
    observations = [turn["observation"] for turn in _detail(page)["turns"]]
    assert any(INJECTION in text for text in observations)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#episode img[src='x'], #episode script").count() == 0
    # the markup is in the file only as escaped JSON: no raw tag could close the data element
    raw = (run[0] / "viewer.html").read_text(encoding="utf-8")
    assert "<script>window.__pwned" not in raw and "</pre></details>" not in raw.split('id="data">')[1]


def test_a_long_file_keeps_its_newest_episodes(tmp_path, run):
    run_dir, episodes = run
    out = tmp_path / "capped"
    out.mkdir()
    for name in ("eval_before_bc.jsonl", "rollouts.jsonl"):
        (out / name).write_bytes((run_dir / name).read_bytes())
    page = write_viewer(out, max_per_file=100).read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="data">(.*?)</script>', page, re.S).group(1))
    assert data["files"] == [
        {"name": "eval_before_bc.jsonl", "episodes": 120, "shown": 100},
        {"name": "rollouts.jsonl", "episodes": 256, "shown": 100},
    ]
    newest = [t for name, t in episodes if name == "rollouts.jsonl"][-100:]
    shown = [e for e in data["episodes"] if e["file"] == "rollouts.jsonl"]
    assert [(e["task"], e["sample"], e["iteration"]) for e in shown] == [
        (str(t.task_id), t.sample_idx, t.meta["iteration"]) for t in newest
    ]


@pytest.mark.slow
def test_episodes_played_for_real_in_the_viewer_and_the_export(local_rollout, browser, tmp_path):
    """The scripted expert in Chromium on the bundled shop, scored by the real reward checks: three tasks solved and
    the same three cut to one turn, saved as the driver saves an evaluation, then viewed and exported."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import datasets
    from run_factory import exported

    from common.records import dump_jsonl
    from learner.export import to_trajectories
    from rollout_workers.policy import ExpertPolicy
    from sites.server import SiteServer
    from sites.tasks import load_split

    sites = ["shopping", "shopping_admin"]
    srv = SiteServer(base_port=0, data_dir=tmp_path / "sites", sites=sites)
    srv.start()
    try:
        first = {}
        for t in load_split("train", sites=sites):
            first.setdefault(t.intent_template_id, t.with_urls(srv.urls))
        tasks = [first[i] for i in (101, 106, 201)]  # an answer, a cart change, an admin answer
        worker = local_rollout(
            srv, browsers=1, overrides=["prompt.obs_max_tokens=4000", "model.max_context=8192"]
        )

        async def play(max_turns):
            policy = ExpertPolicy(worker.builder, "webarena", False)
            runs = worker.run_groups(tasks, 1, evaluation=True, policy=policy, max_turns=max_turns)
            return [g.trajectories[0] async for g in runs]

        # in a thread of its own: the sync Playwright of the `browser` fixture holds this thread's event loop
        with ThreadPoolExecutor(1) as pool:
            solved = pool.submit(asyncio.run, play(30)).result()
            cut = pool.submit(asyncio.run, play(1)).result()
    finally:
        srv.stop()
    assert [t.reward for t in solved] == [1.0] * 3 and [t.reward for t in cut] == [0.0] * 3
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for label, trajs in (("before_bc", solved), ("after_bc", cut)):
        for t in trajs:
            t.meta.update(phase="eval", label=label)
        dump_jsonl(trajs, str(run_dir / f"eval_{label}.jsonl"))
    episodes = solved + cut

    page = browser.new_page()
    page.goto(write_viewer(run_dir).as_uri(), wait_until="load")
    assert visible_rows(page) == 6
    page.select_option("#f-outcome", "success")
    assert visible_rows(page) == 3
    page.select_option("#f-outcome", "")
    for i, t in enumerate(episodes):
        page.click(f"#episodes tbody tr[data-index='{i}']")
        shown = _detail(page)
        assert shown["checks"] == [[c.type, f"{c.score:g}", c.why] for c in t.checks]
        assert [x["observation"] for x in shown["turns"]] == [x.observation.text for x in t.turns]
        assert [x["reply"] for x in shown["turns"]] == [x.completion_text for x in t.turns]
    assert page.evaluate("window.__pwned") is None
    page.close()

    assert report.main(["export", str(run_dir), "--tokenizer", "none"]) == 0
    ds = datasets.load_dataset(
        "parquet",
        data_files=str(run_dir / "trajectories.parquet"),
        split="train",
        cache_dir=str(tmp_path / "hf"),
    )
    assert to_trajectories(ds) == [exported(t) for t in episodes]
    assert all(ids for row in ds["prompt_ids"] for ids in row)
