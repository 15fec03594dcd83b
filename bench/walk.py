"""A fixed 15-step walk over the bundled shop (logged in), written once and played by our BrowserActor and by the
peers, so both sides take the same actions on the same pages; and the helper that runs a peer driver.

A step names its target by accessibility role and name (`{"op": "click", "role": "link", "name": "Cameras"}`);
each side finds the element id in its own observation text: "[id] role 'name'" in an accessibility tree (ours
and BrowserGym's share that line format), or the step's `html` pattern / a tag pattern in our HTML observation.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS_VENV = ROOT / ".venv-peers"

SEARCH_BOX = r'<input id="(\d+)" name="q"'
SHOP_WALK: list[dict[str, Any]] = [
    {"op": "click", "role": "link", "name": "Electronics"},
    {"op": "click", "role": "link", "name": "One Stop Market"},
    {"op": "click", "role": "link", "name": "Cameras"},
    {"op": "fill", "role": "textbox", "name": "Search", "text": "camera", "html": SEARCH_BOX},
    {"op": "click", "role": "button", "name": "Search"},
    {"op": "scroll"},
    {"op": "back"},
    {"op": "goto", "path": "/checkout/cart/"},
    {"op": "click", "role": "link", "name": "My Account"},
    {"op": "goto", "path": "/sales/order/history/"},
    {"op": "click", "role": "link", "name": "Home & Kitchen"},
    {"op": "fill", "role": "textbox", "name": "Search", "text": "mug", "html": SEARCH_BOX},
    {"op": "click", "role": "button", "name": "Search"},
    {"op": "back"},
    {"op": "goto", "path": "/wishlist/"},
]


def element_id(step: dict, text: str, mode: str) -> str:
    """The id of the step's target in one of our observations (`mode` "axtree" | "html")."""
    if mode == "axtree":
        pattern = r"\[(\d+)\] " + re.escape(f"{step['role']} '{step['name']}'")
    elif "html" in step:
        pattern = step["html"]
    else:
        tag = {"link": "a", "button": "button"}[step["role"]]
        pattern = rf'<{tag} id="(\d+)"[^>]*>\s*{re.escape(html.escape(step["name"]))}\s*</{tag}>'
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"walk step {step}: no match in the {mode} observation:\n{text[:1500]}")
    return m.group(1)


def our_action(step: dict, obs: Any, base: str) -> Any:
    """The step as one of our actions, given our current observation."""
    from common import records as R

    op = step["op"]
    if op == "goto":
        return R.Goto(url=base + step["path"])
    if op == "back":
        return R.GoBack()
    if op == "scroll":
        return R.Scroll(direction="down")
    eid = element_id(step, obs.text, obs.mode)
    if op == "click":
        return R.Click(element_id=eid)
    return R.Type(element_id=eid, text=step["text"], press_enter=False)


def ensure_peers() -> Path:
    """Make the peer virtualenv when missing (bench/setup_peers.sh is idempotent); its python."""
    subprocess.run(["bash", str(ROOT / "bench" / "setup_peers.sh")], check=True, stdout=subprocess.DEVNULL)
    return PEERS_VENV / "bin" / "python"


def run_peer(script: str, spec: dict, timeout_s: float = 900) -> dict:
    """Run bench/peers/<script> in the peer venv with `spec` as JSON on stdin; its JSON stdout."""
    py = ensure_peers()
    proc = subprocess.run(
        [str(py), str(ROOT / "bench" / "peers" / script)],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={**os.environ, "PLAYWRIGHT_BROWSERS_PATH": str(PEERS_VENV / "ms-playwright")},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"peer {script} failed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)
