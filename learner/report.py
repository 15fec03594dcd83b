"""End-of-run report: a results table (report.md), a learning curve (curve.png) and an HTML trajectory viewer.

python -m learner.report RUN_DIR        # rebuild the report of a finished (or interrupted) run
python -m learner.report export RUN_DIR --format parquet|jsonl [--out PATH]   # trajectories as a dataset
python -m learner.report paired BEFORE.jsonl AFTER.jsonl   # any two evaluations of the same episodes, e.g. two
                                                           # checkpoints on one validation range (eval_seeds.jsonl)

Evaluations of a run play the same episodes, so the report also compares them pair by pair (`paired_from_files`:
paired bootstrap interval of the difference, exact McNemar test), which sees a gain that two overlapping
per-evaluation intervals hide.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from common.cli import fail, run
from common.records import Trajectory, iter_jsonl
from rollout_workers.metrics import RolloutSummary, wilson
from rollout_workers.paired import METHOD, PairedDiff, align, paired_difference
from rollout_workers.run_files import trajectory_files
from rollout_workers.viewer import write_viewer

# The labels of a run's evaluations in the order they happen (Progress.stage in learner/train.py).
STAGES = ("before_bc", "after_bc", "after_rl")
KINDS = ("greedy", "sampled")  # eval_<label>.jsonl and eval_<label>_sampled.jsonl


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
    """report.md in `out`: the evaluations (with intervals, sampled success where measured, and per template), their
    paired differences, BC and RL in brief, the curve and the trajectory viewer. `history` is the JSONL log's
    records; its `rollout` entries are read as `RolloutSummary`."""
    out = Path(out)
    _curve(out / "curve.png", history)
    viewer = write_viewer(out)
    lines = ["# Run report", ""] + _eval_table(history, evals)
    lines += _template_table(evals)
    lines += _paired_table(out)
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
    lines += _rl_table([h for h in history if h.get("phase") == "rl"])
    lines += _budget_line(history)
    lines += ["", "![learning curve](curve.png)", "", f"Trajectories: [{viewer.name}]({viewer.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def _rl_table(rl: list[dict[str, Any]]) -> list[str]:
    """One row per RL iteration: training-rollout success, the draws (kept / drawn groups, expert members solved /
    played), how far the update moved the policy (KL(old || new) after the last pass, clip share) and seconds."""
    if not rl:
        return []
    lines = [
        "",
        "| RL iteration | rollout success | groups kept / drawn | expert solved / played | KL(old, new) | clip share "
        "| learner tokens/s | rollout s | learner s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rl:
        roll, learn, draw = r["rollout"], r.get("learner", {}), r.get("sampling", {})
        kl, clip = learn.get("approx_kl"), learn.get("clip_frac")
        lines.append(
            f"| {r['iteration']} | {_rate(roll.get('success'))} | {draw.get('kept', '?')} / {draw.get('drawn', '?')} "
            f"| {draw.get('expert_solved', 0)} / {draw.get('expert_members', 0)} "
            f"| {'n/a' if kl is None else f'{kl:.4f}'} | {'n/a' if clip is None else f'{clip:.3f}'} "
            f"| {learn.get('tokens_per_s', 0):.0f} | {roll.get('seconds') or 0:.0f} | {learn.get('seconds', 0):.0f} |"
        )
    return lines


def _budget_line(history: list[dict[str, Any]]) -> list[str]:
    """Where the RL phase stopped for `rl.time_budget_min`, when it did (the last such record: a resumed run may
    log it again)."""
    rec = next((h for h in reversed(history) if h.get("phase") == "rl_budget"), None)
    if rec is None:
        return []
    return [
        "",
        f"RL stopped after {rec['iterations']} of {rec['of']} iterations: {rec['used_min']:.1f} of the "
        f"{rec['budget_min']:g} minutes of `rl.time_budget_min` were used, and the longest iteration took "
        f"{rec['longest_min']:.1f}.",
    ]


def _eval_records(history: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """label -> the last log record of that evaluation (an evaluation re-run on resume logs twice)."""
    return {h["label"]: h for h in history if h.get("phase") == "eval" and "label" in h}


def _interval(ci: list[float] | None) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "n/a"


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _eval_table(history: list[dict[str, Any]], evals: dict[str, RolloutSummary]) -> list[str]:
    """One row per evaluation: greedy success with its Wilson interval, and the sampled evaluation's success
    beside it when the log record (or summary) carries `sampled_success` (columns shown only then)."""
    logged = _eval_records(history)
    # the log record wins: it holds what the evaluation measured, also fields RolloutSummary may not know
    rows = {label: {**s.to_json(), **logged.get(label, {})} for label, s in evals.items()}
    sampled = any(r.get("sampled_success") is not None for r in rows.values())
    head = "| evaluation | success | 95% interval (Wilson) | episodes |"
    if sampled:
        head += " sampled success | sampled 95% interval | sampled episodes |"
    lines = [head + " by site |", "|---|" + "---|" * (head.count("|") - 1)]
    for label, s in evals.items():
        sites = ", ".join(f"{k} {v:.2f}" for k, v in s.success_by_site.items())
        row = f"| {label} | {_rate(s.success)} | {_interval(s.success_ci95)} | {s.episodes} |"
        if sampled:
            r = rows[label]
            row += (
                f" {_rate(r.get('sampled_success'))} | {_interval(r.get('sampled_success_ci95'))} |"
                f" {r.get('sampled_episodes', 'n/a')} |"
            )
        lines.append(f"{row} {sites} |")
    lines += _guessing_lines(rows)
    return lines


def _guessing_lines(rows: dict[str, dict[str, Any]]) -> list[str]:
    """What guessing scores (rollout_workers/guessing.py): the constant-answer baseline of each evaluation and
    its successes that never visited the page the expert reads the answer from."""
    out = []
    for label, r in rows.items():
        base, blind = r.get("constant_baseline"), r.get("blind")
        if not base and not blind:
            continue
        text = f"- {label}:"
        if base:
            text += f" a constant answer per template (the commonest train answer) scores {base['successes']}/{base['scored']}"
        if blind:
            text += f"; {blind['blind']} of {blind['judged']} judged successes never visited the answer page"
        out.append(text)
    return ["", "Guessing, for comparison:", *out] if out else []


def eval_file(out: Path, label: str, kind: str = "greedy") -> Path:
    """Where a run saves an evaluation's trajectories: eval_<label>.jsonl, or eval_<label>_sampled.jsonl."""
    if kind not in KINDS:
        raise ValueError(f"evaluation kind {kind!r} is not one of {KINDS}")
    return Path(out) / (f"eval_{label}.jsonl" if kind == "greedy" else f"eval_{label}_sampled.jsonl")


