"""Checkpoint folders: crash-safe writing, `resume: auto`, pruning, RNG state, and the Hugging Face weights folder.

A checkpoint is `<root>/ckpt-<iteration:08d>/`, itself a Hugging Face model folder (config.json, *.safetensors,
tokenizer files) that `transformers.AutoModelForCausalLM.from_pretrained` and `vllm serve` load directly, plus:
    deepspeed/          optimizer, scheduler and (partitioned) module states, written by DeepSpeed
    rng/rank<r>.pt      Python / NumPy / torch (and CUDA) RNG states of each rank
    trainer_state.json  `LearnerState`: iteration counters, weight version, the driver's extra state
    COMPLETE            written last, after every file and folder above is fsynced
Everything is written into `<root>/.tmp-ckpt-<iteration>/` and renamed into place after COMPLETE is written, so a
crash while writing leaves either a temp folder (ignored, removed at the next save) or nothing; never a folder that
looks complete. The temp name is deterministic so that every rank of a multi-process learner writes into the same
folder (on a shared file system). `save` and `load` are the whole choreography of a multi-rank DeepSpeed learner.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from learner import engine as eng

if TYPE_CHECKING:
    from deepspeed import DeepSpeedEngine

log = logging.getLogger(__name__)

PREFIX = "ckpt-"
MARKER = "COMPLETE"
STATE_FILE = "trainer_state.json"
SHARD_BYTES = 4 * 1024**3  # safetensors shard size, as HF folders usually have


@dataclass
class LearnerState:
    """What a learner saves with every checkpoint (trainer_state.json) and takes back on resume."""

    iteration: int = 0  # learner steps of either kind: names the checkpoint folder
    bc_steps: int = 0
    rl_steps: int = 0
    optimizer_steps: int = 0  # steps that changed the parameters (an RL batch with no signal makes none)
    no_signal_batches: int = 0  # RL batches whose advantages were all zero
    weight_version: int = 0  # the version of the last weights pushed to the engines
    rl_reference: str | None = None  # the KL reference RL began with (the BC result), kept for a resumed run
    tag: str | None = None  # the driver's name for this checkpoint ("bc", "rl-4", "rl")
    driver_iteration: int | None = None  # the driver's RL iteration when it was written
    extra: dict[str, Any] = field(default_factory=dict)  # the driver's own state (its task sampler)
    model_source: str = ""  # the model folder the learner started from

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LearnerState:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            log.warning("trainer state: ignoring unknown fields %s", unknown)
        return cls(**{k: v for k, v in data.items() if k in known})


def checkpoint_name(iteration: int) -> str:
    return f"{PREFIX}{iteration:08d}"


def iteration_of(path: Path) -> int:
    return int(path.name[len(PREFIX) :])


def is_complete(path: str | Path) -> bool:
    path = Path(path)
    return path.is_dir() and (path / MARKER).is_file() and (path / STATE_FILE).is_file()


def list_complete(root: str | Path) -> list[Path]:
    """Complete checkpoints under root, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.name.startswith(PREFIX) and p.name[len(PREFIX) :].isdigit()]
    return sorted((p for p in found if is_complete(p)), key=iteration_of)


def latest(root: str | Path) -> Path | None:
    done = list_complete(root)
    return done[-1] if done else None


def resolve_resume(resume: str, root: str | Path) -> Path | None:
    """`auto` -> the newest complete checkpoint under root (None if there is none); `never` -> None;
    anything else is a checkpoint folder, which must be complete."""
    if resume == "never":
        return None
    if resume == "auto":
        return latest(root)
    path = Path(resume)
    if not is_complete(path):
        raise FileNotFoundError(
            f"learner.resume={resume!r} is not a complete checkpoint "
            f"(missing folder, {MARKER} or {STATE_FILE})"
        )
    return path


def temp_dir(root: str | Path, iteration: int) -> Path:
    return Path(root) / f".tmp-{checkpoint_name(iteration)}"


