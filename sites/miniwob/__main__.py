"""Command line of the MiniWoB++ environment.

    python -m sites.miniwob serve [--port 0]                  # serve the task pages until Ctrl-C
    python -m sites.miniwob tasks --split train --out f.json  # the split as WebArena-format configs
    python -m sites.miniwob utterances [--check]              # (re)read every task's instruction per seed
    python -m sites.miniwob experts [--split train] [--seeds 20] [--tasks a,b]   # each expert's success rate

`utterances` opens every (task, seed) of both splits in one headless Chromium (a few pages at a time), starts the
episode exactly as the browser actor does, and writes the instruction table that task configs take their intent
from (sites/miniwob/utterances.json); `--check` compares with the stored table instead and fails on a difference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any


def _serve(args: argparse.Namespace) -> int:
    from sites.miniwob.server import MiniwobServer

    with MiniwobServer(port=args.port) as srv:
        print(f"MiniWoB++ pages at {srv.url}/miniwob/<task>.html (root {srv.root})", flush=True)
        try:
            while True:
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    return 0


def _tasks(args: argparse.Namespace) -> int:
    from sites.miniwob.tasks import split_configs

    names = [n for n in args.tasks.split(",") if n] or None
    configs = split_configs(args.split, names)
    text = json.dumps(configs, indent=1, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"{len(configs)} {args.split} tasks -> {args.out}")
    else:
        print(text)
    return 0


async def read_utterances(
    pairs: list[tuple[str, int]], url: str, parallel: int = 4
) -> dict[str, dict[str, str]]:
    """task -> seed -> instruction, read from the served pages by the browser actor's own start routine."""
    from playwright.async_api import async_playwright

    from browser_actors import miniwob as MW
    from browser_actors.runtime import CHROMIUM_ARGS, chromium_executable
    from common.tasks import MiniwobSpec

    out: dict[str, dict[str, str]] = {}
    queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
    for p in pairs:
        queue.put_nowait(p)

    async def worker(browser: Any) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        while not queue.empty():
            name, seed = queue.get_nowait()
            await page.goto(f"{url}/miniwob/{name}.html")
            text = await MW.start(page, MiniwobSpec(task=name, seed=seed), timeout_s=30)
            out.setdefault(name, {})[str(seed)] = text
        await context.close()

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        await asyncio.gather(*(worker(browser) for _ in range(parallel)))
        await browser.close()
    return {
        name: dict(sorted(seeds.items(), key=lambda kv: int(kv[0]))) for name, seeds in sorted(out.items())
    }


def _utterances(args: argparse.Namespace) -> int:
    from sites.miniwob.server import MiniwobServer
    from sites.miniwob.tasks import SEEDS, TASKS, UTTERANCES

    pairs = [(n, s) for n in TASKS for split in SEEDS for s in SEEDS[split]]
    t0 = time.perf_counter()
    with MiniwobServer() as srv:
        table = asyncio.run(read_utterances(pairs, srv.url, args.parallel))
    print(f"read {len(pairs)} instructions in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if args.check:
        stored = json.loads(UTTERANCES.read_text(encoding="utf-8"))
        diffs = [
            (n, s, stored.get(n, {}).get(s), u)
            for n, seeds in table.items()
            for s, u in seeds.items()
            if stored.get(n, {}).get(s) != u
        ]
        for n, s, old, new in diffs[:20]:
            print(f"{n} seed {s}: stored {old!r}, page {new!r}", file=sys.stderr)
        print(f"{len(diffs)} difference(s)", file=sys.stderr)
        return 1 if diffs else 0
    UTTERANCES.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {UTTERANCES}", file=sys.stderr)
    return 0


def _experts(args: argparse.Namespace) -> int:
    from browser_actors.actor import BrowserActor
    from common.config import RolloutConfig
    from sites.miniwob.experts import SOLVERS
    from sites.miniwob.play import success_rates
    from sites.miniwob.server import MiniwobServer
    from sites.miniwob.tasks import SEEDS, TASKS, load_split

    names = [n for n in args.tasks.split(",") if n] or [n for n in TASKS if n in SOLVERS]
    seeds = set(SEEDS[args.split][: args.seeds])
    total = [0, 0]
    with MiniwobServer() as srv:
        actor = BrowserActor(RolloutConfig(observation="html"), env_urls={"miniwob": srv.url})
        try:
            for name in names:
                tasks = [t.with_urls({"miniwob": srv.url}) for t in load_split(args.split, [name])]
                ok, n = success_rates(actor, [t for t in tasks if t.miniwob.seed in seeds]).get(name, (0, 0))
                total[0], total[1] = total[0] + ok, total[1] + n
                print(f"{name:30s} {ok:3d}/{n:<3d} {ok / max(n, 1):6.1%}", flush=True)
        finally:
            actor.close()
    print(f"{'all experts':30s} {total[0]:3d}/{total[1]:<3d} {total[0] / max(total[1], 1):6.1%}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sites.miniwob", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="serve the task pages in the foreground")
    p.add_argument("--port", type=int, default=0, help="0 = a free port")
    p.set_defaults(func=_serve)
    p = sub.add_parser("tasks", help="write a split as WebArena-format task configs")
    p.add_argument("--split", choices=["train", "test"], required=True)
    p.add_argument("--tasks", default="", help="comma-separated task names (default: the whole list)")
    p.add_argument("--out", default="", help="output file (default: stdout)")
    p.set_defaults(func=_tasks)
    p = sub.add_parser("utterances", help="read every task's instruction per seed from the pages")
    p.add_argument("--check", action="store_true", help="compare with the stored table, write nothing")
    p.add_argument("--parallel", type=int, default=4, help="pages read at once")
    p.set_defaults(func=_utterances)
    p = sub.add_parser("experts", help="play each expert on its task's seeds and print its success rate")
    p.add_argument("--split", choices=["train", "test"], default="train")
    p.add_argument("--seeds", type=int, default=20, help="first N seeds of the split")
    p.add_argument(
        "--tasks", default="", help="comma-separated task names (default: every task with an expert)"
    )
    p.set_defaults(func=_experts)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
