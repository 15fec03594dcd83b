"""The soak (`make soak`, not in `make test`): the CPU preset trains for 30+ minutes on a local Ray cluster while
real faults are injected at seeded random times; then the run folder is checked for lost or repeated work.

    .venv/bin/python scripts/soak.py [--minutes 30] [--seed 0] [--out runs/soak] [--iterations 10]

1. The storefront runs as its own process (`python -m sites serve`), so it can be paused, and a Ray head is started
   (`ray start --head`, token authentication, dashboard on 127.0.0.1) with a `browser` resource for four browsers.
2. The driver (`python -m learner.train --config configs/cpu_demo.yaml`, phases [bc, rl]: BC on the preset's
   80 expert plays, one epoch (after 48 plays, 21 demonstrations, it solved none of its first 2 iterations), then
   `--iterations` RL iterations checkpointed every 2) runs as a child process joined to that cluster. RL runs with
   what the RL-signal work added, so all of it is under the faults: dynamic sampling (2 groups with mixed outcomes
   per iteration, at most 6 draws), an expert member in all-failed groups, two optimizer passes per batch.
3. Once RL has begun, one of each fault below is injected, in a seeded order, spread over `--minutes`:
   - `chromium`: SIGKILL of a Chromium process under a BrowserActor (twice);
   - `browser_actor`: SIGKILL of a BrowserActor process;
   - `engine`: SIGKILL of the vLLM engine actor's process (Ray restarts it; the router heals it);
   - `reward`: SIGKILL of a reward actor's process (Ray restarts it and retries its calls);
   - `site_pause`: SIGSTOP of the sites process for 120 s, then SIGCONT;
   - `driver`: SIGKILL of the driver's process group once a checkpoint exists, then the same command again
     (it resumes from the checkpoint).
4. Every actor's resident memory (its process and its children: a BrowserActor's Chromium) is sampled each minute.
5. Checks: every RL iteration logged once; every trajectory of the rollouts log recorded once; each iteration's
   groups all recorded, trained or failed with a reason; groups lost = 0; the driver finished; and the run did what
   it is there to test: the policy solved some training episodes, groups were trained in optimizer steps, and
   expert members were played (the summary also counts groups drawn, kept and dropped). Prints a summary and
   writes `soak.json` in the run folder; the exit status is 0 only if every check holds.

`ray stop --force` at the start and the end stops every Ray on the machine: run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))
from common.net import free_port  # noqa: E402 - after the path set-up that makes the repository importable

FAULTS = ["chromium", "chromium", "browser_actor", "engine", "reward", "site_pause", "driver"]
PAUSE_S = 120.0


def say(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.out = Path(args.out).resolve()
        self.rng = random.Random(args.seed)
        self.env = {
            **os.environ,
            "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
            "RAY_AUTH_MODE": "token",
            "RAY_USAGE_STATS_ENABLED": "0",
            "DS_ACCELERATOR": "cpu",
            "HF_HUB_OFFLINE": "1",
            "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
            "TOKENIZERS_PARALLELISM": "false",
        }
        self.dash = free_port()
        self.sites: subprocess.Popen | None = None
        self.driver: subprocess.Popen | None = None
        self.driver_starts = 0
        self.injected: list[dict[str, Any]] = []
        self.memory: dict[str, dict[str, Any]] = {}  # actor id -> kind, name, samples [(t, MB)]
        self.rl_start_s = 0.0  # seconds from the start to RL's first logged iteration
        os.environ["RAY_AUTH_MODE"] = "token"  # for this process's state-API calls

    # -- set-up ------------------------------------------------------------------------------------------------
    def start_sites(self) -> dict[str, str]:
        data = Path(tempfile.mkdtemp(prefix="soak-sites-"))
        self.sites_data = data
        cmd = [sys.executable, "-m", "sites", "serve", "--base-port", "0", "--data-dir", str(data)]
        cmd += ["--sites", "shopping"]
        log_path = self.out.parent / f"{self.out.name}-sites.log"
        # a file, not a pipe: a pipe nobody reads would fill up and block the server
        self.sites = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, text=True
        )
        urls: dict[str, str] = {}
        deadline = time.time() + 300
        while time.time() < deadline and self.sites.poll() is None:
            text = log_path.read_text()
            if "sandbox admin key" in text:
                for line in text.splitlines():
                    m = re.match(r"\s+(\w+)\s+(http://\S+)\s+health:", line)
                    if m:
                        urls[m.group(1)] = m.group(2)
                break
            time.sleep(1)
        if not urls:
            raise RuntimeError("the sites printed no URL")
        self.env["WA_SANDBOX_KEY"] = (data / ".sandbox_key").read_text().strip()
        say(f"sites up: {urls} (pid {self.sites.pid})")
        return urls

    def start_ray(self) -> None:
        ray = str(BIN / "ray")
        subprocess.run([ray, "stop", "--force"], env=self.env, capture_output=True)
        # a head with token authentication needs a token: made once per machine (~/.ray/auth_token), kept if there
        subprocess.run([ray, "get-auth-token", "--generate"], env=self.env, check=True, capture_output=True)
        self.gcs = free_port()
        started = subprocess.run(
            [
                ray,
                "start",
                "--head",
                f"--port={self.gcs}",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={self.dash}",
                "--num-cpus=4",
                "--resources",
                '{"browser": 4}',
                "--disable-usage-stats",
            ],
            env=self.env,
            capture_output=True,
            text=True,
        )
        if started.returncode != 0:
            tail = (started.stderr or started.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"ray start --head failed ({started.returncode}): " + " | ".join(tail))
        self.env["RAY_ADDRESS"] = f"127.0.0.1:{self.gcs}"
        say(f"ray head up (gcs {self.gcs}, dashboard 127.0.0.1:{self.dash})")

    def driver_cmd(self, urls: dict[str, str]) -> list[str]:
        a = self.args
        overrides = [
            "phases=[bc, rl]",
            "bc.probe_per_template=0",
            "bc.epochs=1",
            "bc.held_out=2",
            f"rl.iterations={a.iterations}",
            "rl.dynamic_sampling=true",
            "rl.max_groups_per_iteration=6",
            "rl.expert_guidance=true",
            "rl.updates_per_batch=2",
            "learner.checkpoint_every=2",
            "environment.start_sites=false",
            f"environment.urls={json.dumps(urls)}",
            f"environment.auth_dir={self.sites_data / '.auth'}",
            f"logging.output_dir={self.out}",
            "logging.progress=false",
        ]
        cmd = [sys.executable, "-m", "learner.train", "--config", "configs/cpu_demo.yaml"]
        for o in overrides:
            cmd += ["--set", o]
        return cmd

    def start_driver(self, cmd: list[str]) -> None:
        self.driver_starts += 1
        log = open(self.out.parent / f"{self.out.name}-driver-{self.driver_starts}.log", "w")
        self.driver = subprocess.Popen(
            cmd, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        say(f"driver start {self.driver_starts} (pid {self.driver.pid})")

    # -- watching ----------------------------------------------------------------------------------------------
    def log_rows(self) -> list[dict[str, Any]]:
        """The run's log records; a line being written is skipped (learner.report.read_log)."""
        from learner.report import read_log

        return read_log(self.out / "log.jsonl")

    def rl_iterations_logged(self) -> int:
        return sum(1 for r in self.log_rows() if r.get("phase") == "rl")

    def actors(self) -> list[Any]:
        from ray.util.state import list_actors

        try:
            return list_actors(
                address=f"http://127.0.0.1:{self.dash}",
                filters=[("state", "=", "ALIVE")],
                detail=True,
                limit=1000,
            )
        except Exception as e:  # noqa: BLE001 - the dashboard restarts with nothing; sampled again next minute
            say(f"actor table unavailable: {e}")
            return []

    def sample_memory(self) -> None:
        import psutil

        now = time.time()
        for a in self.actors():
            if not a.pid:
                continue
            try:
                proc = psutil.Process(a.pid)
                rss = proc.memory_info().rss + sum(
                    c.memory_info().rss for c in proc.children(recursive=True) if c.is_running()
                )
            except psutil.Error:
                continue
            rec = self.memory.setdefault(a.actor_id, {"kind": a.class_name, "name": a.name, "samples": []})
            rec["samples"].append((round(now - self.t0), round(rss / 2**20)))

    # -- faults ------------------------------------------------------------------------------------------------
    def _pid_of(self, kind: str) -> int | None:
        alive = [a for a in self.actors() if a.class_name == kind and a.pid]
        return self.rng.choice(alive).pid if alive else None

    def inject(self, fault: str, cmd: list[str]) -> dict[str, Any]:
        import psutil

        rec: dict[str, Any] = {
            "fault": fault,
            "t_s": round(time.time() - self.t0),
            "rl_logged": self.rl_iterations_logged(),
        }
        if fault == "chromium":
            pid = self._pid_of("BrowserActor")
            kids = []
            if pid:
                kids = [
                    c for c in psutil.Process(pid).children(recursive=True) if "chrom" in c.name().lower()
                ]
            if not kids:
                rec["skipped"] = "no Chromium process found"
                return rec
            # the browser process itself: the oldest Chromium under the actor
            root = min(kids, key=lambda c: c.create_time())
            os.kill(root.pid, signal.SIGKILL)
            rec["pid"] = root.pid
        elif fault in ("browser_actor", "engine", "reward"):
            kind = {"browser_actor": "BrowserActor", "engine": "InferenceActor", "reward": "RewardActor"}[
                fault
            ]
            pid = self._pid_of(kind)
            if pid is None:
                rec["skipped"] = f"no live {kind}"
                return rec
            os.kill(pid, signal.SIGKILL)
            rec["pid"] = pid
        elif fault == "site_pause":
            assert self.sites is not None
            os.kill(self.sites.pid, signal.SIGSTOP)
            time.sleep(PAUSE_S)
            os.kill(self.sites.pid, signal.SIGCONT)
            rec["paused_s"] = PAUSE_S
        elif fault == "driver":
            assert self.driver is not None
            os.killpg(self.driver.pid, signal.SIGKILL)
            self.driver.wait()
            time.sleep(10)  # Ray reaps the dead driver's actors
            self.start_driver(cmd)
        say(f"injected {rec}")
        return rec

    # -- the run -------------------------------------------------------------------------------------------------
    def run(self) -> int:
        a = self.args
        if self.out.exists():
            shutil.rmtree(self.out)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.t0 = time.time()
        try:
            urls = self.start_sites()
            self.start_ray()
            cmd = self.driver_cmd(urls)
            self.start_driver(cmd)
            # faults start once RL has logged an iteration, spread over the rest of the soak
            while self.rl_iterations_logged() < 1:
                self._tick()
            rl_start = time.time()
            self.rl_start_s = rl_start - self.t0
            window = max(60.0, a.minutes * 60 - (rl_start - self.t0) - 300)
            faults = list(FAULTS)
            self.rng.shuffle(faults)
            # the driver kill needs a checkpoint (every 2 iterations): never first
            if faults[0] == "driver":
                faults[0], faults[1] = faults[1], faults[0]
            gap = window / len(faults)
            when = [rl_start + gap * (i + self.rng.uniform(0.3, 0.9)) for i in range(len(faults))]
            for fault, at in zip(faults, when, strict=True):
                while time.time() < at:
                    self._tick()
                if fault == "driver":
                    while self.rl_iterations_logged() < 2:
                        self._tick()
                self.injected.append(self.inject(fault, cmd))
            while self.driver is not None and self.driver.poll() is None:
                self._tick()
            rc = self.driver.returncode if self.driver else -1
            return self.report(rc)
        finally:
            if self.driver is not None and self.driver.poll() is None:
                os.killpg(self.driver.pid, signal.SIGKILL)
            if self.sites is not None:
                self.sites.send_signal(signal.SIGCONT)
                self.sites.terminate()
            subprocess.run([str(BIN / "ray"), "stop", "--force"], env=self.env, capture_output=True)

    def _tick(self) -> None:
        """Wait a little; sample memory once a minute; fail if the driver died on its own."""
        time.sleep(5)
        if time.time() - getattr(self, "_sampled", 0) >= 60:
            self._sampled = time.time()
            self.sample_memory()
        if self.driver is not None and self.driver.poll() not in (None, 0):
            raise RuntimeError(
                f"the driver exited with {self.driver.returncode} (see {self.out.name}-driver-{self.driver_starts}.log)"
            )
        if self.driver is not None and self.driver.poll() == 0 and len(self.injected) < len(FAULTS):
            raise RuntimeError(
                f"the driver finished before every fault was injected ({len(self.injected)} of {len(FAULTS)}): "
                "raise --iterations"
            )

    # -- checks ------------------------------------------------------------------------------------------------
    def report(self, rc: int) -> int:
        a = self.args
        rows = self.log_rows()
        rl = [r for r in rows if r.get("phase") == "rl"]
        stalled = [r for r in rows if r.get("phase") == "rl_stalled"]
        problems = []
        iters = Counter(r["iteration"] for r in rl)
        if sorted(iters) != list(range(a.iterations)) or any(n != 1 for n in iters.values()):
            problems.append(f"RL iterations logged: {dict(sorted(iters.items()))}")
        from common.records import iter_jsonl

        trajs = defaultdict(list)  # (iteration, task) -> trajectories
        seen = Counter()
        for t in iter_jsonl(self.out / "rollouts.jsonl"):
            key = (t.meta.get("iteration"), t.task_id)
            trajs[key].append(t)
            seen[(key, t.sample_idx)] += 1
        repeated = sum(n - 1 for n in seen.values() if n > 1)
        if repeated:
            problems.append(f"{repeated} trajectories recorded more than once")
        rl_cfg = json.loads((self.out / "config.json").read_text())["rl"]
        cfg_tasks, group_size = rl_cfg["tasks_per_iteration"], rl_cfg["group_size"]
        groups_by_iter = Counter(it for it, _ in trajs)
        # groups each iteration drew: its log record says so (dynamic sampling draws a varying number)
        drawn = {r["iteration"]: r.get("sampling", {}).get("drawn", cfg_tasks) for r in rl}
        lost = sum(max(0, drawn.get(i, cfg_tasks) - groups_by_iter.get(i, 0)) for i in range(a.iterations))
        if lost:
            problems.append(f"{lost} groups lost")
        failed = [k for k, ts in trajs.items() if any(t.failure for t in ts)]
        # a guided group holds one expert member beside its G policy members
        unexplained = [
            k
            for k, ts in trajs.items()
            if sum(t.source != "expert" for t in ts) != group_size
            or sum(t.source == "expert" for t in ts) > 1
        ]
        if unexplained:
            problems.append(f"groups with a wrong number of trajectories: {unexplained[:5]}")
        retried = sum(1 for ts in trajs.values() if ts[0].meta.get("attempts", 1) > 1)
        work = _rl_work(rl, trajs)
        for what, n in (
            ("policy episodes solved", work["policy_solved"]),
            ("optimizer steps", work["optimizer_steps"]),
            ("expert members", work["expert_members"]),
        ):
            if n == 0:
                problems.append(f"no {what}: the soak did not exercise RL as it trains with a scoring policy")
        if rc != 0:
            problems.append(f"the driver exited with {rc}")
        skipped = [f for f in self.injected if f.get("skipped")]
        if skipped:
            problems.append(f"faults not injected: {skipped}")
        memory = {}
        for aid, rec in self.memory.items():
            # from the first sample a minute into RL (BC's optimizer state and the first RL step allocated by then)
            s = [x for x in rec["samples"] if x[0] >= self.rl_start_s + 60]
            if len(s) >= 2:
                memory[f"{rec['name'] or rec['kind']} ({aid[:6]})"] = {
                    "kind": rec["kind"],
                    "minutes": round((s[-1][0] - s[0][0]) / 60, 1),
                    "start_mb": s[0][1],
                    "end_mb": s[-1][1],
                    "max_mb": max(m for _, m in s),
                    "samples": rec["samples"],  # (seconds since the soak began, MB), every minute
                }
        wall = time.time() - self.t0
        if wall < a.minutes * 60:
            problems.append(f"ran {wall / 60:.1f} min, under the {a.minutes} asked for")
        summary = {
            "wall_min": round(wall / 60, 1),
            "driver_starts": self.driver_starts,
            "faults_injected": self.injected,
            "rl_iterations": len(iters),
            "stalled_attempts": len(stalled),
            "groups_recorded": len(trajs),
            "groups_failed": len(failed),
            "groups_retried": retried,
            "groups_lost": lost,
            "rl_work": work,
            "trajectories_repeated": repeated,
            "memory": memory,
            "problems": problems,
        }
        (self.out / "soak.json").write_text(json.dumps(summary, indent=1))
        print(json.dumps({k: v for k, v in summary.items() if k != "memory"}, indent=1))
        print(
            "| actor (from a minute into RL) | minutes | start MB | end MB | max MB |\n|---|---|---|---|---|"
        )
        for name, m in sorted(memory.items()):
            print(f"| {name} | {m['minutes']} | {m['start_mb']} | {m['end_mb']} | {m['max_mb']} |")
        print("soak " + ("passed" if not problems else "FAILED: " + "; ".join(problems)))
        return 0 if not problems else 1


