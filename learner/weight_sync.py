"""Weight push: the learner's full (ZeRO-3 gathered) tensors, in Hugging Face naming, into every inference engine.

    pusher = WeightPusher("file")                       # or "object_store", or "nccl" on GPU clusters
    stats = pusher.push(learner.full_named_tensors(), engine_handles)    # -> PushStats(method, seconds, bytes, version)

Methods, one interface:
- "file": safetensors shards in shared memory (/dev/shm), written once; every engine reloads them in place through
  vLLM's worker `reload_weights` (collective_rpc). Any hardware; engines must share the learner's node.
- "object_store": the tensors are `ray.put` once as raw bytes; each engine's actor pulls that one object (Ray moves
  it across machines), writes it to its own node's shared memory and reloads as above. The local file is the cheap
  hand-over into vLLM's engine-core process: collective_rpc arguments are msgpack-encoded, so tensors passed
  inline arrive as nested lists (measured far slower).
- "nccl": a process group between the learner (rank 0) and the engines' workers built with vLLM's own
  weight-transfer engine (`weight_transfer_config=nccl`, which is vLLM's worker extension for this), one broadcast
  per tensor, loaded layer-wise in place. Needs CUDA on both sides; on CPU it raises before touching anything.
  It could not be exercised on this machine (no GPU): it is written against vLLM 0.32's API and untested.

Every push bumps one version shared by all engines (each generated turn records it) and logs seconds and bytes.
Engines are `InferenceActor`s or Ray handles to them; `apush` must run in the event loop that owns plain
(non-Ray) engines, `push` is the blocking form for a learner holding Ray handles.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

Method = Literal["file", "object_store", "nccl"]
NamedTensors = Iterable[tuple[str, "torch.Tensor"]] | dict[str, "torch.Tensor"]
PAYLOAD_FORMAT = "webagent-weights/1"
DEFAULT_SHARD_BYTES = 1 << 30


@dataclass(frozen=True)
class PushStats:
    method: str
    seconds: float  # learner-side wall time, serialisation through the last engine's reload
    bytes: int  # tensor bytes pushed (once, not per engine)
    version: int
    engines: int
    serialize_seconds: float  # part of `seconds` spent writing the file / ray.put
    engine_seconds: tuple[float, ...]  # each engine's own fetch + reload time


def shm_dir() -> Path:
    """RAM-backed scratch space: /dev/shm where it exists, else the temp dir."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


# ---- tensors <-> files and payloads (both sides of the wire) ---------------------------------------------------
def iter_cpu_tensors(named: NamedTensors) -> Iterator[tuple[str, torch.Tensor]]:
    """Validate names and tensors; yield detached contiguous CPU tensors, no two sharing storage."""
    import torch

    items = named.items() if isinstance(named, dict) else named
    seen: set[str] = set()
    storages: set[int] = set()
    for name, t in items:
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise TypeError(
                f"weights must be (str, torch.Tensor) pairs, got ({type(name).__name__}, {type(t).__name__})"
            )
        if name in seen:
            raise ValueError(f"tensor {name!r} appears twice in the pushed weights")
        seen.add(name)
        t = t.detach().to("cpu").contiguous()
        ptr = t.untyped_storage().data_ptr()
        if ptr in storages:  # tied weights (embed_tokens / lm_head) share storage; safetensors refuses that
            t = t.clone()
        storages.add(t.untyped_storage().data_ptr())
        yield name, t


def write_folder(
    named: Iterable[tuple[str, torch.Tensor]], folder: Path, shard_bytes: int = DEFAULT_SHARD_BYTES
) -> int:
    """Write safetensors shards (no index file: vLLM then loads every shard) into `folder`; returns bytes."""
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

    for name, t in named:
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
    return shm_dir() / f"webagent-weights-{prefix}{uuid.uuid4().hex[:12]}"


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


