"""Weight push: after a push the engine's greedy output equals a Hugging Face forward of the pushed weights.

The engine runs as it does in training: `ray.remote(InferenceActor)` on a real local Ray (`ray.init(num_cpus=2)`),
one engine for the module. The "learner" is a transformers model whose weights each test perturbs; its
`state_dict()` (HF names, tied embedding / lm_head sharing storage) is what gets pushed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from learner.weight_sync import PushStats, WeightPusher
from rollout_workers.weight_format import (
    iter_cpu_tensors,
    pack_for_object_store,
    unpack_payload,
    write_folder,
)

REPO = Path(__file__).resolve().parents[2]
PROMPTS = [
    [1, 1540, 22, 9000, 17, 4],
    [1, 300, 301, 302],
    [7] + list(range(2000, 2150)),
]  # last: > 1 KV block


# ---- fast checks, no engine ----------------------------------------------------------------------------------
def test_object_store_payload_round_trips_every_dtype():
    named = {
        "a": torch.randn(3, 4),
        "b": torch.randn(5).to(torch.bfloat16),
        "c": torch.arange(6).reshape(2, 3),
    }
    back = dict(unpack_payload(pack_for_object_store(named)))
    assert list(back) == ["a", "b", "c"]
    for k, t in named.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape and torch.equal(back[k], t)
    with pytest.raises(ValueError, match="format"):
        list(unpack_payload({"tensors": []}))


def test_folder_shards_and_tied_weights_go_once(tmp_path):
    from safetensors.torch import load_file

    emb = torch.randn(10, 8)
    base = torch.randn(200)
    named = [
        ("model.embed_tokens.weight", emb),
        ("lm_head.weight", emb),  # tied: the same tensor under a second name
        ("x", torch.randn(100)),
        ("first_half", base[:100]),  # two views of one buffer that are not a tie: both go
        ("second_half", base[100:]),
    ]
    total = write_folder(named, tmp_path, shard_bytes=400)
    files = sorted(tmp_path.glob("*.safetensors"))
    assert len(files) == 4 and total == (80 + 100 + 100 + 100) * 4
    loaded = {k: v for f in files for k, v in load_file(str(f)).items()}
    assert sorted(loaded) == ["first_half", "model.embed_tokens.weight", "second_half", "x"]
    assert torch.equal(loaded["model.embed_tokens.weight"], emb) and torch.equal(
        loaded["second_half"], base[100:]
    )
    payload = pack_for_object_store(dict(named))
    assert [name for name, *_ in payload["tensors"]] == sorted(loaded, key=[n for n, _ in named].index)


def test_a_pusher_removes_folders_that_crashed_pushes_left(tmp_path, monkeypatch):
    import subprocess
    import sys
    import time

    from rollout_workers import weight_format

    monkeypatch.setattr(weight_format, "shm_dir", lambda: tmp_path)
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(gone.stdout)
    folders = {
        "dead": tmp_path / f"webagent-weights-push-p{dead_pid}-0123456789ab",
        "live": weight_format.new_scratch_folder("push-"),  # this process: a push in flight
        "old_unnamed": tmp_path / "webagent-weights-push-0123456789ab",
        "new_unnamed": tmp_path / "webagent-weights-engine-0-ba9876543210",
        "other": tmp_path / "unrelated",
    }
    for f in folders.values():
        f.mkdir()
        (f / "model-00000.safetensors").write_bytes(b"x")
    hours_ago = time.time() - 2 * 3600
    os.utime(folders["old_unnamed"], (hours_ago, hours_ago))
    WeightPusher("file")
    assert {k for k, f in folders.items() if f.exists()} == {"live", "new_unnamed", "other"}


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="twice"):
        list(iter_cpu_tensors([("a", torch.zeros(1)), ("a", torch.zeros(1))]))
    with pytest.raises(TypeError, match="pairs"):
        list(iter_cpu_tensors([("a", [1.0])]))
    with pytest.raises(ValueError, match="no tensors"):
        write_folder(iter([]), tmp_path / "empty")
    with pytest.raises(ValueError, match="unknown weight push method"):
        WeightPusher("smoke-signals")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no engines"):
        WeightPusher("file").push({"a": torch.zeros(1)}, [])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal only")
def test_nccl_refuses_on_cpu_before_touching_engines():
    class Untouchable:
        def __getattr__(self, name):
            raise AssertionError("an engine was contacted")

    with pytest.raises(RuntimeError, match="needs CUDA"):
        WeightPusher("nccl").push({"a": torch.zeros(1)}, [Untouchable()])


# ---- a real engine under Ray ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    import ray
    from transformers import AutoModelForCausalLM

    from common.config import InferenceConfig
    from common.models import build_tiny_model
    from rollout_workers.inference import InferenceActor

    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    started = not ray.is_initialized()
    if started:
        pythonpath = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
    engine = ray.remote(num_cpus=1)(InferenceActor).remote(
        path, InferenceConfig(cpu_kvcache_gb=1), max_model_len=512, name="engine-ws"
    )
    ray.get(engine.start.remote(), timeout=900)
    learner = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    yield engine, learner
    ray.get(engine.shutdown.remote())
    ray.kill(engine)
    if started:
        ray.shutdown()


def perturb(model: torch.nn.Module, seed: int) -> None:
    """New learner weights: noise on every parameter, and a sharper final norm so that greedy ids have clear
    margins (no near-ties for float rounding to flip)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=g))
            if name == "model.norm.weight":
                p.mul_(4.0)


@torch.no_grad()
def hf_greedy(model: torch.nn.Module, prompt: list[int], n: int) -> tuple[list[int], list[float]]:
    ids = torch.tensor([prompt])
    out, lps = [], []
    for _ in range(n):
        logp = torch.log_softmax(model(ids).logits[0, -1].float(), dim=-1)
        tok = int(logp.argmax())
        out.append(tok)
        lps.append(float(logp[tok]))
        ids = torch.cat([ids, torch.tensor([[tok]])], dim=1)
    return out, lps


