"""`python -m browser_actors observe URL [--mode html|axtree] [--do ACTION ...]`

Prints the observation of a page, then executes each `--do` action (WebArena grammar: `click [12]`,
`type [5] [laptop] [1]`, `select [7] [Blue]`, `scroll [down]`, `goto [url]`, `stop [answer]`, ...) in order and prints
each next observation. For people writing prompts and for scripts (`--json` prints one Observation JSON per line).
Navigation is confined to the URL's host plus any `--allow URL`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from common.cli import check_file, check_url, fail
from common.config import BrowserConfig
from common.records import Observation
from common.tasks import Task


def _task_for(url: str, allow: list[str]) -> Task:
    # A throwaway task: only the start URL matters; extra hosts come in as the task's "sites".
    sites = [f"site{i}" for i in range(len(allow))]
    return Task(sites=sites, task_id="cli", start_url=url, intent="observe", eval={"eval_types": []})


def main(argv: list[str] | None = None) -> int:
    from browser_actors.actor import BrowserActor
    from common.actions import ActionParseError, parse_action

    ap = argparse.ArgumentParser(
        prog="python -m browser_actors",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    ob = sub.add_parser("observe", help="print a page's observation, act, print the next ones")
    ob.add_argument("url")
    ob.add_argument("--mode", choices=["html", "axtree"], default="html")
    ob.add_argument(
        "--do", action="append", default=[], metavar="ACTION", help="an action in WebArena's grammar"
    )
    ob.add_argument("--max-chars", type=int, default=100_000, help="safety cap on the page text")
    ob.add_argument(
        "--allow", action="append", default=[], metavar="URL", help="another host the page may reach"
    )
    ob.add_argument("--auth-dir", default=None, help="folder of <site>_state.json storage states")
    ob.add_argument("--storage-state", default=None, help="a storage state to start logged in")
    ob.add_argument("--json", action="store_true", help="print Observation JSON lines instead of text")
    args = ap.parse_args(argv)

    # Every input checked before Chromium starts: one error line and exit 2.
    check_url(args.url, "URL")
    for url in args.allow:
        check_url(url, "--allow")
    if args.storage_state:
        check_file(args.storage_state, "--storage-state", "a Playwright storage state JSON file")
    if args.auth_dir and not Path(args.auth_dir).is_dir():
        fail(f"--auth-dir {args.auth_dir}: no such folder (expected a folder of <site>_state.json files)")
    actions = []
    for text in args.do:
        try:
            actions.append(parse_action(text, "webarena"))
        except ActionParseError as e:
            fail(f"--do {text!r}: {e}")
    cfg = BrowserConfig(observation=args.mode, page_max_chars=args.max_chars)
    task = _task_for(args.url, args.allow)
    if args.storage_state:
        task = task.model_copy(update={"storage_state": args.storage_state, "require_login": True})
    env = {f"site{i}": u for i, u in enumerate(args.allow)}
    actor = BrowserActor(cfg, auth_dir=args.auth_dir, env_urls=env)
    try:
        _show(actor.reset(task), "reset", args.json)
        for a in actions:
            _show(actor.step(a), f"after {a.model_dump()}", args.json)
    finally:
        actor.close()
    return 0


def _show(obs: Observation, label: str, as_json: bool) -> None:
    from browser_actors.observation import render

    if as_json:
        print(obs.model_dump_json())
    else:
        print(f"===== {label}")
        print(render(obs))
    sys.stdout.flush()
