"""The in-place weight reload of an engine, fitted to what a pushed checkpoint holds.

vLLM reloads weights in place layer by layer (its worker's `reload_weights`): each layer is emptied, refilled from
the checkpoint, processed again (on CPUs the linear layers' weights are packed for oneDNN; quantized models are
re-quantized) and copied into its old storage, so the running engine keeps its buffers. Two kinds of layer get
nothing from a pushed checkpoint, and vLLM reports each on every push ("Failed to load weights") before it puts
the layer's old tensors back:

- a rotary embedding: its cos/sin table is a non-persistent buffer it computes itself, in no checkpoint. Putting
  the old table back is right, so it is planned with nothing to load and nothing is reported;
- a tied LM head: its weight is the embedding's parameter, which the pusher sends once, under the embedding's name
  (vLLM's models skip `lm_head.weight` of a tied model too). Here the report was true: the new values reach the
  shared storage, but the head is not processed again, so on CPUs it kept computing logits from the weights packed
  at start-up. The head is fed the embedding's tensor under its own name, from the same memory, so it is processed
  with the new weights like every other layer.

Any other layer the checkpoint leaves out is still reported by vLLM. `InferenceActor` names `WeightReloadPlan` as
vLLM's worker extension (`worker_extension_cls`, which vLLM mixes into its worker class) and calls
`reload_pushed_weights` through `collective_rpc`. vLLM is imported only here, in the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WORKER_EXTENSION = f"{__name__}.WeightReloadPlan"


def computed_layers(model: Any) -> list[tuple[str, Any]]:
    """(name, module) of the layers that hold only tensors they compute themselves (non-persistent buffers, never
    saved) and no parameter, such as a rotary embedding's cos/sin table."""
    out = []
    for name, module in model.named_modules():
        buffers = [n for n, b in module._buffers.items() if b is not None]
        params = [p for p in module._parameters.values() if p is not None]
        if buffers and not params and all(n in module._non_persistent_buffers_set for n in buffers):
            out.append((name, module))
    return out


def tied_parameters(model: Any) -> dict[str, str]:
    """{parameter name in a later layer: the name it has in the first layer holding it}, for parameters two layers
    share (a tied LM head: {"lm_head.weight": "model.embed_tokens.weight"})."""
    first: dict[int, str] = {}
    tied = {}
    for layer, module in model.named_modules(remove_duplicate=False):
        for pname, p in module._parameters.items():
            if p is None:
                continue
            name = f"{layer}.{pname}" if layer else pname
            if id(p) not in first:
                first[id(p)] = name
            elif first[id(p)] != name:
                tied[name] = first[id(p)]
    return tied


def checkpoint_names(folder: str | Path) -> set[str]:
    """The tensor names in a folder's safetensors shards (read from the headers only)."""
    from safetensors import safe_open

    names: set[str] = set()
    for shard in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as f:
            names.update(f.keys())
    return names


def checkpoint_tensors(folder: str | Path, feed: dict[str, str]) -> Iterator[tuple[str, Any]]:
    """Every tensor of the folder's shards; after a tensor named in `feed`'s values, the same tensor again under
    each name `feed` maps to it (a tied head right after its embedding)."""
    from safetensors import safe_open

    also: dict[str, list[str]] = {}
    for alias, source in feed.items():
        also.setdefault(source, []).append(alias)
    for shard in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(shard), "pt") as f:
            for name in f.keys():
                tensor = f.get_tensor(name)
                yield name, tensor
                for alias in also.get(name, []):
                    yield alias, tensor


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
        """vLLM's in-place reload from the folder `weights_path`, fitted as the module docstring says
        (`fit_plan=False`: vLLM's own reload of the folder, to compare). Returns {"computed": layers planned with
        nothing to load, "fed": tied parameters fed their source tensor, "warnings": what vLLM logged at WARNING
        or above during the reload}."""
        from vllm.model_executor.model_loader.reload.layerwise import get_layerwise_info

        worker: Any = self
        model = worker.model_runner.get_model()
        names = checkpoint_names(weights_path)
        computed = computed_layers(model) if fit_plan else []
        feed = (
            {a: s for a, s in tied_parameters(model).items() if a not in names and s in names}
            if fit_plan
            else {}
        )
        kept = []
        for _, module in computed:
            info = get_layerwise_info(module)
            kept.append((module, info.restore_metadata))
            info.restore_metadata = ({}, {})
        seen = _Warnings()
        vllm_logger = logging.getLogger("vllm")
        vllm_logger.addHandler(seen)
        try:
            if fit_plan:
                worker.reload_weights(weights_iterator=checkpoint_tensors(weights_path, feed))
            else:
                worker.reload_weights(weights_path=weights_path)
        finally:
            vllm_logger.removeHandler(seen)
            for module, metadata in kept:
                get_layerwise_info(module).restore_metadata = metadata
        return {
            "computed": [f"{name} ({type(module).__name__})" for name, module in computed],
            "fed": sorted(feed),
            "warnings": seen.lines,
        }
