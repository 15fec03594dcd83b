"""`python -m rollout_workers.evaluate --seeds`: bad input is one line on stderr and exit status 2, before Ray.

Each case runs the real command line in a subprocess, which also reports whether `ray` was ever imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The evaluator's own __main__, then a line saying whether Ray was imported on the way.
RUN = """import runpy, sys
try:
    runpy.run_module("rollout_workers.evaluate", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as e:
    code = e.code
print("ray imported" if "ray" in sys.modules else "no ray")
sys.exit(code)
"""


def evaluate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RUN, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("config", "seeds", "says"),
    [
        (
            "configs/miniwob_cpu.yaml",
            "100000-100019,7",
            "--seeds 100000-100019,7: 7 is a train seed (train is 0..499)",
        ),
        ("configs/miniwob_cpu.yaml", "100000-1000a", "'100000-1000a' is not a seed or a range: expected"),
        ("configs/miniwob_cpu.yaml", "100010-100000", "ranges LOW-HIGH with LOW <= HIGH"),
        ("configs/cpu_demo.yaml", "100000", "--seeds needs a config with environment.kind: miniwob"),
    ],
)
def test_bad_seeds_exit_2_with_one_line_before_ray(config: str, seeds: str, says: str):
    got = evaluate("--config", config, "--seeds", seeds)
    assert got.returncode == 2, got.stderr
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in got.stderr
    assert got.stdout.strip() == "no ray"


def test_good_seeds_give_the_configured_tasks_of_each_seed():
    from common.config import load_config
    from rollout_workers.evaluate import explicit_seed_tasks

    cfg = load_config(str(ROOT / "configs/miniwob_cpu.yaml"), [])
    tasks = explicit_seed_tasks(cfg, "100000-100001,100049")  # all in the stored table: no page read
    names = cfg.environment.miniwob_tasks
    assert [t.task_id for t in tasks] == [f"miniwob.{n}.{s}" for s in (100000, 100001, 100049) for n in names]
