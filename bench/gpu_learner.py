"""GPU check of the learner's path: bf16, ZeRO-3, gradient checkpointing, FlashAttention-2 when installed, on a
random model of Qwen2.5-0.5B's shape built from a config (nothing is downloaded). Prints tokens/s of a BC step and an
M-GRPO step (with the ZeRO-3 reference model for the KL term), and of a plain PyTorch loop on the same batches.

    python bench/gpu_learner.py                    # one GPU; needs torch + transformers + deepspeed only
    python bench/gpu_learner.py --via project      # through learner.actor.LearnerActor (needs the project's deps)
    python bench/gpu_learner.py --layers 2 --hidden 128 --heads 2 --kv-heads 1 --vocab 1000 --prompt 64  # CPU smoke

`--via auto` (default) runs LearnerActor when the project imports, else the inline copy of its GPU path below
(same DeepSpeed config, left-padded micro-batches with logits only for the action window, M-GRPO loss with k3 KL).
Baseline, same run: plain PyTorch (torch.optim.AdamW fused, bf16 weights, same gradient checkpointing and forward),
no DeepSpeed. On a CPU the script falls back to DS_ACCELERATOR=cpu, gloo and fp32 (for a smoke run only).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common.net import free_port  # noqa: E402 - after the path set-up that makes the repository importable

GPU = False  # set in main()


def build_model(args, folder: Path) -> str:
    """A random Qwen2 with Qwen2.5-0.5B's shape (defaults), saved as an HF folder in the training dtype."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=32768,
        rope_theta=1e6,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16 if GPU else torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    n = sum(p.numel() for p in model.parameters())
    print(f"[gpu_learner] random Qwen2 model: {n / 1e6:.0f}M parameters, {args.layers} layers", flush=True)
    return str(folder)


def rows(args) -> list[tuple[list[int], int]]:
    """(ids, completion length) per turn: groups x group_size x turns rows of prompt + completion random ids."""
    import random

    rng = random.Random(0)
    n = args.groups * args.group_size * args.turns
    return [
        ([rng.randrange(2, args.vocab) for _ in range(args.prompt + args.completion)], args.completion)
        for _ in range(n)
    ]


# ---- the inline copy of the learner's GPU path -------------------------------------------------------------------
def ds_config(args, stage: int, train: bool) -> dict:
    conf = {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "train_batch_size": 1,
        "zero_optimization": {"stage": stage},
        "steps_per_print": 10**9,
    }
    if GPU:
        conf["bf16"] = {"enabled": True}
    if train:
        conf["gradient_clipping"] = 1.0
        conf["optimizer"] = {
            "type": "AdamW",
            "params": {
                "lr": 1e-6,
                "betas": [0.9, 0.999],
                "eps": 1e-8,
                "weight_decay": 0.0,
                "torch_adam": True,
            },
        }
    return conf


def load(path: str, attn: str, checkpointing: bool):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.bfloat16 if GPU else torch.float32, attn_implementation=attn
    )
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    return model


