"""Learner speed options on CPU, each as a ratio against today's learner step in the same run.

    .venv/bin/python bench/bench_learner_options.py [--rows 8] [--prompt 600] [--completion 12] [--repeats 3]

The work is one RL-shaped micro-batch (rows of a long prompt and a short action, as the CPU demo's are), forward and
backward through SmolLM2-135M-Instruct exactly as LearnerActor runs it (left padding, logits only for the action
window, float32), plus an AdamW step over the trainable parameters. Contenders, timed in turns (median of
--repeats, after one warm-up each), wall and CPU seconds of this process:
  fp32          today's learner (the baseline)
  bf16-autocast torch.autocast("cpu", bfloat16) around the forward (AVX512-BF16 matmuls); master weights fp32
  lora-r16      peft LoRA (r=16, alpha=32, attention and MLP projections); the frozen base needs no weight grads
  frozen-15     bf16-autocast with rl.frozen_layers 15: the embeddings (tied head) and the lowest 15 of the 30
                decoder layers frozen (learner/engine.py, freeze_lower_layers), as configs/miniwob_train.yaml's RL
  frozen-20     the same with 20 frozen
Ratios > 1: faster than fp32; the frozen arms also against bf16-autocast, the learner they change.
Writes bench/results/learner_options.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def build(kind: str, path: str):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if kind == "lora-r16":
        from peft import LoraConfig, get_peft_model

        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=targets))
    elif kind.startswith("frozen-"):
        from learner.engine import freeze_lower_layers

        freeze_lower_layers(model, int(kind.split("-")[1]))
    params = [p for p in model.parameters() if p.requires_grad]
    return model, torch.optim.AdamW(params, lr=1e-6)


def step(model, opt, batch, autocast: bool) -> None:
    import torch

    from learner.algos import sft_loss, token_logprobs
    from learner.samples import batch_logits

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = batch_logits(model, batch)
    loss = sft_loss(token_logprobs(logits, batch.targets), batch.mask)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def main(argv: list[str] | None = None) -> int:
    import random

    import torch

    from common.models import ensure_default_model
    from learner.samples import Sample, collate

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=600)
    ap.add_argument("--completion", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    rng = random.Random(0)
    path = ensure_default_model()
    rows = []
    for _ in range(args.rows):
        n = args.prompt + rng.randint(-50, 50)
        ids = [rng.randrange(100, 40000) for _ in range(n + args.completion)]
        rows.append(Sample(input_ids=ids, loss_mask=[0] * n + [1] * args.completion))
    batch = collate(rows, 0)
    tokens = sum(len(r.input_ids) for r in rows)
    kinds = {"fp32": False, "bf16-autocast": True, "lora-r16": False, "frozen-15": True, "frozen-20": True}
    built = {k: build(k, path) for k in kinds}
    for k, (m, o) in built.items():  # warm-up
        step(m, o, batch, kinds[k])
    wall: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(args.repeats):
        for k, (m, o) in built.items():
            t0, c0 = time.perf_counter(), time.process_time()
            step(m, o, batch, kinds[k])
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    base_w, base_c = statistics.median(wall["fp32"]), statistics.median(cpu["fp32"])
    out = {"tokens_per_step": tokens, "threads": torch.get_num_threads(), "options": {}}
    print("| option | tokens/s (wall) | ratio (wall) | ratio (CPU s) |\n|---|---|---|---|")
    for k in kinds:
        w, c = statistics.median(wall[k]), statistics.median(cpu[k])
        out["options"][k] = {
            "wall_s": w,
            "cpu_s": c,
            "tokens_per_s": tokens / w,
            "ratio_wall": base_w / w,
            "ratio_cpu": base_c / c,
        }
        print(f"| {k} | {tokens / w:.0f} | {base_w / w:.2f} | {base_c / c:.2f} |")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from report import Figure, save

    figs = [
        Figure(
            f"learner step speed, {k} / fp32 (same RL-shaped micro-batch)",
            f"{out['options'][k]['tokens_per_s']:.0f} tok/s",
            f"{out['options']['fp32']['tokens_per_s']:.0f} tok/s",
            out["options"][k]["ratio_wall"],
        )
        for k in kinds
        if k != "fp32"
    ]
    figs += [
        Figure(
            f"learner step speed, {k} / bf16-autocast (same RL-shaped micro-batch)",
            f"{out['options'][k]['tokens_per_s']:.0f} tok/s",
            f"{out['options']['bf16-autocast']['tokens_per_s']:.0f} tok/s",
            out["options"][k]["tokens_per_s"] / out["options"]["bf16-autocast"]["tokens_per_s"],
        )
        for k in kinds
        if k.startswith("frozen-")
    ]
    save("learner_options", figs, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