def _load_episodes(path: Path) -> list[Trajectory]:
    """An evaluation's trajectories; a torn line (a run killed mid-write) is skipped and counted."""
    torn: list[int] = []
    trajs = list(iter_jsonl(path, on_error=lambda n, _msg: torn.append(n)))
    if torn:
        print(f"[report] {path}: {len(torn)} torn line(s) skipped (lines {torn[:5]})", file=sys.stderr)
    return trajs


def paired_from_files(
    out: Path, label_a: str, label_b: str, *, kind: str = "greedy", seed: int = 0
) -> PairedDiff | None:
    """Evaluation `label_b` against `label_a` of the run in `out`, episode by episode (matched by task and sample);
    None when either evaluation's trajectory file is missing."""
    a, b = eval_file(out, label_a, kind), eval_file(out, label_b, kind)
    if not (a.exists() and b.exists()):
        return None
    return paired_between(a, b, seed=seed)


def paired_between(a: Path, b: Path, *, seed: int = 0) -> PairedDiff:
    """The evaluation in trajectory file `b` against the one in `a`, episode by episode (task id, sample)."""
    return _paired(_load_episodes(a), _load_episodes(b), seed)


def _paired(before: list[Trajectory], after: list[Trajectory], seed: int) -> PairedDiff:
    rewards_before, rewards_after, unmatched = align(before, after)
    diff = paired_difference(rewards_before, rewards_after, seed=seed)
    diff.unmatched = unmatched
    return diff