def batches(data, budget: int, device):
    """Same-length rows here, so a micro-batch is budget // length rows; completions sit at the right edge."""
    import torch

    length = len(data[0][0])
    per = max(1, budget // length)
    out = []
    for i in range(0, len(data), per):
        chunk = data[i : i + per]
        ids = torch.tensor([r[0] for r in chunk], device=device)
        c = chunk[0][1]
        pos = torch.arange(length, device=device).expand(len(chunk), -1)
        out.append(
            {
                "ids": ids,
                "attn": torch.ones_like(ids),
                "pos": pos,
                "keep": c + 1,
                "targets": ids[:, -c:],
                "adv": torch.tensor([1.0 if (i + k) % 2 else -1.0 for k in range(len(chunk))], device=device),
            }
        )
    return out


def logprobs(model, b):
    import torch

    out = model(
        input_ids=b["ids"],
        attention_mask=b["attn"],
        position_ids=b["pos"],
        logits_to_keep=b["keep"],
        use_cache=False,
    )
    logits = out.logits[:, :-1].float()
    picked = torch.gather(logits, -1, b["targets"].unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, -1)


def step_inline(engine, ref, bs, n_rows: int, rl: bool, plain_opt=None) -> None:
    """One optimizer step over all micro-batches: BC = mean NLL; RL = clipped ratio (old = detached current) per
    action token, per-action mean, k3 KL to the reference (beta 0.001). `plain_opt` = the no-DeepSpeed baseline."""
    import torch

    tokens = sum(b["targets"].numel() for b in bs)
    for k, b in enumerate(bs):
        if plain_opt is None:
            engine.set_gradient_accumulation_boundary(k == len(bs) - 1)
        lp = logprobs(engine, b)
        if rl:
            ratio = torch.exp(lp - lp.detach())
            adv = b["adv"].unsqueeze(-1)
            pg = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
            with torch.no_grad():
                ref_lp = logprobs(ref, b)
            d = ref_lp - lp
            loss = ((pg + 0.001 * (torch.exp(d) - d - 1)).mean(-1)).sum() / n_rows
        else:
            loss = -lp.sum() / tokens
        if plain_opt is None:
            engine.backward(loss, scale_wrt_gas=False)
        else:
            loss.backward()
    if plain_opt is None:
        engine.step()
    else:
        torch.nn.utils.clip_grad_norm_(engine.parameters(), 1.0)
        plain_opt.step()
        plain_opt.zero_grad(set_to_none=True)


def run_inline(args, path: str, data) -> dict:
    import deepspeed
    import torch
    from transformers.integrations import HfDeepSpeedConfig

    attn = "flash_attention_2" if GPU and _has("flash_attn") else "sdpa"
    conf = ds_config(args, 3, train=True)
    _zero3_hook = HfDeepSpeedConfig(conf)  # from_pretrained under zero.Init while this lives
    model = load(path, attn, checkpointing=True)
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=[p for p in model.parameters()], config=conf
    )
    ref_model = load(path, attn, checkpointing=False).requires_grad_(False).eval()
    ref, *_ = deepspeed.initialize(model=ref_model, config=ds_config(args, 3, train=False))
    device = torch.device("cuda", torch.cuda.current_device()) if GPU else torch.device("cpu")
    bs = batches(data, args.micro_batch_tokens, device)
    res = {"attn": attn, **time_steps(lambda rl: step_inline(engine, ref, bs, len(data), rl), args)}
    return res  # the engines and the HF hook go with this frame; run_plain also unsets the hook


def run_project(args, path: str, data) -> dict:
    from common.config import load_config
    from common.records import Observation, Trajectory, TrajectoryGroup, Turn
    from learner.actor import LearnerActor

    cfg = load_config(
        None,
        [
            f"logging.output_dir={tempfile.mkdtemp()}",
            "learner.resume=never",
            "learner.zero_stage=3",
            "model.gradient_checkpointing=true",
            "rl.kl_beta=0.001",
            f"learner.micro_batch_tokens={args.micro_batch_tokens}",
            f"model.max_context={args.prompt + args.completion + 300}",
        ],
    )
    learner = LearnerActor(cfg, model_path=path)
    turns = [
        Turn(index=0, observation=Observation(text=""), prompt_ids=ids[:-c], completion_ids=ids[-c:])
        for ids, c in data
    ]
    groups, per = [], args.group_size * args.turns
    for g in range(args.groups):
        trajs = [
            Trajectory(
                task_id=g,
                sample_idx=i,
                reward=float(i % 2),
                turns=turns[g * per + i * args.turns : g * per + (i + 1) * args.turns],
            )
            for i in range(args.group_size)
        ]
        groups.append(TrajectoryGroup(task_id=g, trajectories=trajs))
    res = {
        "attn": learner.engine.module.config._attn_implementation,
        **time_steps(lambda rl: learner.rl_step(groups) if rl else learner.bc_step(turns), args),
    }
    return res


