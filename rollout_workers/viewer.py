"""viewer.html of a run: every episode in one table, filtered by file, task, outcome or words of the intent; a
click opens the episode turn by turn (observation, reply, action) with the reward's checks and their reasons.

One self-contained file (its script and styles inline, the episodes as JSON inside it), so it can be mailed or
opened from a copied run folder, and it fetches nothing: its Content-Security-Policy allows no connections and
only its own script, by hash. Observations are page text the model saw, so they may hold markup: the page builds
its DOM from text nodes only, and the JSON is written with `<`, `>` and `&` escaped so it cannot close its tag.
Long observations start folded (<details>) and are kept whole.

Rebuilt by `python -m learner.report RUN_DIR`; the training driver writes it at the end of a run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections import deque
from pathlib import Path
from typing import Any

from common.records import Trajectory
from rollout_workers.run_files import iter_trajectories, trajectory_files

HERE = Path(__file__).resolve().parent
# Per file, the last episodes kept: a page of ~1000 episodes with long observations is tens of MB, which a
# browser opens in a second or two; a long run's rollouts.jsonl holds far more (the newest matter most).
MAX_PER_FILE = 1000


def outcome(t: Trajectory) -> str:
    """The episode's outcome as the metrics count it: infra_error, unscorable, success (reward >= 1) or fail."""
    if t.failure:
        return "infra_error"
    if t.reward is None:
        return "unscorable"
    return "success" if t.reward >= 1 else "fail"


def episode_json(t: Trajectory, file: str) -> dict[str, Any]:
    """What the page shows of one episode (not its token ids, logprobs or timings)."""
    return {
        "file": file,
        "phase": t.meta.get("phase"),
        "label": t.meta.get("label"),
        "iteration": t.meta.get("iteration"),
        "task": str(t.task_id),
        "sample": t.sample_idx,
        "intent": t.intent,
        "sites": t.sites,
        "source": t.source,
        "outcome": outcome(t),
        "reward": t.reward,
        "termination": t.termination,
        "failure": t.failure,
        "reward_error": t.meta.get("reward_error"),
        "answer": t.answer,
        "final_url": t.final_url,
        "checks": [c.model_dump() for c in t.checks],
        "turns": [
            {
                "index": turn.index,
                "url": turn.observation.url,
                "error": turn.observation.last_action_error,
                "infra_error": turn.observation.infra_error,
                "observation": turn.observation.text,
                "truncated": turn.observation.truncated,
                "reply": turn.completion_text,
                "finish_reason": turn.finish_reason,
                "action": turn.action.model_dump_json() if turn.action else None,
                "parse_error": turn.parse_error,
                "weight_version": turn.weight_version,
                "screenshot": turn.observation.screenshot,
            }
            for turn in t.turns
        ],
    }


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element: no `<`, `>` or `&` outside escapes, so `</script>` cannot occur."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(episodes: list[dict[str, Any]], files: list[dict[str, Any]], title: str) -> str:
    """The page: the template with its script, the script's hash in the policy, the title and the data."""
    script = (HERE / "viewer.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    fields = {
        "TITLE": html.escape(title),
        "SCRIPT_HASH": f"sha256-{digest}",
        "SCRIPT": script,
        "DATA": _script_json({"files": files, "episodes": episodes}),
    }
    template = (HERE / "viewer.html").read_text(encoding="utf-8")
    # one pass: a field's value (an observation in DATA) is never searched for another field's marker
    return re.sub(r"@@(TITLE|SCRIPT_HASH|SCRIPT|DATA)@@", lambda m: fields[m.group(1)], template)


def write_viewer(out: Path, max_per_file: int = MAX_PER_FILE) -> Path:
    """viewer.html in the run folder `out`, from all its trajectory files (the last `max_per_file` of each)."""
    out = Path(out)
    episodes: list[dict[str, Any]] = []
    files = []
    for path in trajectory_files(out):
        kept: deque[Trajectory] = deque(maxlen=max_per_file)
        total = 0
        for t in iter_trajectories(path):
            kept.append(t)
            total += 1
        files.append({"name": path.name, "episodes": total, "shown": len(kept)})
        episodes.extend(episode_json(t, path.name) for t in kept)
    page = out / "viewer.html"
    page.write_text(render(episodes, files, out.resolve().name), encoding="utf-8")
    return page
