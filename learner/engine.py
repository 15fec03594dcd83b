"""Building the DeepSpeed engine of the learner, on GPUs and on CPUs, from one TrainConfig.

- GPU: bf16, ZeRO stage from `learner.zero_stage`, gradient checkpointing, FlashAttention-2 when flash_attn is
  installed (else PyTorch SDPA), NCCL.
- CPU (`DS_ACCELERATOR=cpu`, set here when no GPU is visible): fp32 weights (optionally bf16 autocast around the
  forward, `learner.cpu_autocast`), gloo, the same ZeRO stages.
- Optimizer: AdamW through DeepSpeed's config with `torch_adam: true`, i.e. torch.optim.AdamW. This skips
  DeepSpeed's FusedAdam / cpu_adam ops, which are JIT-compiled on first use (a CUDA toolchain on GPUs, ~45 s of C++
  on CPUs). The CPU accelerator still builds its small shared-memory comm op once (cached in ~/.cache/torch_extensions).
- LR: per phase (BC / RL): a linear warm-up, then constant (the paper's RL: 1e-6 constant) or cosine (BC).
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from common.config import TrainConfig
from common.net import free_port

if TYPE_CHECKING:
    from deepspeed import DeepSpeedEngine


def on_gpu() -> bool:
    return torch.cuda.is_available() and os.environ.get("DS_ACCELERATOR", "cuda") != "cpu"


def init_distributed(world_size: int = 1, rank: int = 0) -> None:
    """Start torch.distributed through DeepSpeed once per process.

    A single process (tests, the CPU demo) gets a loopback rendezvous on a port chosen here, passed as a tcp://
    init method and never written to os.environ: a MASTER_PORT left in the driver's environment would be inherited
    by every Ray worker started later, whose own learner would then try to bind the same port. Under a launcher or
    a Ray placement group the caller sets MASTER_ADDR / MASTER_PORT for every rank and they are used.
    """
    if not on_gpu():
        os.environ["DS_ACCELERATOR"] = "cpu"
    import deepspeed
    import torch.distributed as dist

    if dist.is_initialized():
        return
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=os.environ.get("LOCAL_RANK", "0")
    )
    if on_gpu():
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    from deepspeed.accelerator import get_accelerator

    backend = get_accelerator().communication_backend_name()
    if world_size == 1:
        deepspeed.init_distributed(
            dist_backend=backend,
            auto_mpi_discovery=False,
            init_method=f"tcp://127.0.0.1:{free_port()}",
            rank=0,
            world_size=1,
            verbose=False,
        )
    else:
        deepspeed.init_distributed(dist_backend=backend, verbose=False)


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


def autocast(cfg: TrainConfig) -> Any:
    """The forward's autocast context: bf16 on CPUs when `learner.cpu_autocast: bf16` (fp32 weights stay the
    master copy, as in GPU mixed precision); on GPUs the weights are bf16 already, so no autocast."""
    return torch.autocast(
        "cpu", dtype=torch.bfloat16, enabled=cfg.learner.cpu_autocast == "bf16" and not on_gpu()
    )


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


class PhaseLR(LRScheduler):
    """The LR of the current phase (BC or RL), set by `begin(peak, warmup_steps, total_steps, schedule)`:
    linear warm-up over `warmup_steps`, then constant, or cosine down to 10% of the peak at `total_steps`.
    Steps count from the phase's start; the phase settings are part of the state DeepSpeed checkpoints."""

    def __init__(self, optimizer: torch.optim.Optimizer, peak: float, warmup_steps: int) -> None:
        self.peak, self.warmup_steps, self.total_steps, self.schedule = peak, warmup_steps, 0, "constant"
        self.phase_start = 0
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        return [self.lr_at(self.last_epoch - self.phase_start) for _ in self.optimizer.param_groups]

    def lr_at(self, k: int) -> float:
        """The LR of the phase's step k (0-based)."""
        factor = 1.0 if self.warmup_steps <= 0 else min(1.0, (k + 1) / self.warmup_steps)
        if self.schedule == "cosine" and self.total_steps > self.warmup_steps:
            done = min(1.0, max(0.0, (k - self.warmup_steps) / (self.total_steps - self.warmup_steps)))
            factor *= 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * done))
        return self.peak * factor

    def begin(
        self, peak: float, warmup_steps: int = 0, total_steps: int = 0, schedule: str = "constant"
    ) -> None:
        if schedule not in ("constant", "cosine"):
            raise ValueError(f"unknown LR schedule {schedule!r} (constant | cosine)")
        self.peak, self.warmup_steps, self.total_steps, self.schedule = (
            peak,
            warmup_steps,
            total_steps,
            schedule,
        )
        self.phase_start = self.last_epoch
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