def run_plain(args, path: str, data) -> dict:
    import gc

    import torch
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    gc.collect()
    unset_hf_deepspeed_config()  # the ZeRO-3 runs are over: plain from_pretrained from here on

    attn = "flash_attention_2" if GPU and _has("flash_attn") else "sdpa"
    device = torch.device("cuda", torch.cuda.current_device()) if GPU else torch.device("cpu")
    model = load(path, attn, checkpointing=True).to(device).train()
    ref = load(path, attn, checkpointing=False).to(device).requires_grad_(False).eval()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=GPU)
    bs = batches(data, args.micro_batch_tokens, device)
    res = time_steps(lambda rl: step_inline(model, ref, bs, len(data), rl, plain_opt=opt), args)
    return res


# ---- timing ------------------------------------------------------------------------------------------------------
def _has(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


def _sync() -> None:
    if GPU:
        import torch

        torch.cuda.synchronize()


def time_steps(step, args) -> dict:
    """One warm-up, then `--steps` timed steps of BC and of RL; median seconds each."""
    tokens = args.groups * args.group_size * args.turns * (args.prompt + args.completion)
    out = {}
    for kind, rl in (("bc", False), ("rl", True)):
        step(rl)
        _sync()
        secs = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step(rl)
            _sync()
            secs.append(time.perf_counter() - t0)
        med = sorted(secs)[len(secs) // 2]
        out[f"{kind}_seconds"], out[f"{kind}_tokens_per_s"] = med, tokens / med
    out["tokens_per_step"] = tokens
    if GPU:
        import torch

        out["max_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    return out


def main() -> int:
    global GPU
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--via", choices=["auto", "project", "inline"], default="auto")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=896)
    ap.add_argument("--intermediate", type=int, default=4864)
    ap.add_argument("--heads", type=int, default=14)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--turns", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=3072, help="prompt tokens per turn (observation + history)")
    ap.add_argument("--completion", type=int, default=256, help="action tokens per turn")
    ap.add_argument("--micro-batch-tokens", type=int, default=16384)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()

    import torch

    GPU = torch.cuda.is_available()
    if not GPU:
        os.environ["DS_ACCELERATOR"] = "cpu"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    import deepspeed

    deepspeed.init_distributed(dist_backend="nccl" if GPU else "gloo", verbose=False)
    via = args.via
    if via == "auto":
        try:
            import pydantic  # noqa: F401

            import learner.actor  # noqa: F401

            via = "project"
        except ImportError as e:
            print(f"[gpu_learner] project not importable ({e}); using the inline path", flush=True)
            via = "inline"
    folder = Path(tempfile.mkdtemp(prefix="gpu-learner-"))
    path = build_model(args, folder / "model")
    data = rows(args)
    res = {
        "via": via,
        "device": torch.cuda.get_device_name() if GPU else "cpu",
        "dtype": "bf16" if GPU else "fp32",
        "zero_stage": 3,
        "gradient_checkpointing": True,
        **(run_project if via == "project" else run_inline)(args, path, data),
    }
    if not args.no_baseline:
        plain = run_plain(args, path, data)
        res.update({f"plain_{k}": v for k, v in plain.items()})
        for kind in ("bc", "rl"):
            res[f"{kind}_vs_plain"] = res[f"{kind}_tokens_per_s"] / plain[f"{kind}_tokens_per_s"]
    print(
        f"[gpu_learner] {res['device']} {res['dtype']} ZeRO-3 + checkpointing, attention {res['attn']}, via {via}: "
        f"{res['tokens_per_step']} tokens/step"
    )
    for kind in ("bc", "rl"):
        line = f"  {kind.upper()} step {res[f'{kind}_tokens_per_s']:10.0f} tokens/s ({res[f'{kind}_seconds']:.2f} s)"
        if f"{kind}_vs_plain" in res:
            line += f" | plain torch {res[f'plain_{kind}_tokens_per_s']:10.0f} tokens/s -> x{res[f'{kind}_vs_plain']:.2f}"
        print(line)
    print(
        json.dumps(
            {k: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else v) for k, v in res.items()}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
