"""Watch a checkpoint play one episode in a real Chromium, turn by turn.

    python -m rollout_workers.play --checkpoint runs/demo/checkpoints/ckpt-00000028 \
        --url http://127.0.0.1:7770/ --task "What is the price of the cheapest laptop?"
    python -m rollout_workers.play --checkpoint CKPT --config configs/miniwob_cpu.yaml --task-id click-button/100003
    python -m rollout_workers.play --checkpoint CKPT --config configs/cpu_demo.yaml --task-id 101002 --headed

The episode runs through the same pieces as evaluation, in this one process and without Ray: the episode loop
(rollout_workers/episode.py), the prompt builder with the config's grammar, compression and page budget, a vLLM
engine on the checkpoint at `inference.eval_temperature`, a `BrowserActor` (headless unless `--headed`) and, for a
task of the configured environment, the reward checks and a sandbox of the bundled sites. Each turn prints the page
(URL, title, size), the model's reply and the parsed action as it happens; the episode goes to `--out`
(`episode.jsonl` and `viewer.html`, the run viewer's page).

`--task-id` takes a task of either split of the configured environment: a bundled-site task id, a MiniWoB++
`task-name/seed` (or its id, `miniwob.task-name.seed`), or a task of `environment.{train,test}_tasks`. `--url` with
`--task` plays a free instruction, unscored, on a page of the configured sites (`environment.urls`, or the bundled
sites at their default ports): browsers are confined to those origins (common/confine.py), so a URL off that list
is refused before anything starts. Bad input is one `error:` line and exit status 2 (common/cli.py).
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.actions import render_action, try_parse
from common.allowlist import AllowList
from common.cli import check_url, config_from_args, fail, run
from common.config import TrainConfig, add_config_args, expand
from common.records import Observation, Trajectory, dump_jsonl
from common.tasks import Task
from rollout_workers.policy import ModelPolicy, Policy, Reply, Sampling

if TYPE_CHECKING:
    from rollout_workers.sandbox import Sandboxes


def site_urls(cfg: TrainConfig) -> dict[str, str]:
    """The sites a `--url` may be on: `environment.urls`, else (bundled) the bundled sites at their default ports."""
    env = cfg.environment
    if env.urls:
        return {k: expand(v) for k, v in env.urls.items()}
    if env.kind != "bundled":
        return {}
    from sites.core import load_sites

    return {s.key: f"http://127.0.0.1:{env.base_port + s.port_offset}" for s in load_sites()}


def url_task(cfg: TrainConfig, url: str, intent: str) -> tuple[Task, dict[str, str]]:
    """A task without checks that starts at `url`, and the site URLs its browser may reach; `fail` for a URL off
    the configured sites."""
    check_url(url)
    urls = site_urls(cfg)
    if cfg.environment.kind == "miniwob" and not urls:
        fail(f"--url {url}: MiniWoB++ pages are served by this command; play them by --task-id TASK/SEED")
    sites = [k for k, u in urls.items() if AllowList([u]).check(url) is None]
    if not sites:
        allowed = ", ".join(sorted(AllowList(list(urls.values())).origins)) or "none"
        fail(
            f"--url {url}: not on the allow-list of the configured sites ({allowed}); set environment.urls "
            "in the config or with --set to play another site"
        )
    task = Task(sites=sites[:1], task_id="play", start_url=url, intent=intent, eval={"eval_types": []})
    return task, urls


def find_task(cfg: TrainConfig, task_id: str) -> Task:
    """The task `task_id` of the train or test split (placeholders unfilled); `fail` when neither has it."""
    from rollout_workers.stack import split_tasks

    wanted = task_id
    m = re.fullmatch(r"([\w-]+)/(\d+)", task_id)
    if cfg.environment.kind == "miniwob" and m:
        wanted = f"miniwob.{m[1]}.{m[2]}"
    seen: list[str] = []
    for split in ("train", "test"):
        try:
            tasks = split_tasks(cfg, split)
        except ValueError as e:
            fail(str(e))
        for t in tasks:
            if str(t.task_id) == wanted:
                return t
        seen += [str(t.task_id) for t in tasks[:2]]
    if cfg.environment.kind == "miniwob" and m:
        from sites.miniwob.tasks import check_held_out, checked_names, seed_tasks

        try:  # a held-out seed of neither split: its instruction is read from its page
            checked_names([m[1]])
            check_held_out([int(m[2])])
        except ValueError as e:
            fail(f"--task-id {task_id}: {e}")
        return seed_tasks([int(m[2])], [m[1]])[0]
    example = (
        "TASK-NAME/SEED, e.g. click-button/100003" if cfg.environment.kind == "miniwob" else ", ".join(seen)
    )
    fail(f"--task-id {task_id}: no such task in the train or test split of this config (e.g. {example})")


def page_summary(text: str, width: int = 200) -> str:
    """The first texts of a page observation without its markup, on one line: what the page is about."""
    texts = [" ".join(html.unescape(t).split()) for t in re.split(r"<[^>]*>|\n", text)]
    out = " · ".join(dict.fromkeys(t for t in texts if len(t) > 1))
    return out if len(out) <= width else out[: width - 3] + "..."


class Narrator:
    """A policy that prints each turn as it happens: the page it is shown, then the reply and its parsed action."""

    def __init__(self, policy: Policy, grammar: str, thinking: bool) -> None:
        self.policy, self.grammar, self.thinking = policy, grammar, thinking
        self.source = policy.source
        self.turn = 0

    async def act(
        self, episode_id: str, task: Task, prompt_ids: list[int], obs: Observation, max_tokens: int
    ) -> Reply:
        self.turn += 1
        print(f"\n--- turn {self.turn}: {obs.url}  {obs.title!r}  (prompt: {len(prompt_ids)} tokens)")
        if obs.last_action_error:
            print(f"    last action error: {obs.last_action_error}")
        print(f"    page: {page_summary(obs.text)}")
        reply = await self.policy.act(episode_id, task, prompt_ids, obs, max_tokens)
        print("    model: " + " ".join(reply.text.split())[:300])
        action, error = try_parse(reply.text, grammar=self.grammar, thinking=self.thinking)
        print(f"    action: {render_action(action, self.grammar)}" if action else f"    no action: {error}")
        sys.stdout.flush()
        return reply

    def end(self, episode_id: str) -> None:
        self.policy.end(episode_id)


async def play(
    cfg: TrainConfig,
    task: Task,
    checkpoint: str,
    *,
    urls: dict[str, str],
    auth_dir: str = "",
    headed: bool = False,
    sandboxes: Sandboxes | None = None,
    rewarder: object | None = None,
    local_sites: dict[str, Any] | None = None,
) -> Trajectory:
    """One episode of `task` by the model at `checkpoint`, printed as it goes; scored when `rewarder` is given."""
    from transformers import AutoTokenizer

    from browser_actors import BrowserActor
    from common.prompts import PromptBuilder
    from rollout_workers.episode import EpisodeSettings, run_episode
    from rollout_workers.handles import BrowserHandle, RewardHandle
    from rollout_workers.inference import InferenceActor
    from rollout_workers.router import EngineRouter

    inf = cfg.inference
    builder = PromptBuilder.from_config(AutoTokenizer.from_pretrained(cfg.model_path), cfg.prompt)
    engine = InferenceActor(
        checkpoint, inf, max_model_len=cfg.model.max_context, dtype=cfg.model.dtype, weight_sync="file"
    )
    # MiniWoB++: the browser actor serves the pages itself (`local_sites`), as in training
    browser = BrowserActor(
        cfg.browser, auth_dir=auth_dir or None, env_urls=urls, headless=not headed, local_sites=local_sites
    )
    token = None
    try:
        print(f"[play] starting the engine on {checkpoint}", flush=True)
        await engine.start()
        router = EngineRouter([engine], timeout_s=inf.generate_timeout_s)
        sampling = Sampling(max_tokens=inf.max_new_tokens, temperature=inf.eval_temperature)
        token = await sandboxes.new() if sandboxes is not None else None
        print(f"[play] task {task.task_id}: {task.intent}\n[play] start: {task.start_url}", flush=True)
        result = await run_episode(
            task,
            browser=BrowserHandle(browser),
            policy=Narrator(ModelPolicy(router, sampling), cfg.prompt.grammar, cfg.prompt.thinking),
            builder=builder,
            settings=EpisodeSettings.from_config(cfg),
            sandbox=token,
        )
        traj = result.trajectory
        if rewarder is not None and result.final is not None:
            reward = await RewardHandle.of(rewarder).score(task, result.final, timeout=cfg.reward.timeout_s)
            traj.reward, traj.checks = reward.score, reward.checks
        return traj
    finally:
        if token is not None:
            await sandboxes.drop(token)
        browser.close()
        await engine.shutdown()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m rollout_workers.play", description=__doc__.split("\n")[0])
    add_config_args(p)
    p.add_argument("--checkpoint", required=True, help="model folder (Hugging Face format) to play")
    p.add_argument("--url", help="start page (on the configured sites); needs --task")
    p.add_argument("--task", help="the instruction to follow from --url")
    p.add_argument("--task-id", help="a task of the configured environment (MiniWoB++: TASK-NAME/SEED)")
    p.add_argument("--headed", action="store_true", help="show the browser window (needs a display)")
    p.add_argument("--out", default="runs/play", help="folder for episode.jsonl and viewer.html")
    args = p.parse_args(argv)
    # The console shows the turns, not the engine's start-up.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    # Every input is checked before an engine, a browser or a site starts.
    if (args.url is None) == (args.task_id is None):
        fail(
            "give either --url URL --task INSTRUCTION, or --task-id ID (a task of the configured environment)"
        )
    if args.url is not None and not (args.task or "").strip():
        fail(f"--url {args.url}: needs --task INSTRUCTION (what the agent should do there)")
    if args.task_id is not None and args.task is not None:
        fail("--task goes with --url; a --task-id brings its own instruction")
    if args.headed and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        fail("--headed needs a display (DISPLAY is not set); leave it out to play headless")
    cfg = config_from_args(args)
    from rollout_workers.preflight import check_run

    check_run(cfg, checkpoint=args.checkpoint)
    if args.url is not None:
        task, urls = url_task(cfg, args.url, args.task.strip())
        traj = asyncio.run(play(cfg, task, args.checkpoint, urls=urls, headed=args.headed))
    else:
        traj = _play_task(cfg, find_task(cfg, args.task_id), args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dump_jsonl([traj], str(out / "episode.jsonl"))
    from rollout_workers.viewer import write_viewer

    viewer = write_viewer(out)  # the folder's viewer.html, from episode.jsonl
    reward = "unscored" if traj.reward is None else f"{traj.reward:g}"
    print(
        f"\n[play] {traj.termination} after {len(traj.turns)} turn(s); answer: {traj.answer!r}; reward: {reward}"
    )
    if traj.failure:
        print(f"[play] failure: {traj.failure}")
    print(f"[play] -> {out / 'episode.jsonl'}, {viewer}")
    return 0


def _play_task(cfg: TrainConfig, task: Task, args: argparse.Namespace) -> Trajectory:
    """A task of the environment: its sites (started here when bundled or MiniWoB++), a sandbox, the checks."""
    from reward import RewardActor
    from rollout_workers.stack import Stack

    stack = Stack(cfg)
    rewarder = None
    try:
        stack.start_environment()
        sandboxes = None
        if cfg.environment.kind == "bundled":
            from rollout_workers.sandbox import SandboxClient

            key = stack.sites.sandbox_key if stack.sites is not None else None
            sandboxes = SandboxClient(next(iter(stack.urls.values())), key=key)
        helpers = "bundled" if cfg.environment.kind == "bundled" else "webarena"
        rewarder = RewardActor(cfg.reward, env_urls=stack.urls, helpers=helpers)
        return asyncio.run(
            play(
                cfg,
                task.with_urls(stack.urls),
                args.checkpoint,
                urls=stack.urls,
                auth_dir=stack.auth_dir,
                headed=args.headed,
                sandboxes=sandboxes,
                rewarder=rewarder,
                local_sites=stack.local_sites,
            )
        )
    finally:
        if rewarder is not None:
            rewarder.close()
        stack.close()


if __name__ == "__main__":
    run(main)
