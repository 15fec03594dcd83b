"""`python -m browser_actors observe URL --do ...` end to end, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "browser_actors", "observe", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_observe_and_act(server):
    out = _cli(
        server.url("index.html"),
        "--do",
        "click [5]",
        "--do",
        "type [12] [hello] [0]",
        "--do",
        "goto [http://203.0.113.9/]",
    )
    assert out.returncode == 0, out.stderr
    blocks = out.stdout.split("===== ")[1:]
    assert len(blocks) == 4 and blocks[0].startswith("reset\nURL: ")
    assert '<div id="6"> 1 </div>' in blocks[1] and 'value="hello"' in blocks[2]
    assert "Error: navigation to http://203.0.113.9/ blocked" in blocks[3]


def test_axtree_json_and_bad_action(server):
    out = _cli(server.url("page2.html"), "--mode", "axtree", "--json")
    assert out.returncode == 0, out.stderr
    obs = json.loads(out.stdout.strip().splitlines()[-1])
    assert obs["mode"] == "axtree" and "heading 'Second page'" in obs["text"]
    bad = _cli(server.url("page2.html"), "--do", "fly [to] [moon]")
    assert bad.returncode == 2 and "fly" in bad.stderr
