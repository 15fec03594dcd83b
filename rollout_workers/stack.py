"""Bring up everything a run needs on Ray: sites (bundled), engines + router, browser actors, reward actors.

Shared by the training driver (`python -m learner.train`) and the evaluator (`python -m rollout_workers.evaluate`).
Actor classes stay plain; `ray.remote` is applied here, where they are launched, with names that read well in the
dashboard's actor view (`engine-0`, `browser-3`, `reward-0`, `learner`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from common.config import TrainConfig, expand
from common.prompts import PromptBuilder
from common.tasks import Task
from rollout_workers.group import BrowserPool, RolloutWorker
from rollout_workers.handles import BrowserHandle, EngineHandle, RewardHandle, wait_all
from rollout_workers.router import EngineRouter

log = logging.getLogger(__name__)


def init_ray(cfg: TrainConfig) -> dict[str, Any]:
    """Join RAY_ADDRESS when set (ray job submit does), else start a local Ray with its dashboard on 127.0.0.1
    and a `browser` resource sized to the pool, so the same actor options work in both cases."""
    import ray

    if ray.is_initialized():
        return {"address": "existing"}
    if os.environ.get("RAY_ADDRESS"):
        # Under `ray job submit` the job's runtime_env already applies to every actor, and Ray refuses to merge
        # a second runtime_env that sets the same variables, so none is passed here.
        ctx = ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
    else:
        env = {
            "env_vars": {
                k: os.environ[k]
                for k in (
                    "WEBAGENT_CACHE",
                    "VLLM_CPU_KVCACHE_SPACE",
                    "DS_ACCELERATOR",
                    "HF_HUB_OFFLINE",
                    "TOKENIZERS_PARALLELISM",
                )
                if k in os.environ
            }
        }
        ctx = ray.init(
            num_cpus=max(4, os.cpu_count() or 2),
            resources={cfg.browser.browser_resource: cfg.browser.num_browsers},
            include_dashboard=True,
            dashboard_host="127.0.0.1",
            runtime_env=env,
        )
    info = {"dashboard": getattr(ctx, "dashboard_url", None)}
    log.info("ray: %s", info)
    return info


class Stack:
    """The running parts of a run. `start()` brings them up; `close()` takes them down."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.sites = None  # SiteServer when this process started the bundled sites
        self.urls: dict[str, str] = {}
        # site -> the server class each browser actor starts on its own node (environment.kind=miniwob)
        self.local_sites: dict[str, Any] = {}
        self.auth_dir = ""
        self.engines: list[EngineHandle] = []
        self.router: EngineRouter | None = None
        self.pool: BrowserPool | None = None
        self.rewarders: list[RewardHandle] = []
        self.worker: RolloutWorker | None = None
        self.builder: PromptBuilder | None = None

    # --- environment -------------------------------------------------------------------------------------
    def start_environment(self) -> None:
        env = self.cfg.environment
        if env.kind == "miniwob":
            # The package's static pages, served by every browser actor on 127.0.0.1 of its own machine (a server
            # here would be out of reach of browsers on other nodes); tasks keep __MINIWOB__ until the actor fills
            # it. The page's reward is read by the browser, so no other part needs the pages.
            from sites.miniwob.server import MiniwobServer

            self.local_sites, self.urls = {"miniwob": MiniwobServer}, {}
            return
        if env.kind == "bundled":
            from sites.server import SiteServer

            if env.start_sites and not env.urls:
                self.sites = SiteServer(host="127.0.0.1", base_port=env.base_port)
                self.urls = dict(self.sites.start())
                self.auth_dir = str(self.sites.auth_dir)
                return
        self.urls = {k: expand(v) for k, v in env.urls.items()}
        self.auth_dir = expand(env.auth_dir)
        if not self.urls:
            raise ValueError("environment.urls is empty: set the site URLs (see deploy/README.md)")

    def tasks(self, split: str) -> list[Task]:
        """The split's tasks (`split_tasks`), placeholders filled with this stack's URLs."""
        return self.prepare(split_tasks(self.cfg, split), f"{split} tasks")

    def prepare(self, tasks: list[Task], what: str = "tasks") -> list[Task]:
        """Tasks ready for this run: those of `environment.sites`, placeholders filled with this stack's URLs. Also
        the way in for task lists built elsewhere (the evaluator's explicit MiniWoB++ seeds, `--seeds`)."""
        sites = self.cfg.environment.sites
        if sites:
            tasks = [t for t in tasks if t.sites and t.sites[0] in sites]
        if not tasks:
            raise ValueError(f"no {what} left (environment.sites={sites})")
        return [t.with_urls(self.urls) for t in tasks]

    # --- model side ----------------------------------------------------------------------------------------
    def start_builder(self) -> None:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.cfg.model_path)
        self.builder = PromptBuilder.from_config(tok, self.cfg.prompt)

    def start_engines(self, model_path: str | None = None, weight_version: int = 0) -> None:
        import ray

        from rollout_workers.inference import InferenceActor

        inf = self.cfg.inference
        cls = ray.remote(InferenceActor)
        handles = [
            # Ray restarts a dead engine (with the weights it was created with); the router keeps it out of service
            # until the driver has pushed it the current weights (EngineRouter.heal).
            cls.options(
                name=f"engine-{i}",
                num_cpus=1,
                num_gpus=inf.gpus_per_engine,
                max_concurrency=1000,
                max_restarts=-1,
            ).remote(
                model_path or self.cfg.model_path,
                inf,
                max_model_len=self.cfg.model.max_context,
                name=f"engine-{i}",
                dtype=self.cfg.model.dtype,
                weight_sync=self.cfg.learner.weight_sync,
                weight_version=weight_version,
            )
            for i in range(inf.num_engines)
        ]
        self.engines = [EngineHandle(h) for h in handles]
        # Start (and warm) every engine now, in parallel, so the first turns do not pay for it.
        wait_all(e.start() for e in self.engines)
        self.router = EngineRouter(self.engines, timeout_s=inf.generate_timeout_s)
        self.router.version = weight_version

    def start_browsers(self) -> None:
        import ray

        from browser_actors import BrowserActor

        browser = self.cfg.browser
        cls = ray.remote(BrowserActor)
        out = str(self.cfg.output_dir / "episodes")

        def make(i: int) -> BrowserHandle:
            return BrowserHandle(
                cls.options(
                    name=f"browser-{i}-{os.urandom(2).hex()}",
                    num_cpus=0,
                    resources={browser.browser_resource: 1},
                    max_restarts=0,
                ).remote(
                    browser,
                    auth_dir=self.auth_dir,
                    env_urls=self.urls,
                    output_dir=out,
                    local_sites=self.local_sites,
                )
            )

        self.pool = BrowserPool(make, browser.num_browsers)

    def start_rewarders(self) -> None:
        import ray

        from reward import RewardActor

        cls = ray.remote(RewardActor)
        helpers = "bundled" if self.cfg.environment.kind == "bundled" else "webarena"
        self.rewarders = [
            # Restarted by Ray when it dies (its constructor relaunches its browser); calls in flight are retried.
            RewardHandle(
                cls.options(
                    name=f"reward-{i}", num_cpus=0, max_concurrency=64, max_restarts=-1, max_task_retries=2
                ).remote(self.cfg.reward, env_urls=self.urls, helpers=helpers)
            )
            for i in range(self.cfg.reward.num_actors)
        ]

    def start(self, model_path: str | None = None, engines: bool = True, weight_version: int = 0) -> Stack:
        """Bring everything up; `engines=False` for runs that need no model (the expert's demonstrations)."""
        self.start_environment()
        self.start_builder()
        if engines:
            self.start_engines(model_path, weight_version)
        self.start_browsers()
        self.start_rewarders()
        sandboxes = None
        if self.cfg.environment.kind == "bundled":
            from rollout_workers.sandbox import SandboxClient

            key = self.sites.sandbox_key if self.sites is not None else None
            sandboxes = SandboxClient(next(iter(self.urls.values())), key=key)
        self.worker = RolloutWorker(self.pool, self.router, self.rewarders, self.builder, self.cfg, sandboxes)
        return self

    def close(self) -> None:
        """Stop the bundled sites and end this stack's actors (engines, browsers with the pages they serve, reward
        actors)."""
        import ray

        actors = [*self.engines, *self.rewarders, *(self.pool.actors() if self.pool else [])]
        if ray.is_initialized():
            try:  # engines first stop their vLLM engine-core processes, which a kill would orphan
                wait_all((e.shutdown() for e in self.engines), timeout=60)
            except Exception:  # noqa: BLE001 - a dead or hung engine is killed below all the same
                pass
            for a in actors:
                a.kill()  # an actor that is already gone is fine
        self.engines, self.rewarders, self.pool = [], [], None
        if self.sites is not None:
            self.sites.stop()
            self.sites = None