def comparisons(labels: list[str]) -> list[tuple[str, str]]:
    """Each evaluation against the one before it, and the first against the last when there are more than two."""
    pairs = list(zip(labels, labels[1:], strict=False))  # neighbours
    if len(labels) > 2:
        pairs.append((labels[0], labels[-1]))
    return pairs


def _paired_table(out: Path) -> list[str]:
    """The paired differences of the run's evaluations, per kind (greedy, sampled), for those on disk."""
    rows = []
    for kind in KINDS:
        labels = [s for s in STAGES if eval_file(out, s, kind).exists()]
        for a, b in comparisons(labels):
            rows.append(_paired_row(f"{a} -> {b}", kind, paired_from_files(out, a, b, kind=kind)))
    if not rows:
        return []
    return ["", "Paired differences (the same episodes in both evaluations):", *_paired_lines(rows)]


def _paired_row(comparison: str, kind: str, d: PairedDiff | None) -> str:
    if d is None or d.n == 0:
        return f"| {comparison} | {kind} | 0 | n/a | n/a | n/a | n/a | 0 | 0 | {_left_out(d)} |"
    ci = f"[{d.ci95[0]:+.3f}, {d.ci95[1]:+.3f}]"
    return (
        f"| {comparison} | {kind} | {d.n} | {d.success_before:.3f} | {d.success_after:.3f} | "
        f"{d.difference:+.3f} {ci} | {d.mcnemar_p:.3g} | {d.gained} | {d.lost} | {_left_out(d)} |"
    )


def _paired_lines(rows: list[str]) -> list[str]:
    """The paired-difference table around `rows` (`_paired_row`), and how to read it."""
    return [
        "",
        "| comparison | kind | pairs | success before | success after | difference [95% interval] | McNemar p "
        "| gained (0->1) | lost (1->0) | left out |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Method: {METHOD}; an episode unscorable in either evaluation, or in only one of them, is left out. "
        "With few discordant pairs (gained + lost under ~20) the percentile interval is too narrow (it can exclude "
        "0 while p > 0.05): read McNemar's p there.",
    ]


def compare_files(a: Path, b: Path, *, seed: int = 0) -> str:
    """`python -m learner.report paired A B`: the table of `b` against `a` and the flips per template. ValueError
    when a file is missing, or when no episode of one is in the other (different tasks, seeds or samples)."""
    for p in (a, b):
        if not p.is_file():
            raise ValueError(
                f"{p}: no such file (expected an evaluation's trajectories, e.g. eval_after_bc.jsonl)"
            )
    before, after = _load_episodes(a), _load_episodes(b)
    d = _paired(before, after, seed)
    if d.n + d.left_out == 0:
        raise ValueError(
            f"no episode of {b} is in {a} ({d.unmatched} unmatched): a paired difference needs the same "
            "(task id, sample) in both, e.g. two evaluations of one run or of one --seeds list"
        )
    lines = [f"{a} -> {b}", *_paired_lines([_paired_row("before -> after", "as played", d)])]
    lines += ["", "| template | pairs | before | after | gained | lost |", "|---|---|---|---|---|---|"]
    for key in sorted({_template(t) for t in after}):
        t = _paired(
            [x for x in before if _template(x) == key], [x for x in after if _template(x) == key], seed
        )
        if t.n:
            won = [round(t.success_before * t.n), round(t.success_after * t.n)]
            lines.append(f"| {key} | {t.n} | {won[0]} | {won[1]} | {t.gained} | {t.lost} |")
    return "\n".join(lines)


def _template(t: Trajectory) -> str:
    """The episode's template (as evaluations record it), else its task id without the last part."""
    template = t.meta.get("template")
    return str(template) if template is not None else str(t.task_id).rsplit(".", 1)[0]


def _left_out(d: PairedDiff | None) -> str:
    return "n/a" if d is None else f"{d.left_out} unscorable, {d.unmatched} unmatched"


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


