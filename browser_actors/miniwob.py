"""MiniWoB++ episodes on a task page: seed, start, wait until ready, read the instruction and the page's reward.

The page's core.js holds the episode: `Math.seedrandom(seed)` fixes the problem `genProblem()` draws,
`core.startEpisodeReal()` starts it, and the task calls `core.endEpisode(reward)`, which sets the globals
`WOB_DONE_GLOBAL`, `WOB_RAW_REWARD_GLOBAL`, `WOB_REWARD_GLOBAL`, `WOB_REWARD_REASON` (the same hooks BrowserGym's
MiniWoB environment uses). Differences from a human session, all deliberate:
- the human display (reward HUD, click canvas, START cover) and the instruction box are hidden with CSS: the
  instruction reaches the model as the task's intent, and the HUD would show a countdown and past rewards;
- the in-page countdown is not drawn (its per-second DOM writes would keep the settle wait busy);
- once the page has given its reward the episode stays finished: core.js would show the START cover for the next
  episode, which would let a later click start an unseeded problem;
- the clock is the task's `episode_max_time_ms` (BrowserGym's 1,000,000 ms by default, not MiniWoB++'s 10 s: an
  LLM turn is slower than a human's); the turn budget bounds an episode instead.
A reloaded or different page has no `__waMiniwob` marker with the episode's seed, so its reward never counts.
"""

from __future__ import annotations

from typing import Any

from common.records import MiniwobResult
from common.tasks import MiniwobSpec

# core.js has run window.onload (which made the START cover) and defines the episode API.
_LOADED_JS = """() => document.readyState === 'complete' && typeof core === 'object'
  && typeof core.startEpisodeReal === 'function' && document.getElementById('sync-task-cover') !== null"""

_START_JS = """([seed, maxTime]) => {
  const style = document.createElement('style');
  style.textContent = '#reward-display, #click-canvas, #sync-task-cover, #query { display: none !important; }';
  document.head.appendChild(style);
  document.body.removeEventListener('click', core.canvasDrawClick);
  core.countdownTimer = function () {};
  core.startEpisode = function () {};
  Math.seedrandom(seed);
  core.EPISODE_MAX_TIME = maxTime;
  core.startEpisodeReal();
  window.__waMiniwob = { seed: seed };
}"""

_UTTERANCE_JS = (
    """() => { const u = core.getUtterance(); return typeof u === 'string' ? u : String(u.utterance); }"""
)

_STATE_JS = """(seed) => {
  if (typeof WOB_DONE_GLOBAL === 'undefined' || !window.__waMiniwob || window.__waMiniwob.seed !== seed)
    return null;
  return { done: !!WOB_DONE_GLOBAL, raw_reward: Number(WOB_RAW_REWARD_GLOBAL), reward: Number(WOB_REWARD_GLOBAL),
           reason: WOB_REWARD_REASON === null || WOB_REWARD_REASON === undefined ? null : String(WOB_REWARD_REASON) };
}"""


async def start(page: Any, spec: MiniwobSpec, timeout_s: float) -> str:
    """Seed and start the episode on the loaded task page; returns the instruction the page generated."""
    ms = timeout_s * 1000
    try:
        await page.wait_for_function(_LOADED_JS, timeout=ms)
    except Exception as e:  # noqa: BLE001 - re-raised with what was expected of the page
        raise RuntimeError(f"{page.url} is not a MiniWoB++ task page (core.js did not load): {e}") from e
    await page.evaluate(_START_JS, [spec.seed, spec.episode_max_time_ms])
    await page.wait_for_function("() => WOB_TASK_READY === true", timeout=ms)
    return " ".join(str(await page.evaluate(_UTTERANCE_JS)).split())


async def read(page: Any, spec: MiniwobSpec, utterance: str) -> MiniwobResult:
    """The page's episode state now; `started=False` when the page no longer holds the seeded episode."""
    out = MiniwobResult(task=spec.task, seed=spec.seed, utterance=utterance)
    try:
        state = await page.evaluate(_STATE_JS, spec.seed)
    except Exception:  # noqa: BLE001 - a page mid-navigation or closed holds no episode
        state = None
    if state is None:
        return out
    return out.model_copy(update={"started": True, **state})


def check_intent(task_id: Any, intent: str, utterance: str) -> None:
    """A task config whose intent is not what its page asks would train on a wrong instruction: refuse it."""
    if intent and " ".join(intent.split()) != utterance:
        raise ValueError(
            f"task {task_id}: intent {intent!r} differs from the page's instruction {utterance!r} "
            "(regenerate the MiniWoB++ task list: python -m sites.miniwob tasks)"
        )
