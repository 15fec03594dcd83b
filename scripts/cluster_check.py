"""Scripted check (run by `make test` after pytest): a multi-node Ray cluster on this machine, `ray job submit` of
the CPU preset (shrunk to a tiny model and budget), and browser actors placed on the browser node.

    .venv/bin/python scripts/cluster_check.py [--keep]

1. `ray start --head` (dashboard on 127.0.0.1) offering no `browser` resource, then a second node joining with
   `--resources '{"browser": 2}'` — exactly how a user adds a browser machine.
2. `ray job submit -- python -m learner.train --config configs/cpu_demo.yaml --set ...` (see the comment at the
   submit for why this local check does not pass `--working-dir .` as a real cluster does).
3. MiniWoB++ on the browser node: this script joins the cluster as a driver, the run stack (configs/miniwob_cpu.yaml)
   places one browser actor, and the scripted expert plays click-button through it. The driver serves no page: the
   task leaves with __MINIWOB__ unfilled, the actor fills it with the server it runs itself, and the check finds
   the page's port held by the actor's process; the page's reward, read by the browser, must score 1.
4. Reads the actor table through Ray's state API: every BrowserActor ran on the browser node, and the job
   succeeded with an RL iteration logged.
5. Security: a Jobs API request without the token is refused (401/403) while the same request with it succeeds.
   It also prints where each node's metrics export port listens: Ray 2.60's dashboard agent binds it on 0.0.0.0
   (even with --node-ip-address=127.0.0.1) and has no option to narrow it, so the deploy manifests restrict who
   can reach that port instead (deploy/ray-cluster.yaml, deploy/kuberay/rayjob.yaml).
6. Stops its own cluster (unless --keep): the processes of its Ray session and their children only. `ray stop` would
   end every Ray on the machine, a developer's or a concurrent test's `ray.init` included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
from common.net import free_port  # noqa: E402 - after the path set-up that makes the repository importable


def sh(*args: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, cwd=ROOT, env=env, check=check, text=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = ap.parse_args()
    # Ray 2.60 starts a head with token authentication; every process of the check uses the same mode and the
    # token in ~/.ray/auth_token, made below on a machine that has none (deploy/README.md says the same for real
    # clusters).
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
        "RAY_AUTH_MODE": "token",
        "RAY_USAGE_STATS_ENABLED": "0",
        "DS_ACCELERATOR": "cpu",
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    ray = str(BIN / "ray")
    gcs, dash, metrics = free_port(), free_port(), [free_port(), free_port()]
    work = Path(tempfile.mkdtemp(prefix="cluster-check-"))
    model = (
        subprocess.run(
            [sys.executable, "-m", "common.models", "tiny", str(work / "tiny")],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    # a head with token authentication needs a token: made once per machine (~/.ray/auth_token), kept if there
    subprocess.run([ray, "get-auth-token", "--generate"], env=env, check=True, capture_output=True)
    try:
        sh(
            ray,
            "start",
            "--head",
            f"--port={gcs}",
            f"--metrics-export-port={metrics[0]}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={dash}",
            "--num-cpus=3",
            "--disable-usage-stats",
            env=env,
        )
        sh(
            ray,
            "start",
            f"--address=127.0.0.1:{gcs}",
            f"--metrics-export-port={metrics[1]}",
            "--num-cpus=1",
            "--resources",
            '{"browser": 2}',
            env=env,
        )
        out = work / "run"
        overrides = [
            f"model.path={model}",
            "model.max_context=4096",
            "phases=[bc, rl, eval]",
            "inference.max_new_tokens=12",
            "inference.cpu_kvcache_gb=1",
            "scheduling.max_turns=2",
            "browser.num_browsers=2",
            "prompt.obs_max_tokens=1500",
            "bc.max_demos=16",  # one per storefront template: the 2-turn one gives the expert a demo
            "bc.held_out=0",
            "bc.epochs=1",
            "rl.iterations=1",
            "rl.tasks_per_iteration=1",
            "rl.group_size=2",
            "environment.base_port=0",
            "eval.max_tasks=1",
            f"logging.output_dir={out}",
            "logging.progress=false",
        ]
        # No --working-dir here, unlike on a real cluster: both simulated nodes share this machine's
        # /tmp/ray/session_*/runtime_resources, and two runtime-env agents unpacking the same package there
        # race (one deletes the folder the other's job runs in). The code comes from this checkout instead.
        sid = f"check-{int(time.time())}"
        cmd = [
            ray,
            "job",
            "submit",
            f"--address=http://127.0.0.1:{dash}",
            "--submission-id",
            sid,
            "--",
            "python",
            "-m",
            "learner.train",
            "--config",
            "configs/cpu_demo.yaml",
        ]
        for o in overrides:
            cmd += ["--set", o]
        submit(cmd, sid, dash, env)
        problems = check_security(dash, metrics, env) + play_miniwob(gcs, dash, work)
        return verify(dash, out, problems)
    finally:
        if not args.keep:
            stop_cluster(gcs)


def submit(cmd: list[str], sid: str, dash: int, env: dict[str, str], tries: int = 6) -> None:
    """`ray job submit`, again while the job was never created: for a moment after `ray start` (longer on a busy
    machine) the head answers "No available agent to submit job". A job that ran and failed is not resubmitted."""
    for attempt in range(1, tries + 1):
        if sh(*cmd, env=env, check=False).returncode == 0:
            return
        status = [str(BIN / "ray"), "job", "status", f"--address=http://127.0.0.1:{dash}", sid]
        if attempt == tries or sh(*status, env=env, check=False).returncode == 0:
            raise SystemExit(f"ray job submit failed (job {sid}, attempt {attempt})")
        time.sleep(10)


def stop_cluster(gcs: int) -> None:
    """Ends the Ray session whose GCS listens on `gcs`: every process naming its session folder (all of a node's Ray
    processes do, on both nodes here) and their children (workers, their browsers), SIGTERM first, then SIGKILL.
    Like `ray stop`, it forgets the address `ray start --head` recorded, which a later plain `ray.init()` on this
    machine would otherwise try to join."""
    import psutil

    lines = {p: " ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])}
    names_gcs = re.compile(rf"(--gcs_server_port=|--gcs[-_]address=\S*:){gcs}(\s|$)")
    sessions = {
        m.group(1)
        for line in lines.values()
        if names_gcs.search(line) and (m := re.search(r"=(\S*/session_[^/\s]+)", line))
    }
    if len(sessions) != 1:
        print(f"no single Ray session on GCS port {gcs} ({sorted(sessions)}): nothing stopped", flush=True)
        return
    [session] = sessions
    own = re.compile(re.escape(session) + r"(/|\s|$)")
    procs = {p for p, line in lines.items() if own.search(line)}
    for p in list(procs):
        try:
            procs.update(p.children(recursive=True))
        except psutil.Error:  # ended meanwhile
            pass
    print(f"+ stopping {len(procs)} processes of {session}", flush=True)
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=15)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    recorded = Path(session).parent / "ray_current_cluster"
    if recorded.is_file() and recorded.read_text().strip().endswith(f":{gcs}"):
        recorded.unlink()


def check_security(dash: int, metrics_ports: list[int], env: dict[str, str]) -> list[str]:
    """Problems found: the Jobs API must refuse a request without the token and answer one with it. Also prints
    where the metrics export ports listen (information: Ray gives no way to bind them narrower)."""
    import urllib.error
    import urllib.request

    import psutil

    problems = []
    token = subprocess.run(
        [str(BIN / "ray"), "get-auth-token"], env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    url = f"http://127.0.0.1:{dash}/api/jobs/"
    for header, want in ((None, "refused"), (f"Bearer {token}", 200)):
        req = urllib.request.Request(url, headers={"Authorization": header} if header else {})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                got: int | str = resp.status
        except urllib.error.HTTPError as e:
            got = "refused" if e.code in (401, 403) else e.code
        if got != want:
            problems.append(
                f"Jobs API {'with' if header else 'without'} the token answered {got}, not {want}"
            )
    listening = sorted(
        (c.laddr.ip, c.laddr.port)
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port in metrics_ports
    )
    print(
        json.dumps({"jobs_api_refuses_without_token": not problems, "metrics_listen": listening}), flush=True
    )
    return problems


def find_browser_nodes(address: str) -> set[str]:
    from ray.util.state import list_nodes

    return {
        n.node_id
        for n in list_nodes(address=address, detail=True)
        if (n.resources_total or {}).get("browser", 0) > 0
    }


def play_miniwob(gcs: int, dash: int, work: Path) -> list[str]:
    """Problems found playing one MiniWoB++ episode (click-button, its scripted expert) through a browser actor that
    the run stack places on the browser node; the reward is the page's own, read by the browser."""
    os.environ["RAY_AUTH_MODE"] = "token"
    import psutil
    import ray
    from ray.util.state import list_actors

    from common import records as R
    from common.config import load_config
    from reward import RewardActor
    from rollout_workers.stack import Stack
    from sites.miniwob.experts import expert_for

    t0 = time.perf_counter()
    os.chdir(ROOT)  # Ray puts the driver's folder on its workers' path: they import the project from here
    cfg = load_config(
        str(ROOT / "configs/miniwob_cpu.yaml"),
        [
            "browser.num_browsers=1",
            "rl.group_size=1",
            "environment.miniwob_tasks=[click-button]",
            f"logging.output_dir={work / 'miniwob'}",
        ],
    )
    ray.init(address=f"127.0.0.1:{gcs}", log_to_driver=False)
    stack = Stack(cfg)
    try:
        stack.start_environment()
        stack.start_browsers()
        task = stack.tasks("test")[0]
        problems = (
            [] if "__MINIWOB__" in task.start_url else [f"the driver filled the start URL: {task.start_url}"]
        )
        actor, expert = stack.pool.actors()[0], expert_for(task)

        async def play() -> R.FinalState:
            obs = await actor.reset(task)
            for _ in range(cfg.scheduling.max_turns):
                action, _ = expert.next_action(obs)
                if isinstance(action, R.Stop):
                    break
                obs = await actor.step(action)
            return await actor.final_state()

        final = asyncio.run(play())
        with RewardActor(cfg.reward, live=False) as rewarder:  # the miniwob check reads the final state only
            reward = rewarder.score(task, final)
        [placed] = list_actors(
            address=f"http://127.0.0.1:{dash}",
            filters=[
                ("class_name", "=", "BrowserActor"),
                ("state", "=", "ALIVE"),
                ("job_id", "=", ray.get_runtime_context().get_job_id()),
            ],
            detail=True,
        )
        port = urlsplit(final.url).port  # who serves the page: looked up while the actor lives
        owners = {
            c.pid
            for c in psutil.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port
        }
    finally:
        stack.close()
        ray.shutdown()
    if placed.node_id not in find_browser_nodes(f"http://127.0.0.1:{dash}"):
        problems.append(f"the MiniWoB++ browser actor ran on {placed.node_id}, not on the browser node")
    if owners != {placed.pid}:
        problems.append(
            f"{final.url} was served by pid {owners}, not by the browser actor (pid {placed.pid})"
        )
    if reward.score != 1.0:
        problems.append(
            f"the expert's click-button episode scored {reward.score}: {reward.checks or reward.error}"
        )
    summary = {
        "url": final.url,
        "served_by_pid": sorted(owners),
        "actor_pid": placed.pid,
        "reward": reward.score,
    }
    print(json.dumps({"miniwob": summary, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    return problems


def verify(dash: int, out: Path, problems: list[str]) -> int:
    os.environ["RAY_AUTH_MODE"] = "token"
    from ray.util.state import list_actors

    address = f"http://127.0.0.1:{dash}"
    browser_nodes = find_browser_nodes(address)
    actors = list_actors(
        address=address, filters=[("class_name", "=", "BrowserActor")], detail=True, limit=1000
    )
    placed = {a.node_id for a in actors}
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    problems = list(problems)
    if not actors:
        problems.append("no BrowserActor ran")
    if not placed <= browser_nodes:
        problems.append(f"browser actors on {placed}, browser nodes are {browser_nodes}")
    if [r["phase"] for r in log] != ["bc", "rl", "eval", "run"]:
        problems.append(f"phases logged: {[r['phase'] for r in log]}")
    names = sorted(a.name for a in list_actors(address=address, detail=True, limit=1000) if a.name)
    print(
        json.dumps(
            {
                "browser_nodes": sorted(browser_nodes),
                "browser_actor_nodes": sorted(placed),
                "actors": names,
                "phases": [r["phase"] for r in log],
            },
            indent=1,
        )
    )
    if problems:
        print("cluster check FAILED: " + "; ".join(problems))
        return 1
    print(
        "cluster check passed: job succeeded, browser actors placed on the browser node, a MiniWoB++ episode "
        "served and played there scored 1, the Jobs API refuses requests without the token (metrics ports printed above: Ray 2.60 binds them on all interfaces)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
