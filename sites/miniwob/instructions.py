"""Read the instruction a MiniWoB++ task page generates for each seed, from the served pages.

    table = read_instructions({"click-button": [0, 1, 2]})       # starts its own server; task -> seed -> text
    table = read_instructions(wanted, url=srv.url, fresh=True)    # one freshly loaded page per (task, seed)

Two ways to read, both through the browser actor's own start routine (`browser_actors.miniwob`):
- fast (default): one page per task; the page is loaded once and the start routine (seed, then
  `core.startEpisodeReal()`) runs for seed after seed inside that page, in one in-page loop per batch of seeds.
  It gives the page's instruction as long as a task's problem depends on the seed only, not on what the previous
  episode left in the page;
- fresh: every (task, seed) on a newly loaded page, exactly as the browser actor resets. About a page load per
  seed, so it is kept for checking the fast path and for the tasks in FRESH_ONLY.

`python -m sites.miniwob utterances` writes the stored table with it; `python -m rollout_workers.evaluate --seeds`
reads the seeds the table lacks before its run starts.
"""

from __future__ import annotations

import asyncio
from typing import Any

# Tasks whose instruction on a reused page differs from a fresh page's (checked by `utterances --check`): none of
# the listed tasks today; a task added here is read one fresh page per seed.
FRESH_ONLY: frozenset[str] = frozenset()

# Seeds started per in-page loop: bounds one evaluate call's length and gives progress between calls.
BATCH = 100


def _batch_js() -> str:
    """An in-page loop over seeds: the browser actor's start routine verbatim, a wait for `WOB_TASK_READY`, the
    instruction. Returns the raw instructions (whitespace folded in Python, as `start` does)."""
    from browser_actors import miniwob as MW

    return f"""async ([seeds, maxTime, timeoutMs]) => {{
  const start = {MW._START_JS};
  const utterance = {MW._UTTERANCE_JS};
  const out = [];
  for (const seed of seeds) {{
    start([seed, maxTime]);
    const t0 = Date.now();
    while (WOB_TASK_READY !== true) {{
      if (Date.now() - t0 > timeoutMs) throw new Error('seed ' + seed + ': the task was not ready in time');
      await new Promise((r) => setTimeout(r, 5));
    }}
    out.push(String(utterance()));
  }}
  return out;
}}"""


async def _read_fast(page: Any, url: str, name: str, seeds: list[int], timeout_s: float) -> dict[str, str]:
    """seed -> instruction of one task, every seed started in one loaded page."""
    from browser_actors import miniwob as MW
    from common.tasks import MiniwobSpec

    await page.goto(f"{url}/miniwob/{name}.html")
    await page.wait_for_function(MW._LOADED_JS, timeout=timeout_s * 1000)
    max_time = MiniwobSpec(task=name, seed=0).episode_max_time_ms
    js, out = _batch_js(), {}
    for i in range(0, len(seeds), BATCH):
        chunk = seeds[i : i + BATCH]
        texts = await page.evaluate(js, [chunk, max_time, timeout_s * 1000])
        out.update({str(s): " ".join(t.split()) for s, t in zip(chunk, texts, strict=True)})
    return out


async def _read_fresh(page: Any, url: str, name: str, seeds: list[int], timeout_s: float) -> dict[str, str]:
    """seed -> instruction of one task, each seed on a newly loaded page (the browser actor's reset)."""
    from browser_actors import miniwob as MW
    from common.tasks import MiniwobSpec

    out = {}
    for seed in seeds:
        await page.goto(f"{url}/miniwob/{name}.html")
        out[str(seed)] = await MW.start(page, MiniwobSpec(task=name, seed=seed), timeout_s=timeout_s)
    return out


async def read_async(
    wanted: dict[str, list[int]], url: str, *, parallel: int = 4, fresh: bool = False, timeout_s: float = 30
) -> dict[str, dict[str, str]]:
    """task -> seed (as text) -> instruction for the (task, seeds) in `wanted`, `parallel` tasks at a time, each
    task on one page of its own context; `fresh` reads every task one fresh page per seed."""
    from playwright.async_api import async_playwright

    from common.chromium import CHROMIUM_ARGS, chromium_executable

    queue = [(n, sorted(set(s))) for n, s in wanted.items() if s]
    out: dict[str, dict[str, str]] = {}

    async def worker(browser: Any) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        try:
            while queue:
                name, seeds = queue.pop(0)
                read = _read_fresh if fresh or name in FRESH_ONLY else _read_fast
                out[name] = await read(page, url, name, seeds, timeout_s)
        finally:
            await context.close()

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        try:
            await asyncio.gather(*(worker(browser) for _ in range(max(1, min(parallel, len(queue))))))
        finally:
            await browser.close()
    return {n: dict(sorted(out[n].items(), key=lambda kv: int(kv[0]))) for n in sorted(out)}


def read_instructions(
    wanted: dict[str, list[int]], *, url: str | None = None, parallel: int = 4, fresh: bool = False
) -> dict[str, dict[str, str]]:
    """`read_async` from synchronous code; serves the pages itself (a free port, for the call) when `url` is None.
    Refused inside a running event loop, where it would stall that loop for a browser launch and the reads: async
    callers read before their loop starts (the run preflight does for `eval.miniwob_seeds`)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError(
            "read_instructions was called inside a running event loop: read the seeds before it starts "
            "(rollout_workers.preflight.check_run does for eval.miniwob_seeds), or await read_async"
        )
    if url is not None:
        return asyncio.run(read_async(wanted, url, parallel=parallel, fresh=fresh))
    from sites.miniwob.server import MiniwobServer

    with MiniwobServer() as srv:
        return asyncio.run(read_async(wanted, srv.url, parallel=parallel, fresh=fresh))
