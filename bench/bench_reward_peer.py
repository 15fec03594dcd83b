"""Reward checks: our RewardActor against WebArena-Lite's reference evaluator (browsergym-webarenalite 0.14.3),
on the same bundled-site task configs, the same answers and the same pages, measured in the same run.

    .venv/bin/python bench/bench_reward_peer.py [--per-kind 6]

Tasks: the test split of `sites.tasks` (WebArena's JSON format), `--per-kind` of each deterministic check kind
(exact_match, must_include, url_match, program_html); fuzzy_match / ua_match (LLM judge), configs naming `func:`
helpers (the reference's helpers call Magento's / GitLab's real APIs, which the bundled sites do not serve) and
program_html checks with `must_exclude` contents (the reference raises "Unknown required_contents" on them) are
left out and counted. Each task is scored in two end states, so both verdicts occur: the scripted expert's
episode (its sandbox, last page and answer; expected 1) and a do-nothing episode (a fresh sandbox, the start
page, an empty answer; expected 0). The reference runs in .venv-peers (bench/peers/wa_evaluate.py) on a live page
restored at the episode's last URL; only its evaluator call is timed. Ours is timed per `score()` call, which also
takes its own browser context (a wiped one when idle). Figures: agreement (target 100%) and time per check,
ours / reference, on program_html checks (each navigates; target <= 0.1) and on the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from report import Figure, save  # noqa: E402
from walk import run_peer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
KINDS = ("exact_match", "must_include", "url_match", "program_html")


def kind_of(config: dict) -> str | None:
    """The check kind a config is benched under, or None when it is left out (LLM judge, `func:` helpers, and
    `must_exclude` contents, which the reference's program_html does not know: it raises on them)."""
    ev = config["eval"]
    program = json.dumps(ev.get("program_html") or [])
    if "func:" in program or '"must_exclude"' in program:
        return None
    if "program_html" in ev["eval_types"]:
        return "program_html"
    if ev["eval_types"] == ["url_match"]:
        return "url_match"
    refs = ev.get("reference_answers") or {}
    if ev["eval_types"] == ["string_match"] and set(refs) in ({"exact_match"}, {"must_include"}):
        return next(iter(refs))
    return None


def pick(per_kind: int) -> tuple[list, dict]:
    from common.tasks import Task
    from sites.tasks import split_configs

    chosen, left_out = {k: [] for k in KINDS}, 0
    for config in split_configs("test"):
        k = kind_of(config)
        if k is None:
            left_out += 1
        elif len(chosen[k]) < per_kind:
            chosen[k].append((Task.model_validate(config), config))
    return [(k, *tc) for k in KINDS for tc in chosen[k]], {
        "left_out_nondeterministic_func_or_must_exclude": left_out
    }


async def end_states(srv, tasks: list) -> list:
    """(kind, task, config, final state, expected score) for the expert's and the do-nothing episode of every
    task (an expert episode that does not stop is dropped: it is not a scored end state)."""
    from transformers import AutoTokenizer

    from browser_actors.actor import BrowserActor
    from common.config import PromptConfig
    from common.models import ensure_default_model
    from common.prompts import PromptBuilder
    from common.records import FinalState
    from rollout_workers.episode import EpisodeSettings, run_episode
    from rollout_workers.handles import BrowserHandle
    from rollout_workers.policy import ExpertPolicy

    # The expert plays through the one episode loop, with a view large enough to hold whole pages (the end states
    # are what is compared here, not what a small model could see).
    ro = PromptConfig(obs_max_tokens=8000, fold_header=False)
    settings = EpisodeSettings(
        max_turns=30, grammar=ro.grammar, thinking=ro.thinking, max_new_tokens=1024, max_context=16384
    )
    builder = PromptBuilder.from_config(AutoTokenizer.from_pretrained(ensure_default_model()), ro)
    policy = ExpertPolicy(builder, ro.grammar, ro.thinking)
    out = []
    browser = BrowserActor(auth_dir=str(srv.auth_dir), env_urls=srv.urls)
    try:
        for kind, unfilled, config in tasks:
            # actors receive filled tasks; the reference gets the raw config
            task = unfilled.with_urls(srv.urls)
            res = await run_episode(
                task,
                browser=BrowserHandle(browser),
                policy=policy,
                builder=builder,
                settings=settings,
                sandbox=srv.new_sandbox(),
            )
            traj, final = res.trajectory, res.final
            if final is not None and traj.termination == "stop":
                out.append((kind, task, config, final, 1.0))
            site = task.sites[0]
            state = json.loads(srv.storage_state_path(site).read_text()) if task.storage_state else {}
            start = task.start_url.replace(f"__{site.upper()}__", srv.urls[site])
            nothing = FinalState(url=start, storage_state=state, sandbox=srv.new_sandbox(), env_urls=srv.urls)
            out.append((kind, task, config, nothing, 0.0))
    finally:
        browser.close()
    return out


def score_ours(srv, states: list) -> tuple[list[tuple[float | None, float]], float]:
    """Each end state scored alone (timed per call), then all program_html ones at once with `score_many` (how
    the reward actor scores a group); returns the per-call results and the concurrent seconds per check."""
    from reward.actor import RewardActor

    res = []
    pages = [(task, final) for kind, task, _, final, _ in states if kind == "program_html"]
    with RewardActor(env_urls=srv.urls, auth_dir=srv.auth_dir) as actor:
        if pages:
            actor.score(*pages[0])  # warm-up: the browser launch is not a per-check cost
        for _, task, _, final, _ in states:
            t0 = time.perf_counter()
            r = actor.score(task, final)
            res.append((r.score, time.perf_counter() - t0))
        t0 = time.perf_counter()
        many = actor.score_many(pages) if pages else []
        concurrent = (time.perf_counter() - t0) / max(1, len(pages))
    singles = [r for (kind, *_), r in zip(states, res, strict=True) if kind == "program_html"]
    if [m.score for m in many] != [s for s, _ in singles]:
        raise RuntimeError("score_many disagrees with score() on the same end states")
    return res, concurrent


def score_reference(srv, states: list) -> list[dict]:
    from common.tasks import fill_placeholders

    env = {k.strip("_"): v for k, v in srv.placeholders.items()}
    for missing in ("WIKIPEDIA", "MAP", "HOMEPAGE"):  # not bundled; env_config insists on a value
        env.setdefault(missing, "http://127.0.0.1:9")
    items = [
        {
            "config": fill_placeholders(config, srv.placeholders),
            "url": final.url,
            "answer": final.answer,
            "storage_state": final.storage_state or None,
            "cookies": [srv.sandbox_cookie(final.sandbox)] if final.sandbox else [],
        }
        for _, _, config, final, _ in states
    ]
    warm = dict(items[0])  # the first item again, untimed in the summary: browser start-up
    return run_peer("wa_evaluate.py", {"chromium": CHROMIUM, "site_env": env, "items": [warm, *items]})[
        "results"
    ][1:]


def summarize(states: list, ours: list, ref: list) -> dict:
    rows = []
    for (kind, task, _, _, expected), (o_score, o_s), r in zip(states, ours, ref, strict=True):
        rows.append(
            {
                "task_id": task.task_id,
                "kind": kind,
                "expected": expected,
                "ours": o_score,
                "reference": r["score"],
                "reference_error": r["error"],
                "ours_s": o_s,
                "reference_s": r["seconds"],
            }
        )
    return {"rows": rows}


def figures(rows: list, concurrent_s: float) -> list[Figure]:
    agree = [r for r in rows if r["ours"] == r["reference"]]
    out = [
        Figure(
            f"reward checks: agreement with the reference, {len(rows)} end states ({len(rows) // 2} tasks)",
            f"{len(agree)}/{len(rows)} agree",
            "reference verdicts",
            len(agree) / len(rows),
            "== 1",
        )
    ]
    for label, sel in (
        ("program_html (navigates)", lambda r: r["kind"] == "program_html"),
        ("string / url checks", lambda r: r["kind"] != "program_html"),
    ):
        part = [r for r in rows if sel(r)]
        if not part:
            continue
        o, b = statistics.median(r["ours_s"] for r in part), statistics.median(r["reference_s"] for r in part)
        target = "<= 0.1" if label.startswith("program") else ""
        out.append(
            Figure(
                f"reward check time, {label}, ours / reference",
                f"{o * 1e3:.3g} ms",
                f"{b * 1e3:.3g} ms",
                o / b,
                target,
            )
        )
    pages = [r["reference_s"] for r in rows if r["kind"] == "program_html"]
    if pages:
        ref = statistics.median(pages)
        out.append(
            Figure(
                "reward check time, program_html, ours scoring them concurrently (per check) / reference",
                f"{concurrent_s * 1e3:.0f} ms",
                f"{ref * 1e3:.0f} ms",
                concurrent_s / ref,
            )
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-kind", type=int, default=6, help="tasks per check kind")
    args = ap.parse_args()
    from sites_env import bundled_sites

    tasks, meta = pick(args.per_kind)
    with bundled_sites() as srv:
        states = asyncio.run(end_states(srv, tasks))
        ours, concurrent = score_ours(srv, states)
        ref = score_reference(srv, states)
    summary = summarize(states, ours, ref)
    bad = [r for r in summary["rows"] if r["ours"] != r["reference"] or r["ours"] != r["expected"]]
    for r in bad:
        print(f"  disagreement / unexpected: {r}")
    save("reward_peer", figures(summary["rows"], concurrent), {**meta, **summary, "concurrent_s": concurrent})


if __name__ == "__main__":
    main()
