"""The wire format of a weight push, shared by the pusher (`learner.weight_sync`) and the engine (`inference`).

Two forms of the same full weights, in Hugging Face naming:
- a folder of safetensors shards in RAM-backed shared memory (`/dev/shm/webagent-weights-*`), which vLLM's
  worker reloads in place ("file" push; the "object_store" push ends in one too, on the engine's node);
- one picklable payload of raw bytes per tensor (`pack_for_object_store`), `ray.put` once by the learner.

It lives on the receiving side: the engine must read exactly what the learner writes, and the rollout layer may
not import from the learner.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

NamedTensors = Iterable[tuple[str, "torch.Tensor"]] | dict[str, "torch.Tensor"]
PAYLOAD_FORMAT = "webagent-weights/1"
DEFAULT_SHARD_BYTES = 1 << 30
SCRATCH_PREFIX = "webagent-weights-"
_OWNER = re.compile(r"-p(\d+)-[0-9a-f]{12}$")  # the pid field `new_scratch_folder` writes


def shm_dir() -> Path:
    """RAM-backed scratch space: /dev/shm where it exists, else the temp dir."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


def iter_cpu_tensors(named: NamedTensors) -> Iterator[tuple[str, torch.Tensor]]:
    """Validate names and tensors; yield detached contiguous CPU tensors, no two sharing storage.

    Tied weights go once: a tensor that is the same view of the same memory as an earlier one (a `state_dict()`
    lists `lm_head.weight` and `model.embed_tokens.weight` of a tied model, one tensor) is left out. The engine
    builds its model from the same config, so it ties them too (vLLM skips `lm_head.weight` of a tied model).
    """
    import torch

    items = named.items() if isinstance(named, dict) else named
    seen: set[str] = set()
    views: set[tuple[Any, ...]] = set()
    storages: set[int] = set()
    for name, t in items:
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise TypeError(
                f"weights must be (str, torch.Tensor) pairs, got ({type(name).__name__}, {type(t).__name__})"
            )
        if name in seen:
            raise ValueError(f"tensor {name!r} appears twice in the pushed weights")
        seen.add(name)
        # Identity on the learner's device, before the copy to CPU would make tied tensors look separate.
        view = (str(t.device), t.data_ptr(), tuple(t.shape), t.stride(), t.dtype)
        if view in views:
            continue
        views.add(view)
        t = t.detach().to("cpu").contiguous()
        if t.untyped_storage().data_ptr() in storages:  # overlapping views of one buffer: safetensors refuses
            t = t.clone()
        storages.add(t.untyped_storage().data_ptr())
        yield name, t


def write_folder(named: NamedTensors, folder: Path, shard_bytes: int = DEFAULT_SHARD_BYTES) -> int:
    """Write safetensors shards (no index file: vLLM then loads every shard) into `folder`; returns bytes.
    The tensors go through `iter_cpu_tensors` (validated, tied weights once)."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    shard: dict[str, torch.Tensor] = {}
    size = total = 0
    n = 0

    def flush() -> None:
        nonlocal shard, size, n
        if shard:
            save_file(shard, str(folder / f"model-{n:05d}.safetensors"))
            shard, size, n = {}, 0, n + 1

    for name, t in iter_cpu_tensors(named):
        nbytes = t.numel() * t.element_size()
        if shard and size + nbytes > shard_bytes:
            flush()
        shard[name] = t
        size += nbytes
        total += nbytes
    flush()
    if n == 0:
        raise ValueError("no tensors to push")
    return total


def folder_bytes(folder: str | os.PathLike) -> int:
    path = Path(folder)
    if not path.is_dir():
        raise FileNotFoundError(
            f"weights folder {path} does not exist on this node (the 'file' push needs the "
            "engine on the learner's machine; use 'object_store' across machines)"
        )
    files = list(path.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors in {path}")
    return sum(f.stat().st_size for f in files)


def new_scratch_folder(prefix: str = "") -> Path:
    """A fresh folder name in shared memory that records its owner's pid (see `remove_stale_folders`)."""
    return shm_dir() / f"{SCRATCH_PREFIX}{prefix}p{os.getpid()}-{uuid.uuid4().hex[:12]}"


def remove_stale_folders(root: Path | None = None, *, legacy_age_s: float = 3600.0) -> list[Path]:
    """Remove the weight folders earlier pushes left in shared memory (a process killed between writing a folder
    and removing it): those whose owner process is gone, and, for folders named before owners were recorded,
    those older than `legacy_age_s`. A live owner's folder is kept, so a push in flight on this machine (another
    run's, or an engine's) is never touched. Returns the removed folders."""
    removed = []
    for path in sorted((root or shm_dir()).glob(f"{SCRATCH_PREFIX}*")):
        owner = _OWNER.search(path.name)
        if owner:
            stale = not _alive(int(owner.group(1)))
        else:
            try:
                stale = time.time() - path.stat().st_mtime > legacy_age_s
            except FileNotFoundError:  # removed by someone else meanwhile
                continue
        if stale and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def pack_for_object_store(named: NamedTensors) -> dict[str, Any]:
    """One picklable object: raw little-endian bytes per tensor (numpy has no bfloat16), plus dtype and shape."""
    import torch

    tensors = []
    for name, t in iter_cpu_tensors(named):
        raw = t.reshape(-1).view(torch.uint8).numpy()
        tensors.append((name, str(t.dtype).removeprefix("torch."), list(t.shape), raw))
    if not tensors:
        raise ValueError("no tensors to push")
    return {"format": PAYLOAD_FORMAT, "tensors": tensors}


def unpack_payload(payload: dict[str, Any]) -> Iterator[tuple[str, torch.Tensor]]:
    import torch

    if not isinstance(payload, dict) or payload.get("format") != PAYLOAD_FORMAT:
        raise ValueError(f"not a weight payload of format {PAYLOAD_FORMAT!r}")
    for name, dtype_name, shape, raw in payload["tensors"]:
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"tensor {name!r}: unknown dtype {dtype_name!r}")
        with warnings.catch_warnings():  # Ray hands out read-only buffers; we only read them
            warnings.simplefilter("ignore", UserWarning)
            flat = torch.frombuffer(raw, dtype=torch.uint8)
        yield name, flat.view(dtype).reshape(shape)


def payload_to_folder(payload: dict[str, Any], prefix: str = "") -> tuple[str, int]:
    """Engine side of "object_store": the fetched payload as a node-local shared-memory folder."""
    folder = new_scratch_folder(prefix)
    try:
        nbytes = write_folder(unpack_payload(payload), folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return str(folder), nbytes
