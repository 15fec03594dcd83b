"""Browser step (action + next text observation): our BrowserActor against BrowserGym's environment step, on the
same pages of the bundled shop and the same 15 actions (bench/walk.py), measured in the same run.

    .venv/bin/python bench/bench_browser_peer.py [--loops 2] [--peer-loops 1]

BrowserGym 0.14.3 runs in its own virtualenv (bench/setup_peers.sh; it pins playwright 1.44) through
bench/peers/bgym_steps.py, with Debian's Chromium, logged in with the same storage state and its own sandbox.
It is measured twice: with its defaults (the task's slow_mo = 1000 ms per Playwright call, 0.5 s
pre-observation delay) and with those waits at their minimum (slow_mo 0, delay 0). Its step includes what it
always extracts (DOM snapshot, accessibility tree, screenshot, element properties) and flattening the tree to text.
Ours is timed in both observation modes. The first loop of each side is a warm-up. Ratio: our median step over
BrowserGym's; the target is <= 0.5 against the minimum-wait BrowserGym (the harder peer).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from report import Figure, save  # noqa: E402
from walk import SHOP_WALK, our_action, run_peer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"


def ours(srv, mode: str, loops: int) -> tuple[list[float], list[str]]:
    from browser_actors.actor import BrowserActor
    from common.config import BrowserConfig
    from common.tasks import Task

    base = srv.urls["shopping"]
    task = Task(
        sites=["shopping"],
        task_id="bench-walk",
        start_url=base + "/",
        require_login=True,
        storage_state="./.auth/shopping_state.json",
        intent="walk",
        eval={"eval_types": []},
    )
    actor = BrowserActor(BrowserConfig(observation=mode), auth_dir=str(srv.auth_dir), env_urls=srv.urls)
    times, urls = [], []
    try:
        for loop in range(loops):
            obs = actor.reset(task, sandbox=srv.new_sandbox())
            for step in SHOP_WALK:
                action = our_action(step, obs, base)
                t0 = time.perf_counter()
                obs = actor.step(action)
                dt = time.perf_counter() - t0
                if obs.last_action_error or obs.infra_error:
                    raise RuntimeError(f"our step {action}: {obs.last_action_error or obs.infra_error}")
                if loop > 0:
                    times.append(dt)
                    urls.append(obs.url)
    finally:
        actor.close()
    return times, urls


def peer(srv, loops: int, minimal: bool) -> dict:
    spec = {
        "start_url": srv.urls["shopping"] + "/",
        "storage_state": str(srv.storage_state_path("shopping")),
        "cookies": [srv.sandbox_cookie(srv.new_sandbox())],
        "steps": SHOP_WALK,
        "loops": loops,
        "slow_mo": 0 if minimal else None,
        "pre_observation_delay": 0.0 if minimal else None,
        "chromium": CHROMIUM,
    }
    return run_peer("bgym_steps.py", spec)


def same_walk(ours_urls: list[str], peer_urls: list[str]) -> bool:
    """Both sides visited the same pages (paths and queries; the peers' steps may report errors and still land)."""
    strip = lambda u: u.split("/", 3)[-1]  # noqa: E731 - scheme and host differ only by nothing, but be safe
    n = min(len(ours_urls), len(peer_urls))
    return n > 0 and [strip(u) for u in ours_urls[:n]] == [strip(u) for u in peer_urls[:n]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loops", type=int, default=2, help="timed walks of ours (after one warm-up walk)")
    ap.add_argument(
        "--peer-loops", type=int, default=1, help="timed walks of each BrowserGym setting (+ warm-up)"
    )
    args = ap.parse_args()
    from sites_env import bundled_sites

    with bundled_sites(sites=["shopping"]) as srv:
        bg_min = peer(srv, args.peer_loops + 1, minimal=True)
        ours_ax, urls_ax = ours(srv, "axtree", args.loops + 1)
        ours_html, _ = ours(srv, "html", args.loops + 1)
        bg_def = peer(srv, args.peer_loops + 1, minimal=False)
    for name, res in (("minimum waits", bg_min), ("defaults", bg_def)):
        if not same_walk(urls_ax, res["urls"]):
            raise RuntimeError(f"BrowserGym ({name}) walked elsewhere: {res['urls']} vs ours {urls_ax}")
    med = {
        "ours_axtree": statistics.median(ours_ax),
        "ours_html": statistics.median(ours_html),
        "bgym_min": statistics.median(bg_min["step_s"]),
        "bgym_default": statistics.median(bg_def["step_s"]),
    }
    ms = {k: f"{v * 1e3:.0f} ms" for k, v in med.items()}
    figures = [
        Figure(
            "browser step, ours (axtree) / BrowserGym, waits at minimum",
            ms["ours_axtree"],
            ms["bgym_min"],
            med["ours_axtree"] / med["bgym_min"],
            "<= 0.5",
        ),
        Figure(
            "browser step, ours (html) / BrowserGym, waits at minimum",
            ms["ours_html"],
            ms["bgym_min"],
            med["ours_html"] / med["bgym_min"],
            "<= 0.5",
        ),
        Figure(
            "browser step, ours (axtree) / BrowserGym, defaults",
            ms["ours_axtree"],
            ms["bgym_default"],
            med["ours_axtree"] / med["bgym_default"],
            "<= 0.5",
        ),
    ]
    save(
        "browser_peer",
        figures,
        {
            "median_step_s": med,
            "steps": {
                "ours_axtree": len(ours_ax),
                "ours_html": len(ours_html),
                "bgym_min": len(bg_min["step_s"]),
            },
            "bgym_obs_chars_median": statistics.median(bg_min["obs_chars"]),
            "bgym_action_errors": {"minimum": bg_min["errors"][:5], "defaults": bg_def["errors"][:5]},
            "bgym_action_error_count": {"minimum": len(bg_min["errors"]), "defaults": len(bg_def["errors"])},
        },
    )


if __name__ == "__main__":
    main()
