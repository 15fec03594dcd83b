"""The trajectory viewer: episodes as one HTML page, turn by turn, with the reward's checks.

    write_viewer(run_dir / "viewer.html", [episode_html(t) for t in trajectories])

Written by the end-of-run report (learner/report.py, every evaluation and rollout file of a run) and by
`python -m rollout_workers.play` (the one episode it played), so both read the same way.
"""

from __future__ import annotations

import html
from pathlib import Path

from common.records import Trajectory

_HEAD = (
    "<html><head><meta charset='utf-8'><title>trajectories</title><style>"
    "body{font-family:sans-serif;max-width:1100px;margin:auto} section{border-top:2px solid #444;"
    "margin-top:1em} .turn{border-left:3px solid #9bd;padding-left:8px;margin:6px 0}"
    " pre{white-space:pre-wrap;background:#f6f6f6;max-height:300px;overflow:auto} .err{color:#b00}"
    " .model{background:#eef}</style></head><body><h1>Trajectories</h1>"
)


def episode_html(t: Trajectory) -> str:
    """One episode as an HTML section: the reward's checks, then every turn (page, model reply, parsed action)."""
    checks = "".join(
        f"<li><b>{html.escape(c.type)}</b> {c.score}: {html.escape(c.why)}</li>" for c in t.checks
    )
    turns = []
    for turn in t.turns:
        shot = (
            f'<img src="{html.escape(turn.observation.screenshot)}" width="480">'
            if turn.observation.screenshot
            else ""
        )
        action = turn.action.model_dump_json() if turn.action else f"parse error: {turn.parse_error}"
        err = turn.observation.last_action_error
        turns.append(
            f"<div class='turn'><h4>turn {turn.index} · {html.escape(turn.observation.url)}</h4>"
            + (f"<p class='err'>last action error: {html.escape(err)}</p>" if err else "")
            + f"<details><summary>observation</summary><pre>{html.escape(turn.observation.text)}</pre></details>"
            f"<pre class='model'>{html.escape(turn.completion_text)}</pre>"
            f"<p><b>action</b> <code>{html.escape(action)}</code></p>{shot}</div>"
        )
    reward = "unscored" if t.reward is None else f"{t.reward:g}"
    return (
        f"<section><h3>task {html.escape(str(t.task_id))} #{t.sample_idx} · reward {reward} · "
        f"{t.termination}{' · failure: ' + html.escape(t.failure) if t.failure else ''}</h3>"
        f"<p>{html.escape(t.intent)}</p><p>answer: {html.escape(str(t.answer))}</p>"
        f"<ul>{checks}</ul>{''.join(turns)}</section>"
    )


def write_viewer(path: Path, parts: list[str]) -> Path:
    """The page of `parts` (episode sections and headings) at `path`."""
    path.write_text("\n".join([_HEAD, *parts, "</body></html>"]), encoding="utf-8")
    return path
