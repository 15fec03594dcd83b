"""Reading MiniWoB++ instructions from the pages: the fast path (one page per task, seed after seed) gives what a
fresh page per seed gives and what the stored table holds, and explicit seeds outside the table are read at once.

One server; each read launches its own headless Chromium (about 20 s on 2 cores).
"""

from __future__ import annotations

import pytest

from sites.miniwob.instructions import read_instructions
from sites.miniwob.server import MiniwobServer
from sites.miniwob.tasks import SEEDS, seed_tasks, utterances

# Tasks whose problem draws on more than one widget or text (a reused page has most to leave behind), a few
# stored seeds of each split, and seeds that the table does not hold.
SAMPLE_TASKS = ["click-checkboxes-soft", "use-autocomplete", "search-engine", "terminal"]
STORED = [0, 1, 250, 499, SEEDS["test"][0], SEEDS["test"][-1]]
UNSTORED = [100_050, 123_456]


@pytest.fixture(scope="module")
def server():
    with MiniwobServer() as srv:
        yield srv


def test_fast_path_gives_the_fresh_pages_and_the_stored_instructions(server):
    wanted = {n: STORED + UNSTORED for n in SAMPLE_TASKS}
    fast = read_instructions(wanted, url=server.url, parallel=2)
    fresh = read_instructions(wanted, url=server.url, parallel=2, fresh=True)
    assert fast == fresh
    table = utterances()
    assert all(fast[n][str(s)] == table[n][str(s)] for n in SAMPLE_TASKS for s in STORED)


def test_seed_tasks_read_the_seeds_the_table_lacks(server):
    tasks = seed_tasks([UNSTORED[1], SEEDS["test"][0]], ["enter-text", "click-button"], url=server.url)
    assert [t.task_id for t in tasks] == [
        f"miniwob.{n}.{s}" for s in (UNSTORED[1], SEEDS["test"][0]) for n in ("enter-text", "click-button")
    ]
    fresh = read_instructions({"enter-text": [UNSTORED[1]]}, url=server.url, fresh=True)
    assert tasks[0].intent == fresh["enter-text"][str(UNSTORED[1])] and tasks[0].intent.startswith("Enter")
    assert tasks[3].intent == utterances()["click-button"][str(SEEDS["test"][0])]


def test_a_read_inside_a_running_event_loop_is_refused_by_name():
    """An async caller gets an error naming what to do instead (read before the loop starts), not asyncio's
    `asyncio.run() cannot be called from a running event loop` after the pages were served; nothing is launched."""
    import asyncio

    async def in_the_loop() -> dict[str, dict[str, str]]:
        return read_instructions({"enter-text": [UNSTORED[0]]}, url="http://127.0.0.1:9")

    with pytest.raises(RuntimeError, match="inside a running event loop: read the seeds before it starts"):
        asyncio.run(in_the_loop())
