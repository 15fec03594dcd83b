"""Building the DeepSpeed engine of the learner, on GPUs and on CPUs, from one TrainConfig.

- GPU: bf16, ZeRO stage from `learner.zero_stage`, gradient checkpointing, FlashAttention-2 when flash_attn is
  installed (else PyTorch SDPA), NCCL.
- CPU (`DS_ACCELERATOR=cpu`, set here when no GPU is visible): fp32, gloo, the same ZeRO stages.
- Optimizer: AdamW through DeepSpeed's config with `torch_adam: true`, i.e. torch.optim.AdamW. This skips
  DeepSpeed's FusedAdam / cpu_adam ops, which are JIT-compiled on first use (a CUDA toolchain on GPUs, ~45 s of C++
  on CPUs). The CPU accelerator still builds its small shared-memory comm op once (cached in ~/.cache/torch_extensions).
- LR: constant after a linear warm-up (the paper: 1e-6 constant); the peak LR is switched per phase (BC / RL).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from common.config import TrainConfig
from common.net import free_port


def on_gpu() -> bool:
    return torch.cuda.is_available() and os.environ.get("DS_ACCELERATOR", "cuda") != "cpu"


def init_distributed(world_size: int = 1, rank: int = 0) -> None:
    """Start torch.distributed through DeepSpeed once per process.

    A single process (tests, the CPU demo) gets a loopback rendezvous on a free port; under a launcher or a Ray
    placement group the caller sets MASTER_ADDR / MASTER_PORT for every rank and they are kept.
    """
    if not on_gpu():
        os.environ["DS_ACCELERATOR"] = "cpu"
    import deepspeed
    import torch.distributed as dist

    if dist.is_initialized():
        return
    if world_size == 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=os.environ.get("LOCAL_RANK", "0")
    )
    if on_gpu():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    from deepspeed.accelerator import get_accelerator

    deepspeed.init_distributed(dist_backend=get_accelerator().communication_backend_name(), verbose=False)


def device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device()) if on_gpu() else torch.device("cpu")


def ds_config(cfg: TrainConfig, world_size: int) -> dict[str, Any]:
    """The DeepSpeed config dict: we feed micro-batches ourselves, so batch sizes are nominal (1 row, 1 step)."""
    zero: dict[str, Any] = {"stage": cfg.learner.zero_stage}
    if cfg.learner.zero_stage == 3:
        # Saving gathers full weights ourselves; this keeps DeepSpeed from also consolidating them.
        zero.update(stage3_gather_16bit_weights_on_model_save=False)
    offload = cfg.learner.offload_optimizer and cfg.learner.zero_stage >= 1
    if offload:
        # fp32 master weights and Adam moments live in host memory (what lets an 8B learner fit one 80 GB GPU).
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": on_gpu()}
    conf: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "train_batch_size": world_size,
        "gradient_clipping": cfg.learner.max_grad_norm,
        "optimizer": {
            "type": "AdamW",
            "params": {
                "lr": cfg.rl.lr,
                "betas": [0.9, 0.999],
                "eps": 1e-8,
                # torch's AdamW avoids compiling DeepSpeed's fused/CPU Adam ops, except with offload, where
                # DeepSpeed's CPU Adam is the fast path for the host-side step.
                "weight_decay": cfg.learner.weight_decay,
                "torch_adam": not offload,
            },
        },
        "zero_optimization": zero,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if on_gpu():
        conf["bf16"] = {"enabled": True}
    return conf


def attn_implementation(cfg: TrainConfig) -> str:
    if cfg.model.attn_implementation:
        return cfg.model.attn_implementation
    if on_gpu() and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def hf_zero3_config(conf: dict[str, Any]) -> Any | None:
    """Under ZeRO-3, an HfDeepSpeedConfig that the caller keeps alive: while it lives, `from_pretrained` builds the
    model inside `deepspeed.zero.Init`, so no rank ever holds the full model (transformers keeps a weak reference)."""
    if conf["zero_optimization"]["stage"] != 3:
        return None
    from transformers.integrations import HfDeepSpeedConfig

    return HfDeepSpeedConfig(conf)


def train_dtype() -> torch.dtype:
    return torch.bfloat16 if on_gpu() else torch.float32


def load_model(path: str, cfg: TrainConfig) -> torch.nn.Module:
    """The HF causal LM in the training dtype, gradient checkpointing on GPUs (or when the config asks)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=train_dtype(), attn_implementation=attn_implementation(cfg)
    )
    if on_gpu() or cfg.model.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.config.use_cache = False
    return model


class WarmupConstantLR(LRScheduler):
    """LR = peak * min(1, (step + 1) / warmup): linear warm-up, then constant. `peak` can change between phases."""

    def __init__(self, optimizer: torch.optim.Optimizer, peak: float, warmup_steps: int) -> None:
        self.peak = peak
        self.warmup_steps = warmup_steps
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        factor = 1.0 if self.warmup_steps <= 0 else min(1.0, (self.last_epoch + 1) / self.warmup_steps)
        return [self.peak * factor for _ in self.optimizer.param_groups]

    def set_peak(self, peak: float) -> None:
        self.peak = peak
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr


def build_engine(model: torch.nn.Module, cfg: TrainConfig, world_size: int) -> tuple[Any, WarmupConstantLR]:
    import deepspeed

    def scheduler(opt: torch.optim.Optimizer) -> WarmupConstantLR:
        return WarmupConstantLR(opt, cfg.rl.lr, cfg.learner.warmup_steps)

    params = [p for p in model.parameters() if p.requires_grad]
    engine, _, _, sched = deepspeed.initialize(
        model=model, model_parameters=params, config=ds_config(cfg, world_size), lr_scheduler=scheduler
    )
    return engine, sched


def build_reference(path: str, cfg: TrainConfig, world_size: int) -> Any:
    """A frozen copy of the starting policy for the KL term: a plain module, or a ZeRO-3 inference engine (so a
    large reference is partitioned like the policy)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=train_dtype(), attn_implementation=attn_implementation(cfg)
    )
    model.requires_grad_(False).eval()
    if cfg.learner.zero_stage != 3:
        return model.to(device())
    import deepspeed

    conf = {
        "train_micro_batch_size_per_gpu": 1,
        "train_batch_size": world_size,
        "zero_optimization": {"stage": 3},
        "steps_per_print": 10**9,
    }
    if on_gpu():
        conf["bf16"] = {"enabled": True}
    engine, *_ = deepspeed.initialize(model=model, config=conf)
    engine.eval()
    return engine
