"""Entry points line-buffer standard output (`common.cli.run`), so a line an actor prints reaches a log file when it
is printed: Ray's driver forwards actors' lines to `sys.stdout` unflushed, and a file stdout is block-buffered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SEES_ITS_OWN_LINE = """
import sys
from pathlib import Path
from common.cli import run

def main():
    print("[bc] step 1/72: a line an actor printed")  # no flush, as Ray's driver prints forwarded lines
    return 0 if "step 1/72" in Path(sys.argv[1]).read_text() else 3

if sys.argv[2] == "run":
    run(main)
raise SystemExit(main())
"""


@pytest.mark.parametrize("through_run", [True, False])
def test_a_printed_line_reaches_a_stdout_file_at_once_under_run(through_run, tmp_path):
    """Under `common.cli.run` a line printed without flush is in the stdout file before the next statement; without
    it (the control) Python holds it in its block buffer, which is how a learner's BC steps went missing from a log."""
    out = tmp_path / "stdout.log"
    # no PYTHONUNBUFFERED, as in a fresh shell or a `ray job submit` driver
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    with open(out, "w") as f:
        got = subprocess.run(
            [sys.executable, "-c", SEES_ITS_OWN_LINE, str(out), "run" if through_run else "plain"],
            cwd=ROOT,
            env=env,
            stdout=f,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert got.returncode == (0 if through_run else 3), got.stderr[-2000:]
    assert "step 1/72" in out.read_text()  # the buffered line is written at exit either way
