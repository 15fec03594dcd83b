"""Command line of the MiniWoB++ environment.

    python -m sites.miniwob serve [--port 0]                  # serve the task pages until Ctrl-C
    python -m sites.miniwob tasks --split train --out f.json  # the split as WebArena-format configs
    python -m sites.miniwob utterances [--check]              # (re)read every task's instruction per seed
    python -m sites.miniwob experts [--split train] [--seeds 20] [--tasks a,b]   # each expert's success rate

`utterances` reads every (task, seed) of both splits in one headless Chromium (sites/miniwob/instructions.py: one page
per task, a few tasks at a time, each seed started by the browser actor's own start routine) and writes the instruction
table that task configs take their intent from (sites/miniwob/utterances.json, one line per task); `--check` reads
the same and compares with the stored table instead, plus `--fresh` random seeds per task read one freshly loaded page
each, as the browser actor resets (a sample: every seed fresh takes a page load each), and fails on a difference.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from common.cli import fail, run


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


def write_table(table: dict[str, dict[str, str]], path: Any) -> None:
    """The instruction table as JSON with one line per task (task -> {seed: instruction}): about 2 MB for 60 tasks x
    550 seeds, where an indented layout took a line per seed."""
    lines = [
        f"{json.dumps(n)}: {json.dumps(seeds, ensure_ascii=False, separators=(',', ':'))}"
        for n, seeds in table.items()
    ]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")


def _differences(stored: dict[str, dict[str, str]], read: dict[str, dict[str, str]], how: str) -> int:
    """Prints the first differences between the stored table and `read` (what `how` read); returns their count."""
    diffs = [
        (n, s, stored.get(n, {}).get(s), u)
        for n, seeds in read.items()
        for s, u in seeds.items()
        if stored.get(n, {}).get(s) != u
    ]
    for n, s, old, new in diffs[:20]:
        print(f"{n} seed {s}: stored {old!r}, {how} {new!r}", file=sys.stderr)
    print(f"{how}: {sum(map(len, read.values()))} instructions, {len(diffs)} difference(s)", file=sys.stderr)
    return len(diffs)


def _utterances(args: argparse.Namespace) -> int:
    from sites.miniwob.instructions import read_instructions
    from sites.miniwob.server import MiniwobServer
    from sites.miniwob.tasks import SEEDS, TASKS, UTTERANCES

    wanted = {n: [s for split in SEEDS for s in SEEDS[split]] for n in TASKS}
    with MiniwobServer() as srv:
        t0 = time.perf_counter()
        table = read_instructions(wanted, url=srv.url, parallel=args.parallel)
        print(
            f"read {sum(map(len, table.values()))} instructions in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
        if not args.check:
            write_table(table, UTTERANCES)
            print(f"wrote {UTTERANCES} ({UTTERANCES.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
            return 0
        # The fast path reuses one page per task; a sample of seeds read on fresh pages (what the browser actor
        # does at every reset) checks that reuse changed no instruction.
        rng = random.Random(args.seed)
        sample = {n: rng.sample(seeds, min(args.fresh, len(seeds))) for n, seeds in wanted.items()}
        fresh = read_instructions(sample, url=srv.url, parallel=args.parallel, fresh=True)
    stored = json.loads(UTTERANCES.read_text(encoding="utf-8"))
    n = _differences(stored, table, "page (one page per task)") + _differences(stored, fresh, "fresh page")
    return 1 if n else 0


def _experts(args: argparse.Namespace) -> int:
    from browser_actors.actor import BrowserActor
    from common.config import BrowserConfig
    from sites.miniwob.experts import SOLVERS
    from sites.miniwob.play import success_rates
    from sites.miniwob.server import MiniwobServer
    from sites.miniwob.tasks import SEEDS, TASKS, load_split

    names = [n for n in args.tasks.split(",") if n] or [n for n in TASKS if n in SOLVERS]
    seeds = set(SEEDS[args.split][: args.seeds])
    total = [0, 0]
    with MiniwobServer() as srv:
        actor = BrowserActor(BrowserConfig(observation="html"), env_urls={"miniwob": srv.url})
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
    p.add_argument(
        "--fresh", type=int, default=3, help="with --check: seeds per task also read on fresh pages"
    )
    p.add_argument("--seed", type=int, default=0, help="with --check: seed of the fresh-page sample")
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
    if getattr(args, "tasks", ""):  # checked before a server or a browser starts: one line, exit 2
        from sites.miniwob.tasks import checked_names

        try:
            checked_names([n for n in args.tasks.split(",") if n])
        except ValueError as e:
            fail(f"--tasks {args.tasks}: {e}")
    return int(args.func(args))


if __name__ == "__main__":
    run(main)
