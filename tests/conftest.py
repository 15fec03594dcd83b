"""Shared fixtures: small real pieces (a tiny model, a Ray cluster, the bundled sites), started once per session."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DS_ACCELERATOR", "cpu")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


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
