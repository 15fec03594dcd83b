"""Run every benchmark, one after the other, and print one markdown table of their figures (`make bench`).

    .venv/bin/python bench/run_all.py [--only context,memory] [--skip inference] [--quick]

Each bench runs as its own process (so an engine or a browser left behind by one cannot slow the next), its
output kept in bench/results/<name>.log; the figures come from the bench/results/<name>.json it writes
(bench/report.py). A bench that fails or writes no JSON gets a row saying so, and the others still run. The
table (figure, ours, baseline, ratio, target, met?) is printed and written to bench/results/table.md with the
date, the machine and its load, which the README's bench section shows. `--quick` passes smaller sizes.
`--reuse` puts the figures of benches left out by --only / --skip into the table from their last JSON (dated),
so one bench can be re-run without re-running the rest.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import RESULTS, machine  # noqa: E402

# (name, script, arguments, quick arguments): in the order they run, lighter first.
# Benches that run the driver several times get their own time limit (seconds), above --timeout's default.
LONG = {"overlap": 2700.0, "rl_throughput": 3600.0}
BENCHES = [
    ("sites", "bench_sites.py", [], ["--reps", "10"]),
    ("browser", "bench_browser.py", [], ["--steps", "12", "--baseline-steps", "2"]),
    ("reward", "bench_reward.py", [], ["--checks", "8", "--baseline", "1"]),
    ("browser_peer", "bench_browser_peer.py", [], ["--loops", "1"]),
    ("reward_peer", "bench_reward_peer.py", [], ["--per-kind", "3"]),
    ("context", "bench_context.py", [], ["--episodes", "2"]),
    ("memory", "bench_memory.py", [], ["--actors", "3"]),
    ("learner", "bench_learner.py", [], ["--repeats", "1"]),
    ("inference", "bench_inference.py", [], ["--episodes", "4", "--turns", "2"]),
    # overlap makes the short BC run whose policy rollouts then uses (each still runs alone without the other)
    ("overlap", "bench_overlap.py", ["--iterations", "3"], ["--iterations", "3"]),
    # the RL loop against commit 04625e0, from the same short BC run
    ("rl_throughput", "bench_rl_throughput.py", [], ["--iterations", "2", "--repeats", "1"]),
    ("rollouts", "bench_rollouts.py", [], ["--tasks", "4"]),
    ("learner_options", "bench_learner_options.py", [], ["--repeats", "1"]),
    ("shared_prompts", "bench_shared_prompts.py", [], ["--repeats", "1"]),
]


def run(name: str, script: str, argv: list[str], timeout_s: float) -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    log, out = RESULTS / f"{name}.log", RESULTS / f"{name}.json"
    t0 = time.time()
    print(f"== {script} {' '.join(argv)}", flush=True)
    with open(log, "w") as f:
        try:
            rc = subprocess.run(
                [sys.executable, str(HERE / script), *argv],
                stdout=f,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
            ).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    seconds = time.time() - t0
    fresh = out.exists() and out.stat().st_mtime >= t0
    doc = json.loads(out.read_text()) if fresh else {}
    status = "ok" if rc == 0 and fresh else (f"rc {rc}" if rc != 0 else "no JSON")
    print(f"   {status} in {seconds:.0f} s (log: {log})", flush=True)
    return {"name": name, "status": status, "seconds": seconds, "figures": doc.get("figures", [])}


def table(results: list[dict]) -> str:
    rows = ["| bench | figure | ours | baseline | ratio | target | met? |", "|---|---|---|---|---|---|---|"]
    for r in results:
        if not r["figures"]:
            rows.append(f"| {r['name']} | ({r['status']}: see bench/results/{r['name']}.log) | | | | | |")
        for f in r["figures"]:
            ratio = "n/a" if f["ratio"] is None else f"{f['ratio']:.3g}"
            met = {True: "yes", False: "**no**", None: "-"}[f["met"]]
            rows.append(
                f"| {r['name']} | {f['figure']} | {f['ours']} | {f['baseline']} | {ratio} | "
                f"{f['target'] or '-'} | {met} |"
            )
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated bench names")
    ap.add_argument("--skip", default="", help="comma-separated bench names")
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=1200,
        help="seconds per bench (overlap, rl_throughput: the larger of this and their own)",
    )
    ap.add_argument("--reuse", action="store_true", help="left-out benches: figures from their last JSON")
    args = ap.parse_args()
    only, skip = set(filter(None, args.only.split(","))), set(filter(None, args.skip.split(",")))
    unknown = (only | skip) - {b[0] for b in BENCHES}
    if unknown:
        raise SystemExit(f"unknown bench(es): {', '.join(sorted(unknown))}")
    t0 = time.time()
    results = []
    for name, script, full, quick in BENCHES:
        if (not only or name in only) and name not in skip:
            limit = max(args.timeout, LONG.get(name, 0.0))
            results.append(run(name, script, quick if args.quick else full, limit))
        elif args.reuse and (RESULTS / f"{name}.json").exists():
            doc = json.loads((RESULTS / f"{name}.json").read_text())
            results.append(
                {"name": f"{name} ({doc['date']})", "status": "earlier run", "figures": doc["figures"]}
            )
    head = (
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
        f"all benches took {(time.time() - t0) / 60:.1f} min."
    )
    text = f"{head}\n\n{table(results)}\n"
    (RESULTS / "table.md").write_text(text)
    print(f"\n{text}")
    return 0 if all(r["status"] in ("ok", "earlier run") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
