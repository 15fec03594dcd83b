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
Engines are `InferenceActor`s, Ray handles to them or `EngineHandle`s (held as handles); `apush` must run in the event loop that owns plain
(non-Ray) engines, `push` is the blocking form for a learner holding Ray handles.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from common.net import free_port
from rollout_workers.handles import EngineHandle
from rollout_workers.weight_format import (
    DEFAULT_SHARD_BYTES,
    NamedTensors,
    new_scratch_folder,
    pack_for_object_store,
    remove_stale_folders,
    write_folder,
)

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

Method = Literal["file", "object_store", "nccl"]


@dataclass(frozen=True)
class PushStats:
    method: str
    seconds: float  # learner-side wall time, serialisation through the last engine's reload
    bytes: int  # tensor bytes pushed (once, not per engine)
    version: int
    engines: int
    serialize_seconds: float  # part of `seconds` spent writing the file / ray.put
    engine_seconds: tuple[float, ...]  # each engine's own fetch + reload time


class WeightPusher:
    """Pushes full weights to every engine with one method; keeps the weight version all engines share.
    Starting one removes what earlier, crashed pushes left in shared memory (`remove_stale_folders`)."""

    def __init__(self, method: Method = "file", *, version: int = 0, shard_bytes: int = DEFAULT_SHARD_BYTES):
        if method not in ("file", "object_store", "nccl"):
            raise ValueError(f"unknown weight push method {method!r}: use 'file', 'object_store' or 'nccl'")
        self.method = method
        self.version = version
        self.shard_bytes = shard_bytes
        self._nccl: Any = None  # the learner's end of the NCCL group, made on the first nccl push
        # A push killed mid-way (a crashed or killed learner or engine) leaves its folder in shared memory.
        stale = remove_stale_folders()
        if stale:
            log.info("removed %d weight folder(s) left by earlier pushes: %s", len(stale), stale)

    def push(
        self, named_tensors: NamedTensors, engines: Sequence[object], *, version: int | None = None
    ) -> PushStats:
        """Blocking push (for a learner that holds Ray handles to the engines)."""
        return asyncio.run(self.apush(named_tensors, engines, version=version))

    async def apush(
        self, named_tensors: NamedTensors, engines: Sequence[object], *, version: int | None = None
    ) -> PushStats:
        if not engines:
            raise ValueError("no engines to push weights to")
        handles = [EngineHandle.of(e) for e in engines]
        new_version = self.version + 1 if version is None else int(version)
        if self.method == "nccl":
            stats = await self._push_nccl(named_tensors, handles, new_version)
        else:
            stats = await self._push_staged(named_tensors, handles, new_version)
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

    async def _push_staged(
        self, named: NamedTensors, engines: Sequence[EngineHandle], version: int
    ) -> PushStats:
        t0 = time.perf_counter()
        folder: Path | None = None
        if self.method == "file":
            folder = new_scratch_folder("push-")
            handle: Any = str(folder)
        try:
            if folder is not None:
                nbytes = write_folder(named, folder, self.shard_bytes)
            else:
                import ray

                payload = pack_for_object_store(named)
                nbytes = sum(int(raw.nbytes) for *_, raw in payload["tensors"])
                handle = ray.put(payload)  # once; every engine pulls this one copy
                del payload
            t_ser = time.perf_counter() - t0
            results = await asyncio.gather(*(e.update_weights(handle, version=version) for e in engines))
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        for r in results:  # a complete push reloads without warnings: pass any on to the learner's log
            for warning in r.get("reload_warnings", []):
                log.warning("%s reported while reloading weights v%d: %s", r["engine"], version, warning)
        return PushStats(
            self.method,
            time.perf_counter() - t0,
            nbytes,
            version,
            len(engines),
            t_ser,
            tuple(float(r["seconds"]) for r in results),
        )

    async def _push_nccl(
        self, named: NamedTensors, engines: Sequence[EngineHandle], version: int
    ) -> PushStats:
        """Rank 0 broadcasts each tensor while every engine's workers receive and load it (GPU clusters only)."""
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError(
                "weight push 'nccl' needs CUDA GPUs on the learner and the engines (NCCL "
                "broadcast); this machine has none: use 'file' (same node) or 'object_store'"
            )
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
        receiving = asyncio.gather(*(e.receive_nccl(names, dtypes, shapes, version=version) for e in engines))
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


async def _open_nccl_group(engines: Sequence[EngineHandle]) -> Any:
    """Rendezvous of the learner (rank 0) with each engine's workers (ranks 1..), through vLLM's helpers."""
    import socket

    from vllm.distributed.weight_transfer.nccl_common import trainer_init

    host = socket.gethostbyname(socket.gethostname())
    port = free_port("")
    tp = [int((await e.stats()).get("tensor_parallel_size", 1)) for e in engines]
    world = 1 + sum(tp)
    offsets = [1 + sum(tp[:i]) for i in range(len(engines))]
    joining = asyncio.gather(
        *(
            e.init_nccl(
                {"master_address": host, "master_port": port, "rank_offset": off, "world_size": world}
            )
            for e, off in zip(engines, offsets, strict=True)
        )
    )
    group = await asyncio.to_thread(
        trainer_init, {"master_address": host, "master_port": port, "world_size": world}
    )
    await joining
    return group
