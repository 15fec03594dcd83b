"""`python -m sites tasks` (registered in sites/__main__.py): write a task split as WebArena JSON configs.

    python -m sites tasks --split train|test [--out FILE] [--sites shopping,shopping_admin]

Demonstrations of the scripted expert are made by the rollout layer (`python -m rollout_workers.demos`), which plays
the expert through the same episode loop, prompt builder and reward checks as the model.
"""

from __future__ import annotations

import argparse
import json
import sys


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
