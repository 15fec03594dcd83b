"""Shared fixtures: small real pieces (a tiny model, a Ray cluster, the bundled sites), started once per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Debian's, through Playwright's sync API) for a module's page tests."""
    from playwright.sync_api import sync_playwright

    from common.chromium import CHROMIUM_ARGS, chromium_executable

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> str:
    """A random 2-layer Llama (head_dim 64) with SmolLM2's tokenizer and chat template."""
    from common.models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture(scope="session")
def default_model_dir() -> str:
    """SmolLM2-135M-Instruct as converted by `make setup` (converted here if missing)."""
    from common.models import ensure_default_model

    return ensure_default_model()


@pytest.fixture(scope="session")
def ray_session():
    """One real local Ray for the whole test session; modules that need it share it."""
    import ray

    if not ray.is_initialized():
        ray.init(
            num_cpus=4,
            resources={"browser": 8},
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def site_server(tmp_path_factory):
    """All bundled sites on free ports, for the whole session."""
    from sites.server import SiteServer

    srv = SiteServer(host="127.0.0.1", base_port=0, data_dir=tmp_path_factory.mktemp("sites"))
    srv.start()
    yield srv
    srv.stop()


class LocalSandboxes:
    """SandboxClient's interface over an in-process SiteServer (no HTTP round trip)."""

    def __init__(self, server) -> None:
        self.server = server

    async def new(self) -> str:
        return self.server.new_sandbox()

    async def drop(self, token: str) -> None:
        self.server.drop_sandbox(token)


@pytest.fixture(scope="session")
def local_rollout(default_model_dir):
    """A factory of RolloutWorkers made of local objects (no Ray): real BrowserActors, a real RewardActor, the
    server's sandboxes and SmolLM2's prompt builder. `make(server, browsers=2, overrides=[...])`; closed at the end."""
    from transformers import AutoTokenizer

    from browser_actors import BrowserActor
    from common.config import load_config
    from common.prompts import PromptBuilder
    from reward import RewardActor
    from rollout_workers.group import BrowserPool, RolloutWorker

    tok = AutoTokenizer.from_pretrained(default_model_dir)
    made = []

    def make(server, browsers: int = 2, overrides: list[str] | None = None, router=None):
        cfg = load_config(
            None, [f"browser.num_browsers={browsers}", f"rl.group_size={browsers}", *(overrides or [])]
        )
        actors = [
            BrowserActor(cfg.browser, auth_dir=str(server.auth_dir), env_urls=server.urls)
            for _ in range(browsers)
        ]
        pool = BrowserPool(lambda i: actors[i], browsers)
        rewarder = RewardActor(env_urls=server.urls, helpers="bundled")
        made.append((actors, rewarder))
        builder = PromptBuilder.from_config(tok, cfg.prompt)
        return RolloutWorker(pool, router, rewarder, builder, cfg, LocalSandboxes(server))

    yield make
    for actors, rewarder in made:
        for a in actors:
            a.close()
        rewarder.close()
