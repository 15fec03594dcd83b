"""The in-place weight reload of an engine, with a reload plan that matches what a pushed checkpoint holds.

vLLM reloads weights in place layer by layer (its worker's `reload_weights`): each layer is emptied, refilled from
the checkpoint, processed again (CPU weight packing, quantization) and copied into its old storage, so the running
engine keeps its buffers. The plan it records at start-up includes every layer that holds a tensor, also layers
whose tensors no checkpoint carries: a rotary embedding's cos/sin table (a non-persistent buffer it computes
itself) and a tied LM head (the embedding's own parameter, which a pusher sends once, under the embedding's name).
Those get nothing, and vLLM reports "RotaryEmbedding: Failed to load weights" and "ParallelLMHead: Failed to load
weights" on every push before it puts their old tensors back. The weights were right; the plan was not.

`reload_pushed_weights` plans such layers with nothing to load for the one reload, when the checkpoint does not
name their tensors: they keep their tensors (the tied head sees the embedding's new values through the shared
parameter), nothing is reported, and any other layer the checkpoint leaves out is still reported by vLLM.
`InferenceActor` names `WeightReloadPlan` as vLLM's worker extension (`worker_extension_cls`, which vLLM mixes into
its worker class) and calls the method through `collective_rpc`. vLLM is imported only here, in the worker.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

WORKER_EXTENSION = f"{__name__}.WeightReloadPlan"


def derived_layers(model: Any) -> list[tuple[str, Any]]:
    """(name, module) of the layers that hold tensors a checkpoint need not carry: each parameter belongs to an
    earlier layer too (tied) and each buffer is non-persistent (never saved)."""
    owner: dict[int, str] = {}
    for name, module in model.named_modules():
        for p in module._parameters.values():
            if p is not None:
                owner.setdefault(id(p), name)
    out = []
    for name, module in model.named_modules():
        params = [p for p in module._parameters.values() if p is not None]
        buffers = [n for n, b in module._buffers.items() if b is not None]
        if not params and not buffers:
            continue
        tied = all(owner[id(p)] != name for p in params)
        transient = all(n in module._non_persistent_buffers_set for n in buffers)
        if tied and transient:
            out.append((name, module))
    return out


def checkpoint_names(folder: str | Path) -> set[str]:
    """The tensor names in a folder's safetensors shards (read from the headers only)."""
    from safetensors import safe_open

    names: set[str] = set()
    for shard in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as f:
            names.update(f.keys())
    return names


class _Warnings(logging.Handler):
    """Keeps the warnings vLLM logs during one reload (they still reach vLLM's own handlers)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")


class WeightReloadPlan:
    """vLLM worker extension; `self` is vLLM's worker (it has `model_runner` and `reload_weights`)."""

    def reload_pushed_weights(self, weights_path: str, fit_plan: bool = True) -> dict[str, list[str]]:
        """vLLM's in-place reload from `weights_path`, with the derived layers the checkpoint does not name
        planned empty (`fit_plan=False`: vLLM's own plan, to compare). Returns {"planned": those layers as
        "name (Class)", "warnings": what vLLM logged at WARNING or above during the reload}."""
        from vllm.model_executor.model_loader.reload.layerwise import get_layerwise_info

        worker: Any = self
        names = checkpoint_names(weights_path)
        planned = []
        for qualname, module in derived_layers(worker.model_runner.get_model()) if fit_plan else []:
            own = [*module._parameters, *module._buffers]
            if any(f"{qualname}.{n}" in names for n in own):
                continue
            info = get_layerwise_info(module)
            planned.append((qualname, module, info.restore_metadata))
            info.restore_metadata = ({}, {})
        seen = _Warnings()
        vllm_logger = logging.getLogger("vllm")
        vllm_logger.addHandler(seen)
        try:
            worker.reload_weights(weights_path=weights_path)
        finally:  # the next checkpoint may name them (a tied head saved under its own name)
            vllm_logger.removeHandler(seen)
            for _, module, metadata in planned:
                get_layerwise_info(module).restore_metadata = metadata
        return {
            "planned": [f"{qualname} ({type(module).__name__})" for qualname, module, _ in planned],
            "warnings": seen.lines,
        }
