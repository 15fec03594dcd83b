"""Subprocess for test_rendezvous.py: one single-process learner rendezvous, as a Ray worker would run it.

    python tests/learner/rendezvous_worker.py parent|child
`parent` starts torch.distributed (its TCP store keeps its port), checks that no MASTER_* variable entered its
environment, then starts `child` with that environment, as a Ray worker started later would inherit it. Both do an
all_reduce and print one JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import torch
import torch.distributed as dist

from learner.engine import init_distributed


def main(role: str) -> int:
    init_distributed(world_size=1, rank=0)
    t = torch.ones(1)
    dist.all_reduce(t)
    leaked = sorted(k for k in ("MASTER_ADDR", "MASTER_PORT") if k in os.environ)
    child = None
    if role == "parent":
        done = subprocess.run(
            [sys.executable, __file__, "child"], capture_output=True, text=True, timeout=300
        )
        child = {
            "rc": done.returncode,
            "out": done.stdout.strip().splitlines()[-1:],
            "err": done.stderr[-2000:],
        }
    print(json.dumps({"role": role, "sum": t.item(), "leaked": leaked, "child": child}), flush=True)
    # a process group left to the interpreter's exit can abort it ("terminate called without an active exception":
    # seen once, rc -6, when gloo's threads outlive the static destructors)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
