"""Score WebArena episodes from the shell, one JSON line in, one JSON line out, in order.

    python -m reward validate TASKS.json...      # every task's reward plan built: unscorable configs fail, named
    python -m reward score --batch CASES.jsonl [--live] [--urls shopping=http://127.0.0.1:7770 ...]
                           [--helpers bundled|webarena] [--auth-dir DIR] [--judge openai --judge-url URL
                           --judge-model NAME] [--url-mode webarena|exact] [--out FILE]

Each input line: {"config": <WebArena task config>, "answer": "<stop answer>", "final_url": "<last URL>"}, plus
optionally "storage_state" (a Playwright storage state dict) and "sandbox" (a bundled-site sandbox token).
Each output line: {"score": float | null, "checks": [{"type", "score", "why"}, ...]} (+ "error" when there is one).
Without --live, checks that need a page make that line's score null with a check saying "needs a live page
(--live)"; the run goes on. A malformed input line gives an error line, never a crash. `--batch -` reads stdin.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from common.cli import check_file, check_url, fail, run
from common.config import RewardConfig
from common.records import FinalState, Reward
from common.tasks import Task
from common.text import cut


def _parse_urls(pairs: list[str]) -> dict[str, str]:
    urls = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            fail(f"--urls {pair}: expected SITE=URL, e.g. shopping=http://127.0.0.1:7770")
        urls[key.strip()] = check_url(value.strip(), "--urls", pair)
    return urls


def _case(line: str, urls: dict[str, str]) -> tuple[Task, FinalState]:
    """One input line as a task with its placeholders filled from `urls` (filled here, where it is loaded) and
    the episode's final state."""
    data = json.loads(line)
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise ValueError('expected an object with a "config" object')
    answer = data.get("answer")
    if answer is not None and not isinstance(answer, str):
        raise ValueError('"answer" must be a string or null')
    final = FinalState(
        url=str(data.get("final_url") or ""),
        answer=answer,
        storage_state=data.get("storage_state") or {},
        sandbox=data.get("sandbox"),
    )
    return Task.model_validate(data["config"]).with_urls(urls), final


def _line(reward: Reward) -> str:
    out: dict[str, Any] = {"score": reward.score, "checks": [c.model_dump() for c in reward.checks]}
    if reward.error:
        out["error"] = reward.error
    return json.dumps(out, ensure_ascii=False)


def score_batch(lines: list[str], args: argparse.Namespace) -> list[str]:
    from reward.actor import RewardActor

    cfg = RewardConfig(
        judge=args.judge, judge_url=args.judge_url, judge_model=args.judge_model, url_match=args.url_mode
    )
    urls = _parse_urls(args.urls)
    outputs: list[str | None] = [None] * len(lines)
    cases: list[tuple[int, Task, FinalState]] = []
    for n, line in enumerate(lines):
        try:
            task, final = _case(line, urls)
        except Exception as e:  # noqa: BLE001 - any bad line becomes an error line
            outputs[n] = json.dumps(
                {"score": None, "checks": [], "error": f"line {n + 1}: {cut(str(e), 300)}"}
            )
            continue
        cases.append((n, task, final))
    actor = RewardActor(
        cfg,
        env_urls=urls,
        helpers=args.helpers,
        auth_dir=args.auth_dir,
        judge_cache=args.judge_cache,
        live=args.live,
    )
    try:
        rewards = actor.score_many([(t, f) for _, t, f in cases])
    finally:
        actor.close()
    for (n, _, _), reward in zip(cases, rewards, strict=False):
        outputs[n] = _line(reward)
    return [o or "" for o in outputs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reward", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("score", help="score a batch of cases (JSON lines)")
    p.add_argument("--batch", required=True, help="JSONL file of cases, or - for stdin")
    p.add_argument("--live", action="store_true", help="start a browser for checks that visit pages")
    p.add_argument(
        "--urls", nargs="*", default=[], metavar="SITE=URL", help="site base URLs for placeholders"
    )
    p.add_argument("--helpers", choices=["bundled", "webarena"], default="bundled")
    p.add_argument("--auth-dir", default=None, help="folder of <site>_state.json storage states")
    p.add_argument("--judge", choices=["none", "openai", "vllm"], default="none")
    p.add_argument("--judge-url", default="")
    p.add_argument("--judge-model", default="")
    p.add_argument("--judge-cache", default=None, help="JSON file caching judge verdicts")
    p.add_argument("--url-mode", choices=["webarena", "exact"], default="webarena")
    p.add_argument("--out", default="-", help="output file (default stdout)")
    v = sub.add_parser("validate", help="load task files and build every task's reward plan")
    v.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if args.cmd == "validate":
        from reward.plan import validate_file

        bad = 0
        for path in args.files:
            try:
                print(f"{path}: {len(validate_file(path))} tasks OK")
            except (ValueError, OSError) as e:
                bad += 1
                print(str(e), file=sys.stderr)
        return 1 if bad else 0
    # Inputs checked before a browser starts: one error line and exit 2 (a bad case line is an output line).
    if args.batch != "-":
        check_file(args.batch, "--batch", 'a JSONL file of {"config", "answer", "final_url"} lines, or -')
    if args.auth_dir and not Path(args.auth_dir).is_dir():
        fail(f"--auth-dir {args.auth_dir}: no such folder (expected a folder of <site>_state.json files)")
    _parse_urls(args.urls)
    src = sys.stdin if args.batch == "-" else open(args.batch, encoding="utf-8")
    with src:
        lines = [ln for ln in src.read().splitlines() if ln.strip()]
    result = score_batch(lines, args)
    text = "".join(r + "\n" for r in result)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    run(main)
