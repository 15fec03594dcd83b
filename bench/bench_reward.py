"""Time per program_html check: our readiness waits vs WebArena's fixed 3-second sleep, measured in the same run.

    .venv/bin/python bench/bench_reward.py [--checks 20] [--baseline 2] [--settle load|networkidle]

Both sides check the same pages in the same Chromium: navigate to a target URL, read a JS locator, compare. The
baseline does what WebArena's evaluator does (goto, then sleep 3 s); ours waits for the load state (and network idle
with --settle networkidle). The baseline runs on a couple of checks only (it is 3 s each, by construction).
Pages are served locally (werkzeug on a free port) so the figure measures the checker, not a remote site.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from report import Figure, save  # noqa: E402

PAGE = """<html><head><title>Order {n}</title></head><body><div id="status">Canceled</div>
<table>{rows}</table><script>document.body.dataset.ready = '1';</script></body></html>"""


def serve() -> tuple[str, object]:
    from flask import Flask
    from werkzeug.serving import make_server

    app = Flask("bench-pages")

    @app.get("/order/<int:n>")
    def order(n: int):
        rows = "".join(f"<tr><td>SKU-{n}-{i}</td><td>${i}.00</td></tr>" for i in range(200))
        return PAGE.format(n=n, rows=rows)

    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def task(n: int, base: str):
    """A check of order n's status page; placeholders filled, as where tasks are loaded."""
    from common.tasks import Task

    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": n,
            "start_url": "__SHOPPING__",
            "intent": "check",
            "eval": {
                "eval_types": ["program_html"],
                "program_html": [
                    {
                        "url": f"__SHOPPING__/order/{n}",
                        "locator": 'document.querySelector("#status").outerText',
                        "required_contents": {"exact_match": "Canceled"},
                    }
                ],
            },
        }
    ).with_urls({"shopping": base})


async def baseline(base: str, n_checks: int) -> list[float]:
    """WebArena's procedure: goto, sleep 3 s, evaluate the locator."""
    from playwright.async_api import async_playwright

    from common.chromium import CHROMIUM_ARGS, chromium_executable

    times = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        page = await (await browser.new_context()).new_page()
        await page.goto(f"{base}/order/0")  # warm-up, not timed
        for i in range(n_checks):
            t0 = time.perf_counter()
            await page.goto(f"{base}/order/{i + 1}")
            await asyncio.sleep(3)
            value = str(await page.evaluate('() => document.querySelector("#status").outerText'))
            assert value.lower() == "canceled"
            times.append(time.perf_counter() - t0)
        await browser.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--baseline", type=int, default=2)
    ap.add_argument("--settle", choices=["load", "networkidle"], default="load")
    args = ap.parse_args()

    from common.records import FinalState
    from reward.actor import RewardActor

    base, server = serve()
    with RewardActor(env_urls={"shopping": base}, settle=args.settle) as actor:
        actor.score(task(0, base), FinalState())  # warm-up: browser launch is not a per-check cost
        ours = []
        for i in range(args.checks):
            t0 = time.perf_counter()
            reward = actor.score(task(i + 1, base), FinalState())
            ours.append(time.perf_counter() - t0)
            assert reward.score == 1.0, reward
        t0 = time.perf_counter()
        many = actor.score_many([(task(i + 1, base), FinalState()) for i in range(args.checks)])
        concurrent_per_check = (time.perf_counter() - t0) / args.checks
        assert all(r.score == 1.0 for r in many)
    base_times = asyncio.run(baseline(base, args.baseline))
    server.shutdown()  # type: ignore[attr-defined]

    ours_med, base_med = statistics.median(ours), statistics.median(base_times)
    print(
        f"program_html check, ours (settle={args.settle}, a wiped context per episode): "
        f"median {ours_med * 1000:.0f} ms over {args.checks} checks"
    )
    print(
        f"program_html check, ours, {args.checks} episodes concurrently: {concurrent_per_check * 1000:.0f} ms/check"
    )
    print(
        f"program_html check, WebArena baseline (goto + sleep 3 s): median {base_med * 1000:.0f} ms "
        f"over {args.baseline} checks"
    )
    print(
        f"speed-up: {base_med / ours_med:.1f}x sequential, {base_med / concurrent_per_check:.1f}x concurrent"
    )
    save(
        "reward",
        [
            Figure(
                "program_html check (local page), ours / goto + fixed 3 s sleep",
                f"{ours_med * 1e3:.0f} ms",
                f"{base_med * 1e3:.0f} ms",
                ours_med / base_med,
            ),
            Figure(
                "program_html check, ours concurrently (per check) / goto + fixed 3 s sleep",
                f"{concurrent_per_check * 1e3:.0f} ms",
                f"{base_med * 1e3:.0f} ms",
                concurrent_per_check / base_med,
            ),
        ],
        {"settle": args.settle, "ours_s": ours, "baseline_s": base_times},
    )


if __name__ == "__main__":
    main()