def inner_optimizer(opt: Any) -> torch.optim.Optimizer:
    """The torch optimizer that holds the state, under DeepSpeed's ZeRO wrappers (`.optimizer` chains)."""
    seen = 0
    while not isinstance(opt, torch.optim.Optimizer) and hasattr(opt, "optimizer") and seen < 5:
        opt, seen = opt.optimizer, seen + 1
    if not isinstance(opt, torch.optim.Optimizer):
        raise TypeError(f"no torch optimizer inside {type(opt).__name__}")
    return opt


def reset_optimizer(engine: DeepSpeedEngine, keep_second_moment: bool = False) -> bool:
    """Start a new phase's Adam; weights are untouched. By default forget the moments and step counts (a fresh
    Adam). `keep_second_moment`: zero the first moment (no push along the last phase's gradients) but keep the
    second moment and the step count, so the new phase's updates are the gradient scaled by the last phase's
    per-parameter gradient size (not a fresh Adam's sign of the gradient, which moves every parameter by the LR
    however small and noisy its gradient); with the step count kept the zeroed first moment builds up over the
    first steps (0.1, 0.19, 0.27, ... of a constant gradient), a warm-up of its own. Returns False when there was
    no state to keep."""
    opt = inner_optimizer(engine.optimizer)
    if not keep_second_moment or not opt.state:
        opt.state.clear()
        return False
    for state in opt.state.values():
        state["exp_avg"].zero_()
    return True


def decoder_layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    """The stack of decoder layers of a Hugging Face causal LM (`model.<base_model_prefix>.layers`: Llama, Qwen,
    Mistral and their kin)."""
    prefix = getattr(model, "base_model_prefix", "model")
    layers = getattr(getattr(model, prefix, None), "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ValueError(f"{type(model).__name__} has no decoder layer list at .{prefix}.layers")
    return layers


def freeze_lower_layers(model: torch.nn.Module, n: int, optimizer: object | None = None) -> dict[str, int]:
    """Train only what lies above the lowest `n` decoder layers: those layers and the input embeddings (with them
    a tied output head) stop taking gradients; every other parameter trains. n = 0 makes every parameter train
    again. Parameters without a gradient are skipped by torch's AdamW (no moment update, no weight decay), so they
    stay exactly as they are. `optimizer` (the engine's): only a plain torch optimizer allows this after start;
    ZeRO and DeepSpeed's bf16 optimizer keep flat master copies of the parameters that trained when the engine
    was built."""
    layers = decoder_layers(model)
    if not 0 <= n < len(layers):
        raise ValueError(
            f"rl.frozen_layers={n}: the model has {len(layers)} decoder layers; keep at least one"
        )
    if n and optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise ValueError(
            f"rl.frozen_layers={n} needs a plain torch optimizer (learner.zero_stage 0 on CPU); this engine's is "
            f"{type(optimizer).__name__}, whose flat master weights were built over every parameter"
        )
    model.requires_grad_(True)
    if n:
        model.get_input_embeddings().requires_grad_(False)
        for layer in layers[:n]:
            layer.requires_grad_(False)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return {"frozen_layers": n, "trainable_params": trainable}


@torch.no_grad()
def copy_weights(src: torch.nn.Module, dst: Any, zero_stage: int) -> None:
    """dst's weights := src's (same architecture). Under ZeRO-3 both are gathered one tensor at a time."""
    import contextlib

    dst_params = dict(getattr(dst, "module", dst).named_parameters())
    for name, p in src.named_parameters():
        q = dst_params[name]
        if zero_stage == 3:
            import deepspeed

            ctx = deepspeed.zero.GatheredParameters([p, q], modifier_rank=0)
        else:
            ctx = contextlib.nullcontext()
        with ctx:
            q.data.copy_(p.data.to(q.dtype))


def build_engine(model: torch.nn.Module, cfg: TrainConfig, world_size: int) -> tuple[Any, PhaseLR]:
    import deepspeed

    def scheduler(opt: torch.optim.Optimizer) -> PhaseLR:
        return PhaseLR(opt, cfg.rl.lr, cfg.rl.warmup_steps)

    params = [p for p in model.parameters() if p.requires_grad]
    engine, _, _, sched = deepspeed.initialize(
        model=model, model_parameters=params, config=ds_config(cfg, world_size), lr_scheduler=scheduler
    )
    if world_size == 1 and cfg.learner.zero_stage == 0:
        # Stage 0 averages the gradients over the ranks at each accumulation boundary by copying them all into
        # flat buffers, an all-reduce and copying back; on one rank that average is the gradient itself.
        engine.enable_backward_allreduce = False
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