def split_tasks(cfg: TrainConfig, split: str) -> list[Task]:
    """The split's tasks, placeholders unfilled: from `environment.{split}_tasks` when set (every reward plan
    built now: a bad task fails here, named), else the environment's own list (for MiniWoB++ the test split is
    `eval.miniwob_seeds` when set: those seeds of every task, e.g. a validation range). ValueError naming the bad input;
    it needs nothing running, so entry points call it before they start anything (rollout_workers.preflight)."""
    env = cfg.environment
    path = env.train_tasks if split == "train" else env.test_tasks
    key = f"environment.{split}_tasks"
    if path:
        from reward.plan import validate_file

        full = expand(path)
        if not Path(full).is_file():
            raise ValueError(f"{key} {path}: no such file (expected a JSON list of WebArena task configs)")
        try:
            return validate_file(full)
        except (ValueError, OSError) as e:
            raise ValueError(f"{key}: {e}") from None
    if env.kind == "bundled":
        from sites.tasks import load_split

        return load_split(split)
    if env.kind == "miniwob":
        from sites.miniwob.tasks import load_split as load_miniwob
        from sites.miniwob.tasks import parse_seeds, seed_tasks

        if split == "test" and cfg.eval.miniwob_seeds:
            try:
                return seed_tasks(parse_seeds(cfg.eval.miniwob_seeds), env.miniwob_tasks or None)
            except ValueError as e:
                raise ValueError(f"eval.miniwob_seeds {cfg.eval.miniwob_seeds}: {e}") from None
        try:
            return load_miniwob(split, env.miniwob_tasks or None)
        except ValueError as e:
            raise ValueError(f"environment.miniwob_tasks: {e}") from None
    raise ValueError(
        f"{key} is required for environment.kind=webarena (a WebArena task file: make webarena-tasks)"
    )


def ensure_dir(p: str | Path) -> Path:
    p = Path(p)
    p.mkdir(parents=True, exist_ok=True)
    return p