def _rl_work(rl: list[dict[str, Any]], trajs: dict[Any, list[Any]]) -> dict[str, int]:
    """What RL did over the logged iterations: groups drawn / kept / dropped by dynamic sampling, expert members
    played and solved, optimizer steps taken, and the policy's own training episodes and successes."""
    sampling = [r.get("sampling", {}) for r in rl]
    learner = [r.get("learner", {}) for r in rl]
    policy = [t for ts in trajs.values() for t in ts if t.source != "expert" and t.reward is not None]
    return {
        "groups_drawn": sum(s.get("drawn", 0) for s in sampling),
        "groups_kept": sum(s.get("kept", 0) for s in sampling),
        "groups_dropped": sum(s.get("dropped", 0) for s in sampling),
        "expert_members": sum(s.get("expert_members", 0) for s in sampling),
        "expert_solved": sum(s.get("expert_solved", 0) for s in sampling),
        # one entry per optimizer step of the call; a call without one (no signal) has none
        "optimizer_steps": sum(len(x.get("approx_kl_steps") or []) for x in learner if not x.get("skipped")),
        "policy_episodes": len(policy),
        "policy_solved": sum(1 for t in policy if t.reward >= 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="least soak length; faults spread over it")
    ap.add_argument(
        "--iterations",
        type=int,
        default=10,
        help="RL iterations of the run (10: about 35 min of RL, 46 min in all here)",
    )
    ap.add_argument("--seed", type=int, default=0, help="seeds the faults' order, times and targets")
    ap.add_argument("--out", default=str(ROOT / "runs" / "soak"), help="the run folder")
    return Soak(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
