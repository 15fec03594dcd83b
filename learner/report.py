"""End-of-run report: a results table (report.md), a learning curve (curve.png) and an HTML trajectory viewer.

python -m learner.report RUN_DIR        # rebuild the report of a finished (or interrupted) run
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path
from typing import Any

from common.records import Trajectory, load_jsonl
from rollout_workers.metrics import RolloutSummary


def read_log(path: Path) -> list[dict[str, Any]]:
    """The run's log records, read line by line; a torn line (a run killed mid-write) is skipped and counted."""
    records, torn = [], 0
    if not Path(path).exists():
        return records
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                torn += 1
    if torn:
        print(f"[report] {path}: {torn} torn line(s) skipped", file=sys.stderr)
    return records


def write_report(out: Path, history: list[dict[str, Any]], evals: dict[str, RolloutSummary]) -> Path:
    """report.md in `out`: the evaluations (with intervals and per template), BC and RL in brief, the curve and the
    trajectory viewer. `history` is the JSONL log's records; its `rollout` entries are read as `RolloutSummary`."""
    out = Path(out)
    _curve(out / "curve.png", history)
    viewer = _viewer(out)
    lines = [
        "# Run report",
        "",
        "| evaluation | success | 95% interval (Wilson) | episodes | by site |",
        "|---|---|---|---|---|",
    ]
    for label, s in evals.items():
        sites = ", ".join(f"{k} {v:.2f}" for k, v in s.success_by_site.items())
        succ = "n/a" if s.success is None else f"{s.success:.3f}"
        ci = s.success_ci95
        interval = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "n/a"
        lines.append(f"| {label} | {succ} | {interval} | {s.episodes} | {sites} |")
    lines += _template_table(evals)
    bc = next((h for h in history if h.get("phase") == "bc"), None)
    if bc:
        checks = bc.get("held_out") or []
        acc = " -> ".join(f"{c['token_accuracy']:.2f}" for c in checks) or "n/a"
        lines += [
            "",
            f"Behaviour cloning: {bc.get('demos')} demonstrations ({bc.get('turns')} turns), {bc.get('steps')} "
            f"steps, loss {bc.get('loss_first', float('nan')):.3f} -> {bc.get('loss_last', float('nan')):.3f}; "
            f"held-out action-token accuracy by epoch: {acc}.",
        ]
    rl = [h for h in history if h.get("phase") == "rl"]
    if rl:
        last = RolloutSummary.from_json(rl[-1]["rollout"])
        lines += [
            "",
            f"RL iterations: {len(rl)}; last rollout success {last.success}; learner tokens/s "
            f"{rl[-1]['learner'].get('tokens_per_s')}",
        ]
    lines += ["", "![learning curve](curve.png)", "", f"Trajectories: [{viewer.name}]({viewer.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def _template_table(evals: dict[str, RolloutSummary]) -> list[str]:
    """Success per template (rows) and evaluation (columns), as successes/episodes."""
    labels = [k for k, v in evals.items() if v.success_by_template]
    if not labels:
        return []
    templates = sorted({t for k in labels for t in evals[k].success_by_template}, key=str)
    out = ["", "| template | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for t in templates:
        cells = []
        for k in labels:
            cell = evals[k].success_by_template.get(t)
            cells.append(f"{round(cell['success'] * cell['episodes'])}/{cell['episodes']}" if cell else "-")
        out.append(f"| {t} | " + " | ".join(cells) + " |")
    return out


def _curve(path: Path, history: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    rl = [
        (h["iteration"], RolloutSummary.from_json(h["rollout"]).success)
        for h in history
        if h.get("phase") == "rl"
    ]
    rl = [(i, s) for i, s in rl if s is not None]
    if rl:
        ax.plot([i for i, _ in rl], [s for _, s in rl], marker=".", label="RL rollout success (train tasks)")
    evals = [h for h in history if h.get("phase") == "eval" and h.get("success") is not None]
    last_it = max((i for i, _ in rl), default=0)
    xs = {"before_bc": 0, "after_bc": 0, "after_rl": last_it}
    for h in evals:
        ax.scatter([xs.get(h["label"], 0)], [h["success"]], marker="s", s=50, label=f"held-out: {h['label']}")
    ax.set_xlabel("RL iteration")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _episode_html(t: Trajectory) -> str:
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


def _viewer(out: Path, per_file: int = 200) -> Path:
    parts = [
        "<html><head><meta charset='utf-8'><title>trajectories</title><style>"
        "body{font-family:sans-serif;max-width:1100px;margin:auto} section{border-top:2px solid #444;"
        "margin-top:1em} .turn{border-left:3px solid #9bd;padding-left:8px;margin:6px 0}"
        " pre{white-space:pre-wrap;background:#f6f6f6;max-height:300px;overflow:auto} .err{color:#b00}"
        " .model{background:#eef}</style></head><body><h1>Trajectories</h1>"
    ]
    for name in (
        "eval_before_bc.jsonl",
        "eval_after_bc.jsonl",
        "eval_after_rl.jsonl",
        "rollouts.jsonl",
        "eval_test.jsonl",
    ):
        path = out / name
        if not path.exists():
            continue
        trajs = load_jsonl(str(path))
        parts.append(f"<h2>{html.escape(name)} ({len(trajs)} episodes; first {per_file})</h2>")
        parts.extend(_episode_html(t) for t in trajs[:per_file])
    parts.append("</body></html>")
    path = out / "viewer.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m learner.report RUN_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    history = read_log(out / "log.jsonl")
    evals = {h["label"]: RolloutSummary.from_json(h) for h in history if h.get("phase") == "eval"}
    print(write_report(out, history, evals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