def begin(root: str | Path, iteration: int) -> Path:
    """Fresh temp folder for a checkpoint (rank 0 calls this, then all ranks write into it)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob(f".tmp-{PREFIX}*"):  # left by a crash: never complete, safe to drop
        shutil.rmtree(stale, ignore_errors=True)
    tmp = temp_dir(root, iteration)
    tmp.mkdir()
    return tmp


def _fsync_write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Flush every file under root, then every folder (their entries), to the disk.

    Without this a power cut or a kernel crash after COMPLETE can leave a folder that looks complete and holds
    empty or partial weight files: the page cache, not the disk, held them when the marker was written.
    """
    folders = [root]
    for dirpath, dirnames, filenames in os.walk(root):
        folders.extend(Path(dirpath) / d for d in dirnames)
        for name in filenames:
            fd = os.open(Path(dirpath) / name, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for folder in folders:
        _fsync_dir(folder)


def commit(tmp: Path, state: LearnerState) -> Path:
    """Flush everything written so far, write the state and the COMPLETE marker, then move the folder into place
    (replacing a same-iteration one)."""
    _fsync_write(tmp / STATE_FILE, json.dumps(state.to_json(), indent=2, sort_keys=True))
    fsync_tree(tmp)
    _fsync_write(tmp / MARKER, "ok\n")
    _fsync_dir(tmp)
    final = tmp.parent / checkpoint_name(state.iteration)
    if final.exists():
        trash = tmp.parent / f".tmp-old-{final.name}"
        final.rename(trash)
        tmp.rename(final)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        tmp.rename(final)
    _fsync_dir(final.parent)  # make the rename itself durable
    return final


def prune(root: str | Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` complete checkpoints (keep <= 0 keeps everything)."""
    if keep <= 0:
        return []
    old = list_complete(root)[:-keep]
    for p in old:
        shutil.rmtree(p, ignore_errors=True)
    return old


def read_state(path: str | Path) -> LearnerState:
    return LearnerState.from_json(json.loads((Path(path) / STATE_FILE).read_text(encoding="utf-8")))


# -- the choreography of a (multi-rank) DeepSpeed learner -------------------------------------------------------
def save(
    engine: DeepSpeedEngine,
    rank: int,
    root: str | Path,
    state: LearnerState,
    weights: Iterable[tuple[str, torch.Tensor]],
    tokenizer: Any = None,
    *,
    optimizer: bool = True,
    keep: int = 0,
) -> Path:
    """Every rank calls this together: rank 0 opens the temp folder and writes the full weights (`weights` is
    gathered by all ranks under ZeRO-3, so every rank iterates it), each rank writes its DeepSpeed partition (unless
    `optimizer` is False) and its RNG state, then rank 0 commits and prunes to the newest `keep`. Returns the
    checkpoint folder (complete on return, on every rank)."""
    import torch.distributed as dist

    root = Path(root)
    if rank == 0:
        begin(root, state.iteration)
    dist.barrier()
    tmp = temp_dir(root, state.iteration)
    if rank == 0:
        module = engine.module
        save_hf_weights(tmp, weights, module.config, getattr(module, "generation_config", None), tokenizer)
    else:
        for _ in weights:  # take part in the gathers
            pass
    if optimizer:
        engine.save_checkpoint(str(tmp / "deepspeed"), tag="state", save_latest=False)
    save_rng(tmp / "rng" / f"rank{rank}.pt")
    dist.barrier()
    if rank == 0:
        commit(tmp, state)
        prune(root, keep)
    dist.barrier()
    return root / checkpoint_name(state.iteration)


def load(engine: DeepSpeedEngine, rank: int, path: str | Path) -> tuple[Path, LearnerState]:
    """Restore a DeepSpeed learner from a checkpoint folder, or from the newest complete one under a root: its
    DeepSpeed state (weights, optimizer, scheduler) when it has one, else its weights with a fresh optimizer; the
    rank's RNG state. Returns the folder used and its saved state."""
    path = Path(path)
    if not is_complete(path):
        found = latest(path)
        if found is None:
            raise FileNotFoundError(f"{path} is neither a complete checkpoint nor a folder holding one")
        path = found
    if (path / "deepspeed").is_dir():
        check_zero_stage(path, engine.zero_optimization_stage())
        load_path, _ = engine.load_checkpoint(
            str(path / "deepspeed"), tag="state", load_optimizer_states=True, load_lr_scheduler_states=True
        )
        if load_path is None:
            raise RuntimeError(f"DeepSpeed could not load {path / 'deepspeed'}")
    else:  # weights only: the weights, the optimizer's fp32 master copy of them, and a fresh optimizer
        load_hf_weights(path, engine.module)
        master = getattr(engine.optimizer, "refresh_fp32_params", None)
        if master is not None:
            master()
        elif not isinstance(engine.optimizer, torch.optim.Optimizer):
            raise RuntimeError(f"{path} holds weights only, which this ZeRO stage cannot load")
        # else a bare torch optimizer (ZeRO stage 0 in fp32) steps the module's own parameters: no master copy
        eng.reset_optimizer(engine)
    rng = path / "rng" / f"rank{rank}.pt"
    if rng.exists():
        load_rng(rng)
    return path, read_state(path)


def saved_zero_stage(path: str | Path) -> int | None:
    """The ZeRO stage a checkpoint's DeepSpeed state was written with, read from its file names (stage 3: the
    module is partitioned too; stages 1-2: the optimizer states are; stage 0: neither), None without one."""
    state = Path(path) / "deepspeed" / "state"
    if not state.is_dir():
        return None
    names = [f.name for f in state.iterdir()]
    if any(n.startswith("zero_pp_rank_") and n.endswith("_model_states.pt") for n in names):
        return 3
    if any(n.endswith("_optim_states.pt") for n in names):
        return 2  # 1 and 2 write the same files and load into each other
    return 0


def check_zero_stage(path: str | Path, stage: int) -> None:
    """Refuse, with what to do, a checkpoint whose optimizer state another ZeRO stage wrote (DeepSpeed would fail
    deep inside its loader, or load no optimizer state)."""
    saved = saved_zero_stage(path)
    if saved is None or saved == {1: 2}.get(stage, stage):  # stages 1 and 2 write the same files
        return
    raise RuntimeError(
        f"{path} holds DeepSpeed state of ZeRO stage {'1-2' if saved == 2 else saved} and this learner runs stage "
        f"{stage}: resume with learner.zero_stage={saved}, or start a new run from its weights "
        f"(model.path={path}, learner.resume=never)"
    )


def save_rng(path: Path) -> None:
    import numpy as np

    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)


def load_rng(path: Path) -> None:
    import numpy as np

    state = torch.load(path, weights_only=False)  # our own file: tuples and numpy arrays inside
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@torch.no_grad()
def load_hf_weights(folder: Path, module: torch.nn.Module) -> None:
    """Copy the safetensors weights of `folder` (sharded or not) into `module`'s parameters, by name; every
    parameter must be found (a tied weight under either of its names)."""
    from safetensors.torch import load_file

    saved: dict[str, torch.Tensor] = {}
    for f in sorted(Path(folder).glob("*.safetensors")):
        saved.update(load_file(str(f)))
    missing = []
    for name, p in module.named_parameters():
        t = saved.get(name)
        if t is None and name == "lm_head.weight":
            t = saved.get("model.embed_tokens.weight")
        if t is None:
            missing.append(name)
            continue
        p.data.copy_(t.to(p.dtype))
    if missing:
        raise KeyError(f"{folder}: no weights for {missing[:5]}{'...' if len(missing) > 5 else ''}")


def save_hf_weights(
    folder: Path,
    tensors: Iterable[tuple[str, torch.Tensor]],
    model_config: Any,
    generation_config: Any = None,
    tokenizer: Any = None,
) -> None:
    """Write (name, tensor) pairs as safetensors shards (+ index when sharded), config, tokenizer."""
    from safetensors.torch import save_file

    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, t in tensors:
        nbytes = t.numel() * t.element_size()
        if shards[-1] and size + nbytes > SHARD_BYTES:
            shards.append({})
            size = 0
        shards[-1][name] = t.contiguous()
        size += nbytes
    if len(shards) == 1:
        save_file(shards[0], str(folder / "model.safetensors"), metadata={"format": "pt"})
    else:
        weight_map, total = {}, 0
        for i, shard in enumerate(shards, 1):
            fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, str(folder / fname), metadata={"format": "pt"})
            for name, t in shard.items():
                weight_map[name] = fname
                total += t.numel() * t.element_size()
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    for f in folder.glob("*.safetensors"):
        f.chmod(0o644)  # safetensors writes 0600; inference actors may run as another user
    model_config.save_pretrained(folder)
    if generation_config is not None:
        generation_config.save_pretrained(folder)
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