def engine_greedy(engine, n: int = 12):
    import ray

    return ray.get([engine.generate.remote(p, max_tokens=n, temperature=0.0) for p in PROMPTS])


def check_push(method: str, seed: int, rig) -> PushStats:
    import ray

    engine, learner = rig
    before = engine_greedy(engine)  # also puts the long prompt in the prefix cache
    v0 = ray.get(engine.stats.remote())["weight_version"]
    perturb(learner, seed)
    sent = learner.state_dict()
    stats = WeightPusher(method, version=v0).push(sent, [engine])

    assert stats.method == method and stats.version == v0 + 1 and stats.engines == 1
    tied_once = {t.data_ptr(): t for t in sent.values()}.values()  # lm_head.weight is embed_tokens.weight
    assert len(tied_once) == len(sent) - 1
    assert stats.bytes == sum(t.numel() * t.element_size() for t in tied_once)
    assert stats.seconds >= stats.serialize_seconds > 0 and len(stats.engine_seconds) == 1
    after = engine_greedy(engine)
    for prompt, old, new in zip(PROMPTS, before, after, strict=True):
        want_ids, want_lps = hf_greedy(learner, prompt, len(new.completion_ids))
        assert new.completion_ids == want_ids, f"prompt of {len(prompt)} tokens"
        assert new.logprobs == pytest.approx(want_lps, abs=2e-3)
        assert new.weight_version == v0 + 1 and old.weight_version == v0
    assert any(o.completion_ids != n.completion_ids for o, n in zip(before, after, strict=True))
    assert ray.get(engine.stats.remote())["weight_version"] == v0 + 1
    return stats


@pytest.mark.slow
def test_file_push_then_greedy_equals_hf(rig):
    check_push("file", seed=1, rig=rig)
    assert not list(Path("/dev/shm").glob("webagent-weights-push-*"))  # the shared-memory copy is removed


@pytest.mark.slow
def test_object_store_push_then_greedy_equals_hf(rig):
    check_push("object_store", seed=2, rig=rig)
    assert not list(Path("/dev/shm").glob("webagent-weights-engine-ws-*"))


@pytest.mark.slow
def test_engine_logprobs_at_temperature_are_those_of_the_sampling_distribution(rig):
    """At T = 0.7 the engine reports log softmax(logits / 0.7) of each sampled token, the quantity the learner
    computes (LearnerActor._logprobs at the sampling temperature): within 2e-3 nats per token on CPU float32."""
    import ray

    engine, learner = rig
    sent = learner.state_dict()
    WeightPusher("file", version=ray.get(engine.stats.remote())["weight_version"]).push(sent, [engine])
    prompt = PROMPTS[0]
    res = ray.get(engine.generate.remote(prompt, max_tokens=12, temperature=0.7, seed=3))
    ids = torch.tensor([prompt + res.completion_ids])
    with torch.no_grad():
        logits = learner(ids).logits[0, len(prompt) - 1 : -1].float()
    want = torch.log_softmax(logits / 0.7, dim=-1).gather(-1, torch.tensor(res.completion_ids)[:, None])[:, 0]
    raw = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(res.completion_ids)[:, None])[:, 0]
    assert res.logprobs == pytest.approx(want.tolist(), abs=2e-3)
    assert not torch.allclose(want, raw, atol=1e-2)  # the temperature matters for these tokens


@pytest.mark.slow
def test_a_killed_engine_is_restarted_by_ray_and_serves_only_after_it_holds_the_current_weights(
    rig, tmp_path
):
    """The real fault: the engine's process is killed. Ray restarts it (with the weights it was created with, at
    version 0); the router takes it out of service on the failed call, and `heal` pushes it the current weights
    under the run's version before it serves again."""
    import asyncio

    import ray

    from common.config import InferenceConfig
    from common.models import build_tiny_model
    from rollout_workers.inference import InferenceActor
    from rollout_workers.router import EngineDown, EngineRouter

    _, learner = rig
    path = build_tiny_model(tmp_path / "model")
    engine = ray.remote(num_cpus=1, max_restarts=-1)(InferenceActor).remote(
        path, InferenceConfig(cpu_kvcache_gb=1), max_model_len=512, name="engine-restart"
    )
    ray.get(engine.start.remote(), timeout=900)
    router = EngineRouter([engine], timeout_s=300)
    perturb(learner, 7)
    sent = learner.state_dict()
    router.version = WeightPusher("file", version=4).push(sent, [engine]).version
    want, _ = hf_greedy(learner, PROMPTS[0], 8)

    async def play(episode: str) -> list[int]:
        res = await router.generate(episode, PROMPTS[0], max_tokens=8, temperature=0.0)
        assert res.weight_version == router.version
        return res.completion_ids

    assert asyncio.run(play("before")) == want
    ray.kill(engine, no_restart=False)
    with pytest.raises(EngineDown, match="died"):
        asyncio.run(play("during"))
    assert 0 in router.down

    async def restore(i: int) -> None:
        await WeightPusher("file", version=router.version).apush(
            sent, [router.engines[i]], version=router.version
        )

    async def heal() -> list[int]:
        for _ in range(60):  # Ray restarts the actor in the background
            back = await router.heal(restore)
            if back:
                return back
            await asyncio.sleep(2)
        return []

    assert asyncio.run(heal()) == [0], router.down
    assert ray.get(engine.stats.remote())["weight_version"] == 5
    assert asyncio.run(play("after")) == want  # the restored weights, not the ones it was created with
    ray.get(engine.shutdown.remote())
    ray.kill(engine)
