"""Every preset in configs/ loads with common.config.load_config; the WebArena-Lite presets carry the paper's numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from common.config import load_config
from common.tasks import PLACEHOLDERS

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted((ROOT / "configs").glob("*.yaml"))
GPU_PRESETS = [
    ROOT / "configs" / n for n in ("qwen2.5-3b_webarena_lite.yaml", "llama3.1-8b_webarena_lite.yaml")
]


def test_gpu_presets_exist():
    for p in GPU_PRESETS:
        assert p in PRESETS, f"{p.name} missing from configs/"


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.name)
def test_preset_loads(path: Path):
    cfg = load_config(path)
    assert cfg.inference.max_new_tokens < cfg.model.max_context
    # every key written in the file is a real field (load_config forbids unknown keys; this guards the test itself)
    assert yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", GPU_PRESETS, ids=lambda p: p.name)
def test_webarena_lite_preset_has_paper_settings(path: Path):
    cfg = load_config(path)
    assert cfg.environment.kind == "webarena"
    assert cfg.environment.train_tasks == "data/webarena/train_647.json"
    assert cfg.environment.test_tasks == "data/webarena/lite_test.json"
    assert (cfg.rl.lr, cfg.rl.tasks_per_iteration, cfg.rl.kl_beta) == (1e-6, 16, 0.001)
    assert (cfg.model.max_context, cfg.inference.max_new_tokens) == (16384, 1024)
    assert cfg.prompt.thinking and cfg.scheduling.max_turns == 15 and cfg.prompt.compression == "placeholder"
    assert cfg.learner.max_grad_norm == 0.01 and cfg.learner.zero_stage == 3 and cfg.rl.warmup_steps == 0
    assert cfg.model.dtype == "bfloat16" and cfg.model.gradient_checkpointing
    assert cfg.model.attn_implementation == "flash_attention_2" and cfg.inference.gpus_per_engine >= 1
    # every WebArena placeholder has a URL entry, so no task keeps a literal __SITE__ in its start URL
    keys = {f"__{k.strip('_').upper()}__" for k in cfg.environment.urls}
    assert set(PLACEHOLDERS) <= keys
    # enough browsers for the groups in flight
    assert cfg.browser.num_browsers >= cfg.scheduling.max_inflight_groups * cfg.rl.group_size


@pytest.mark.parametrize("path", GPU_PRESETS, ids=lambda p: p.name)
def test_test_time_scaling_is_one_override(path: Path):
    cfg = load_config(path, ["scheduling.max_turns=30"])
    assert cfg.scheduling.max_turns == 30


def test_preset_env_vars_are_documented():
    """Each ${VAR} a cluster preset reads (besides the ones the code fills itself) is explained in
    deploy/README.md."""
    readme = (ROOT / "deploy" / "README.md").read_text()
    internal = {"RUN_NAME", "WEBAGENT_CACHE"}
    for path in GPU_PRESETS:
        for var in set(re.findall(r"\$\{([A-Z0-9_]+)\}", path.read_text())) - internal:
            assert var in readme, f"{path.name} reads ${{{var}}}, which deploy/README.md does not mention"


def test_train_miniwob_covers_every_task_with_an_expert_and_the_demo_pairs_120_episodes():
    from common.config import load_config
    from sites.miniwob.experts import SOLVERS
    from sites.miniwob.tasks import TASKS

    train = load_config("configs/miniwob_train.yaml")
    assert sorted(train.environment.miniwob_tasks) == sorted(t for t in TASKS if t in SOLVERS)
    demo = load_config("configs/miniwob_cpu.yaml")
    # the after-BC and after-RL evaluations play the same held-out episodes, at least 120 of them
    assert demo.eval.max_tasks * demo.eval.samples_per_task >= 120
    assert {"after_bc", "after_rl"} <= set(demo.eval.sampled_at) and demo.eval.sampled_per_task >= 1
    # `make demo` compares after BC and after RL on every held-out storefront test task (48)
    shop = load_config("configs/cpu_demo.yaml")
    assert shop.eval.max_tasks * shop.eval.samples_per_task >= 48