# ---- the pusher ----------------------------------------------------------------------------------------------
class WeightPusher:
    """Pushes full weights to every engine with one method; keeps the weight version all engines share."""

    def __init__(self, method: Method = "file", *, version: int = 0, shard_bytes: int = DEFAULT_SHARD_BYTES):
        if method not in ("file", "object_store", "nccl"):
            raise ValueError(f"unknown weight push method {method!r}: use 'file', 'object_store' or 'nccl'")
        self.method = method
        self.version = version
        self.shard_bytes = shard_bytes
        self._nccl: Any = None  # the learner's end of the NCCL group, made on the first nccl push

    def push(
        self, named_tensors: NamedTensors, engines: Sequence[Any], *, version: int | None = None
    ) -> PushStats:
        """Blocking push (for a learner that holds Ray handles to the engines)."""
        return asyncio.run(self.apush(named_tensors, engines, version=version))

    async def apush(
        self, named_tensors: NamedTensors, engines: Sequence[Any], *, version: int | None = None
    ) -> PushStats:
        if not engines:
            raise ValueError("no engines to push weights to")
        new_version = self.version + 1 if version is None else int(version)
        if self.method == "nccl":
            stats = await self._push_nccl(named_tensors, engines, new_version)
        else:
            stats = await self._push_staged(named_tensors, engines, new_version)
        self.version = new_version
        log.info(
            "weight push method=%s version=%d engines=%d bytes=%d seconds=%.3f (serialise %.3f)",
            stats.method,
            stats.version,
            stats.engines,
            stats.bytes,
            stats.seconds,
            stats.serialize_seconds,
        )
        return stats

    async def _push_staged(self, named: NamedTensors, engines: Sequence[Any], version: int) -> PushStats:
        from rollout_workers.remote import call

        t0 = time.perf_counter()
        folder: Path | None = None
        if self.method == "file":
            folder = new_scratch_folder("push-")
            handle: Any = str(folder)
        try:
            if folder is not None:
                nbytes = write_folder(iter_cpu_tensors(named), folder, self.shard_bytes)
            else:
                import ray

                payload = pack_for_object_store(named)
                nbytes = sum(int(raw.nbytes) for *_, raw in payload["tensors"])
                handle = ray.put(payload)  # once; every engine pulls this one copy
                del payload
            t_ser = time.perf_counter() - t0
            results = await asyncio.gather(
                *(call(e, "update_weights", handle, version=version) for e in engines)
            )
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        return PushStats(
            self.method,
            time.perf_counter() - t0,
            nbytes,
            version,
            len(engines),
            t_ser,
            tuple(float(r["seconds"]) for r in results),
        )

    async def _push_nccl(self, named: NamedTensors, engines: Sequence[Any], version: int) -> PushStats:
        """Rank 0 broadcasts each tensor while every engine's workers receive and load it (GPU clusters only)."""
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "weight push 'nccl' needs CUDA GPUs on the learner and the engines (NCCL "
                "broadcast); this machine has none: use 'file' (same node) or 'object_store'"
            )
        from rollout_workers.remote import call

        t0 = time.perf_counter()
        if self._nccl is None:
            self._nccl = await _open_nccl_group(engines)
        # Materialised first: every receiver sizes its buffers from the full name/dtype/shape list up front.
        pairs = [
            (n, t.detach().to("cuda").contiguous())
            for n, t in (named.items() if isinstance(named, dict) else named)
        ]
        names = [n for n, _ in pairs]
        dtypes = [str(t.dtype).removeprefix("torch.") for _, t in pairs]
        shapes = [list(t.shape) for _, t in pairs]
        receiving = asyncio.gather(
            *(call(e, "receive_nccl", names, dtypes, shapes, version=version) for e in engines)
        )
        await asyncio.to_thread(self._broadcast, [t for _, t in pairs])
        results = await receiving
        nbytes = sum(t.numel() * t.element_size() for _, t in pairs)
        return PushStats(
            "nccl",
            time.perf_counter() - t0,
            nbytes,
            version,
            len(engines),
            0.0,
            tuple(float(r["seconds"]) for r in results),
        )

    def _broadcast(self, tensors: list[torch.Tensor]) -> None:
        import torch

        stream = torch.cuda.current_stream()
        for t in tensors:
            self._nccl.broadcast(t, src=0, stream=stream)
        stream.synchronize()


async def _open_nccl_group(engines: Sequence[Any]) -> Any:
    """Rendezvous of the learner (rank 0) with each engine's workers (ranks 1..), through vLLM's helpers."""
    import socket

    from vllm.distributed.weight_transfer.nccl_common import trainer_init

    from rollout_workers.remote import call

    host = socket.gethostbyname(socket.gethostname())
    with socket.socket() as s:
        s.bind(("", 0))
        port = s.getsockname()[1]
    tp = [int((await call(e, "stats")).get("tensor_parallel_size", 1)) for e in engines]
    world = 1 + sum(tp)
    offsets = [1 + sum(tp[:i]) for i in range(len(engines))]
    joining = asyncio.gather(
        *(
            call(
                e,
                "init_nccl",
                {"master_address": host, "master_port": port, "rank_offset": off, "world_size": world},
            )
            for e, off in zip(engines, offsets, strict=True)
        )
    )
    group = await asyncio.to_thread(
        trainer_init, {"master_address": host, "master_port": port, "world_size": world}
    )
    await joining
    return group