def _rl_points(history: list[dict[str, Any]]) -> list[tuple[int, float, float, float]]:
    """(iteration, success, low, high) of each RL iteration's training rollouts; low/high: 95% Wilson interval
    over the scored episodes (unscorable and infra-failed ones are not scored, as in `summarize`)."""
    points = []
    for h in history:
        if h.get("phase") != "rl":
            continue
        s = RolloutSummary.from_json(h["rollout"])
        scored = s.episodes - s.unscorable - s.infra_failures
        if s.success is None or scored <= 0:
            continue
        low, high = wilson(round(s.success * scored), scored)
        points.append((int(h["iteration"]), s.success, low, high))
    return points


def _eval_points(
    history: list[dict[str, Any]], rl_iterations: int
) -> list[tuple[str, str, float, float, list[float]]]:
    """(label, kind, x, success, [low, high]) of each evaluation, greedy and sampled. Before RL it sits at
    iteration 0 (the weights iteration 0's rollouts used), after RL at `rl_iterations` (the weights after the last
    update); evaluations sharing an x are spread a little so their bars do not hide each other."""
    xs = {"before_bc": 0, "after_bc": 0, "after_rl": rl_iterations}
    found = []
    for label, rec in _eval_records(history).items():
        for kind, key in (("greedy", "success"), ("sampled", "sampled_success")):
            if rec.get(key) is not None:
                ci = rec.get(f"{key}_ci95") or [rec[key], rec[key]]
                found.append((label, kind, xs.get(label, 0), rec[key], ci))
    step = 0.02 * max(1, rl_iterations)
    out = []
    for x in sorted({p[2] for p in found}):
        same = [p for p in found if p[2] == x]
        for j, (label, kind, _, y, ci) in enumerate(same):
            out.append((label, kind, x + (j - (len(same) - 1) / 2) * step, y, ci))
    return out


def _curve(path: Path, history: list[dict[str, Any]]) -> None:
    """RL training-rollout success per iteration (line, shaded 95% Wilson band) and the held-out evaluations
    (points with 95% error bars; hollow = sampled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4))
    rl = _rl_points(history)
    if rl:
        it, succ, low, high = zip(*rl, strict=True)
        ax.plot(it, succ, marker=".", color="C0", label="RL rollout success (train tasks)")
        ax.fill_between(it, low, high, color="C0", alpha=0.2, linewidth=0, label="95% interval (Wilson)")
    rl_iterations = max((p[0] for p in rl), default=-1) + 1
    labels: list[str] = []  # one colour per evaluation label, greedy and sampled alike
    for label, kind, x, y, ci in _eval_points(history, rl_iterations):
        labels += [label] if label not in labels else []
        ax.errorbar(
            [x],
            [y],
            yerr=[[y - ci[0]], [ci[1] - y]],
            fmt="s" if kind == "greedy" else "o",
            mfc="none" if kind == "sampled" else None,
            color=f"C{labels.index(label) + 1}",
            capsize=3,
            label=f"held-out {label} ({kind})",
        )
    ax.set_xlabel("RL iteration")
    ax.set_ylabel("success rate")
    ax.set_ylim(-0.02, 1.02)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export"]:
        from learner.export import main as export

        return export(argv[1:])
    if argv[:1] == ["paired"]:
        if len(argv) != 3:
            fail("usage: python -m learner.report paired BEFORE.jsonl AFTER.jsonl")
        try:
            print(compare_files(Path(argv[1]), Path(argv[2])))
        except ValueError as e:
            fail(str(e))
        return 0
    if len(argv) != 1:
        fail(
            "usage: python -m learner.report RUN_DIR | export RUN_DIR [--format parquet|jsonl] [--out PATH] "
            "| paired BEFORE.jsonl AFTER.jsonl"
        )
    out = Path(argv[0])
    if not (out / "log.jsonl").is_file() and not trajectory_files(out):
        what = "no such folder" if not out.is_dir() else "neither log.jsonl nor trajectories in this folder"
        fail(f"RUN_DIR {out}: {what} (expected a run folder written by learner.train, e.g. runs/demo)")
    history = read_log(out / "log.jsonl")
    evals = {h["label"]: RolloutSummary.from_json(h) for h in history if h.get("phase") == "eval"}
    print(write_report(out, history, evals))
    return 0


if __name__ == "__main__":
    run(main)
