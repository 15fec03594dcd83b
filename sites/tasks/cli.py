"""`python -m sites tasks` and `python -m sites demos` (registered in sites/__main__.py).

    python -m sites tasks --split train|test [--out FILE] [--sites shopping,shopping_admin]
    python -m sites demos --split train --out demos.jsonl [--limit N] [--sites ...] [--browsers 3] [--report R.json]

`demos` starts the bundled sites (free ports), local BrowserActors and a local RewardActor in this process (no Ray),
runs the scripted expert on the split, prints the score per template and overall, and writes the demonstrations
that scored 1 as JSONL (common.records.dump_jsonl).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from types import SimpleNamespace
from typing import Any


def _sites(text: str) -> list[str] | None:
    return [s for s in text.split(",") if s] or None


def add_tasks(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tasks", help="write a task split (WebArena JSON configs)")
    p.add_argument("--split", choices=["train", "test"], required=True)
    p.add_argument("--out", default="", help="output file (default: stdout)")
    p.add_argument("--sites", default="", help="comma-separated site keys (default: all)")
    p.set_defaults(func=tasks_main)


def tasks_main(args: argparse.Namespace) -> int:
    from sites.tasks import split_configs

    configs = split_configs(args.split, sites=_sites(args.sites))
    text = json.dumps(configs, indent=2)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"wrote {len(configs)} {args.split} tasks to {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0


def add_demos(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demos", help="run the scripted expert and write the demonstrations scored 1")
    p.add_argument("--split", choices=["train", "test"], default="train")
    p.add_argument("--out", required=True, help="JSONL of kept demonstrations")
    p.add_argument("--limit", type=int, default=0, help="at most N tasks (spread over templates; 0 = all)")
    p.add_argument("--sites", default="", help="comma-separated site keys (default: all with templates)")
    p.add_argument("--browsers", type=int, default=3, help="browser actors working in parallel")
    p.add_argument("--report", default="", help="also write every episode's score and checks as JSON")
    p.set_defaults(func=demos_main)


def spread(tasks: list[Any], limit: int) -> list[Any]:
    """At most `limit` tasks, taken round-robin over templates so every template is represented."""
    if not limit or limit >= len(tasks):
        return tasks
    by_template: dict[Any, list[Any]] = defaultdict(list)
    for t in tasks:
        by_template[t.intent_template_id].append(t)
    out: list[Any] = []
    while len(out) < limit:
        for group in by_template.values():
            if group and len(out) < limit:
                out.append(group.pop(0))
    return out


class LocalSandboxes:
    """SandboxClient's interface over an in-process SiteServer."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def new(self) -> str:
        return self.server.new_sandbox()

    async def drop(self, token: str) -> None:
        self.server.drop_sandbox(token)


def summarize(trajs: list[Any]) -> dict[str, Any]:
    """Score per template and overall; unscorable episodes (e.g. fuzzy_match without a judge) counted apart."""
    per: dict[Any, list[float | None]] = defaultdict(list)
    for t in trajs:
        per[t.meta.get("template_id")].append(t.reward)
    scored = [r for rs in per.values() for r in rs if r is not None]
    return {
        "episodes": len(trajs),
        "scored": len(scored),
        "unscorable": len(trajs) - len(scored),
        "success": sum(1 for r in scored if r == 1.0),
        "score": (sum(scored) / len(scored)) if scored else None,
        "per_template": {
            str(k): {
                "n": len(v),
                "ones": sum(1 for r in v if r == 1.0),
                "unscorable": sum(1 for r in v if r is None),
            }
            for k, v in sorted(per.items())
        },
    }


async def _demos(args: argparse.Namespace, server: Any) -> list[Any]:
    from browser_actors import BrowserActor
    from reward import RewardActor
    from sites.expert import run_demos
    from sites.tasks import load_split

    tasks = spread(load_split(args.split, sites=_sites(args.sites)), args.limit)
    tasks = [t.with_urls(server.urls) for t in tasks]
    browsers = [
        BrowserActor(None, auth_dir=str(server.auth_dir), env_urls=server.urls)
        for _ in range(max(1, args.browsers))
    ]
    rewarder = RewardActor(env_urls=server.urls, helpers="bundled")
    done = SimpleNamespace(n=0, t0=time.time())

    def progress(traj: Any) -> None:
        done.n += 1
        mark = {1.0: "ok", 0.0: "FAIL", None: "unscored"}.get(traj.reward, str(traj.reward))
        extra = traj.meta.get("expert_error") or traj.failure or ""
        print(
            f"[{done.n}/{len(tasks)} {time.time() - done.t0:.0f}s] task {traj.task_id}: {mark} "
            f"({len(traj.turns)} turns) {extra}",
            file=sys.stderr,
            flush=True,
        )

    try:
        return await run_demos(browsers, rewarder, tasks, LocalSandboxes(server), on_done=progress)
    finally:
        for b in browsers:
            b.close()
        rewarder.close()


def _sites_to_start(keys: list[str] | None) -> list[str]:
    """The templated sites plus every site sharing a database with one (a shop review check reads the admin)."""
    from sites.core import load_sites
    from sites.tasks import templates

    wanted = {t.site for t in templates(keys)}
    specs = load_sites(None)
    groups = {s.db.name for s in specs if s.key in wanted}
    return sorted(s.key for s in specs if s.db.name in groups)


def demos_main(args: argparse.Namespace) -> int:
    from common.records import dump_jsonl
    from sites.server import SiteServer

    site_keys = _sites_to_start(_sites(args.sites))
    server = SiteServer(base_port=0, sites=site_keys, max_sandboxes=64)
    server.start()
    try:
        trajs = asyncio.run(_demos(args, server))
    finally:
        server.stop()
    kept = [t for t in trajs if t.reward == 1.0]
    dump_jsonl(kept, args.out)
    summary = summarize(trajs)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "summary": summary,
                    "episodes": [
                        {
                            "task_id": t.task_id,
                            "reward": t.reward,
                            "turns": len(t.turns),
                            "answer": t.answer,
                            "error": t.meta.get("expert_error") or t.failure,
                            "checks": [c.model_dump() for c in t.checks],
                        }
                        for t in trajs
                    ],
                },
                f,
                indent=1,
            )
    score = "n/a" if summary["score"] is None else f"{100 * summary['score']:.1f}%"
    print(
        f"expert on {args.split}: {summary['success']}/{summary['scored']} scorable episodes scored 1 ({score}); "
        f"{summary['unscorable']} unscorable; kept {len(kept)} demonstrations in {args.out}",
        flush=True,
    )
    return 0
