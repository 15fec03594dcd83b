"""deploy/: the cluster-launcher YAML passes Ray's own validation, the KubeRay RayJob, runtime_env and Prometheus
files are consistent with the presets and with Ray, and every Grafana query parses and names a metric the code
really exports."""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from common.config import EnvironmentConfig, load_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PRESET = "configs/qwen2.5-3b_webarena_lite.yaml"
# Variables the driver forwards itself in ray.init(runtime_env=...) (rollout_workers/stack.py); a job runtime_env
# that sets one of them too makes Ray refuse the merge.
FORWARDED_BY_DRIVER = {
    "WEBAGENT_CACHE",
    "VLLM_CPU_KVCACHE_SPACE",
    "DS_ACCELERATOR",
    "HF_HUB_OFFLINE",
    "TOKENIZERS_PARALLELISM",
}


def _preset_vars(path: str) -> set[str]:
    return set(re.findall(r"\$\{([A-Z0-9_]+)\}", (ROOT / path).read_text())) - {"RUN_NAME", "WEBAGENT_CACHE"}


# --- Ray cluster launcher ----------------------------------------------------------------------------------
def _launcher() -> dict:
    return yaml.safe_load((DEPLOY / "ray-cluster.yaml").read_text())


def _ray_validate(cfg: dict) -> None:
    """What `ray up` does before launching anything: fill defaults, then check against Ray's schema."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(copy.deepcopy(cfg)))


def test_launcher_passes_rays_validation():
    _ray_validate(_launcher())


def test_launcher_validation_is_not_vacuous():
    bad = _launcher()
    bad["available_node_types"]["browser"]["resources"] = {"browser": "eight"}
    with pytest.raises(Exception, match="integer"):
        _ray_validate(bad)


def test_launcher_node_roles():
    import ray

    cfg = _launcher()
    types = cfg["available_node_types"]
    offering = [name for name, t in types.items() if t["resources"].get("browser", 0) > 0]
    assert offering == ["browser"] and cfg["head_node_type"] != "browser"
    preset = load_config(ROOT / PRESET)
    assert (
        types["browser"]["min_workers"] * types["browser"]["resources"]["browser"]
        >= preset.browser.num_browsers
    )
    # Ray refuses to mix versions: the images must carry the version this project pins and tests with
    images = [cfg["docker"]["image"]] + [t["docker"]["worker_image"] for t in types.values() if "docker" in t]
    assert all(img.split(":")[1].startswith(ray.__version__ + "-") for img in images), images
    for t in [cfg] + list(types.values()):
        for cmd in t.get("setup_commands", []) + t.get("worker_setup_commands", []):
            assert "deploy/node_setup.sh" in cmd


def test_node_setup_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(DEPLOY / "node_setup.sh")], check=True)


def test_dockerfile_copies_existing_folders():
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY"):
            for src in line.split()[2:-1]:
                assert (ROOT / src).exists(), f"Dockerfile copies {src}, which is not in the repository"


# --- KubeRay -----------------------------------------------------------------------------------------------
def _rayjob() -> dict:
    docs = list(yaml.safe_load_all((DEPLOY / "kuberay" / "rayjob.yaml").read_text()))
    jobs = [d for d in docs if d and d.get("kind") == "RayJob"]
    assert len(jobs) == 1 and jobs[0]["apiVersion"] == "ray.io/v1"
    return jobs[0]


def _ray_start_resources(value: str) -> dict:
    """KubeRay passes rayStartParams.resources to the shell as --resources=<value>; undo the shell quoting."""
    (arg,) = shlex.split(value)
    return json.loads(arg)


def test_rayjob_entrypoint_runs_a_valid_config():
    argv = shlex.split(_rayjob()["spec"]["entrypoint"])
    assert argv[:5] == ["python", "-m", "learner.train", "--config", PRESET]
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "--set"]
    load_config(ROOT / PRESET, overrides)  # raises on an unknown key or a bad value


def test_rayjob_groups_match_the_preset():
    import ray

    spec = _rayjob()["spec"]
    cluster = spec["rayClusterSpec"]
    assert cluster["rayVersion"] == ray.__version__
    groups = {g["groupName"]: g for g in cluster["workerGroupSpecs"]}
    per_pod = _ray_start_resources(groups["browser"]["rayStartParams"]["resources"])
    assert per_pod == {"browser": 8}
    cfg = load_config(ROOT / PRESET)
    assert groups["browser"]["replicas"] * per_pod["browser"] >= cfg.browser.num_browsers
    limits = groups["gpu"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    needed = cfg.learner.num_gpus + cfg.inference.num_engines * cfg.inference.gpus_per_engine
    assert limits["nvidia.com/gpu"] >= needed
    assert "browser" not in groups["gpu"]["rayStartParams"].get("resources", "")


def test_rayjob_runtime_env_provides_the_presets_variables():
    env = yaml.safe_load(_rayjob()["spec"]["runtimeEnvYAML"])
    assert _preset_vars(PRESET) <= set(env["env_vars"])
    assert not FORWARDED_BY_DRIVER & set(env["env_vars"])


# --- runtime_env ------------------------------------------------------------------------------------------
def test_runtime_env_is_accepted_by_ray():
    from ray.runtime_env import RuntimeEnv

    data = yaml.safe_load((DEPLOY / "runtime_env.yaml").read_text())
    RuntimeEnv(**data)  # Ray's own validation of the fields and their types
    assert all(isinstance(v, str) for v in data["env_vars"].values())
    for preset in ("configs/qwen2.5-3b_webarena_lite.yaml", "configs/llama3.1-8b_webarena_lite.yaml"):
        assert _preset_vars(preset) <= set(data["env_vars"])
    assert not FORWARDED_BY_DRIVER & set(data["env_vars"])


# --- Prometheus --------------------------------------------------------------------------------------------
def test_prometheus_scrapes_ray_discovery_and_sites():
    from ray._private.ray_constants import PROMETHEUS_SERVICE_DISCOVERY_FILE

    cfg = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    files = jobs["ray"]["file_sd_configs"][0]["files"]
    assert files == [f"/tmp/ray/{PROMETHEUS_SERVICE_DISCOVERY_FILE}"]
    targets = jobs["webagent-sites"]["static_configs"][0]["targets"]
    base = EnvironmentConfig().base_port
    assert [int(t.rsplit(":", 1)[1]) for t in targets][:4] == [base, base + 1, base + 2, base + 3]
