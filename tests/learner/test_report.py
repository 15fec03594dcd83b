"""The run report on a small synthetic run folder: log.jsonl plus eval_<label>[_sampled].jsonl files of real
Trajectory records, read back through `python -m learner.report`'s main; the paired rows' numbers are hand-counted."""

from __future__ import annotations

import json
import re

import pytest

from common.records import Trajectory, TrajectoryGroup, dump_jsonl
from learner import report
from rollout_workers.metrics import summarize, wilson

# task i+1's reward in each evaluation (None: unscorable); task 11 only in after_rl (unmatched)
GREEDY = {
    "before_bc": [0, 0, 0, 0, 0, 0, 0, 1, 1, None],
    "after_bc": [0, 0, 0, 1, 0, 0, 0, 1, 0, 1],
    "after_rl": [1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1],
}


def _episodes(rewards, samples=1, reward_of=None):
    return [
        Trajectory(
            task_id=i + 1,
            sample_idx=k,
            reward=None if r is None else float(reward_of(r, k) if reward_of else r),
            termination="stop",
            meta={"template": i % 3},
        )
        for i, r in enumerate(rewards)
        for k in range(samples)
    ]


def _eval_record(label, trajs, **extra):
    return {
        "phase": "eval",
        "label": label,
        **summarize([TrajectoryGroup(task_id=0, trajectories=trajs)]).to_json(),
        **extra,
    }


@pytest.fixture
def run_dir(tmp_path):
    history = []
    for label, rewards in GREEDY.items():
        trajs = _episodes(rewards)
        dump_jsonl(trajs, str(tmp_path / f"eval_{label}.jsonl"))
        extra = {}
        if label == "after_rl":  # only this evaluation measured sampled success
            extra = {"sampled_success": 0.5, "sampled_success_ci95": [0.24, 0.76], "sampled_episodes": 10}
        history.append(_eval_record(label, trajs, **extra))
    # sampled evaluations, 2 samples of 5 tasks: before all fail; after, sample 0 wins and sample 1 fails
    dump_jsonl(_episodes([0] * 5, samples=2), str(tmp_path / "eval_before_bc_sampled.jsonl"))
    after = _episodes([0] * 5, samples=2, reward_of=lambda r, k: 1 - k)
    dump_jsonl(after, str(tmp_path / "eval_after_rl_sampled.jsonl"))
    for it, wins in enumerate([1, 3, 6]):  # RL rollouts: 8 episodes each, one unscorable
        trajs = _episodes([1] * wins + [0] * (7 - wins) + [None])
        rollout = summarize([TrajectoryGroup(task_id=0, trajectories=trajs)]).to_json()
        history.append({"phase": "rl", "iteration": it, "rollout": rollout, "learner": {"tokens_per_s": 5.0}})
    with open(tmp_path / "log.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(h) + "\n" for h in history)
    return tmp_path


def _row(text, start):
    rows = [line for line in text.splitlines() if line.startswith(start)]
    assert len(rows) == 1, (start, rows)
    return [c.strip() for c in rows[0].strip("|").split("|")]


def test_report_shows_paired_differences_and_sampled_success(run_dir, capsys):
    assert report.main([str(run_dir)]) == 0
    text = (run_dir / "report.md").read_text()
    assert (run_dir / "curve.png").stat().st_size > 0

    # columns: comparison, kind, pairs, before, after, difference [95%], McNemar p, gained, lost, left out
    row = _row(text, "| before_bc -> after_bc | greedy |")
    assert row[2:5] == ["9", "0.222", "0.222"]  # task 10 unscorable before: left out
    assert row[5].startswith("+0.000 [")
    assert row[6:] == ["1", "1", "1", "1 unscorable, 0 unmatched"]  # 2 * P(X <= 1 | 2) capped at 1

    row = _row(text, "| after_bc -> after_rl | greedy |")
    assert row[2:5] == ["10", "0.300", "0.700"]
    assert row[5].startswith("+0.400 [")
    assert row[6:] == ["0.125", "4", "0", "0 unscorable, 1 unmatched"]  # 2 / 2^4; task 11 unmatched

    row = _row(text, "| before_bc -> after_rl | greedy |")
    assert row[2:5] == ["9", "0.222", "0.667"]
    assert row[5].startswith("+0.444 [")
    assert row[6:] == ["0.125", "4", "0", "1 unscorable, 1 unmatched"]

    # sampled: only before_bc and after_rl exist, so one comparison; pairs keyed by (task, sample)
    row = _row(text, "| before_bc -> after_rl | sampled |")
    assert row[2:] == ["10", "0.000", "0.500", row[5], "0.0625", "5", "0", "0 unscorable, 0 unmatched"]
    low, high = (float(x) for x in row[5].split("[")[1].rstrip("]").split(","))
    assert row[5].startswith("+0.500 [") and 0.1 <= low < 0.5 < high <= 0.9
    assert "| after_bc -> after_rl | sampled |" not in text

    # evaluation table: sampled success beside greedy where the log record has it (after_rl: 8/11 greedy)
    assert _row(text, "| after_rl |")[1:7] == [
        "0.727",
        row_ci(GREEDY["after_rl"]),
        "11",
        "0.500",
        "[0.24, 0.76]",
        "10",
    ]
    assert _row(text, "| before_bc |")[4:7] == ["n/a", "n/a", "n/a"]


def row_ci(rewards):
    scored = [r for r in rewards if r is not None]
    low, high = wilson(sum(scored), len(scored))
    return f"[{low:.2f}, {high:.2f}]"


def test_report_without_sampled_or_paired_files_keeps_the_plain_table(tmp_path):
    trajs = _episodes([1, 0])
    history = [_eval_record("before_bc", trajs)]
    (tmp_path / "log.jsonl").write_text(json.dumps(history[0]) + "\n")
    assert report.main([str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "| evaluation | success | 95% interval (Wilson) | episodes | by site |" in text
    assert "sampled" not in text and "Paired differences" not in text
    assert report.paired_from_files(tmp_path, "before_bc", "after_rl") is None


def test_paired_from_files_is_what_the_driver_calls(run_dir):
    d = report.paired_from_files(run_dir, "after_bc", "after_rl")
    assert (d.n, d.gained, d.lost, d.unmatched) == (10, 4, 0, 1)
    assert d.difference == pytest.approx(0.4) and d.mcnemar_p == pytest.approx(0.125)
    with pytest.raises(ValueError, match="kind 'hot'"):
        report.paired_from_files(run_dir, "after_bc", "after_rl", kind="hot")


def test_curve_points_carry_wilson_bands_and_sit_where_the_evaluations_happened(run_dir):
    history = report.read_log(run_dir / "log.jsonl")
    rl = report._rl_points(history)
    assert [p[0] for p in rl] == [0, 1, 2]
    # 7 scored episodes per iteration (the unscorable one is not counted)
    assert rl[2][1:] == pytest.approx((6 / 7, *wilson(6, 7)))
    points = {(label, kind): (x, y, ci) for label, kind, x, y, ci in report._eval_points(history, 3)}
    assert set(points) == {
        ("before_bc", "greedy"),
        ("after_bc", "greedy"),
        ("after_rl", "greedy"),
        ("after_rl", "sampled"),
    }
    # before RL: iteration 0, the two spread evenly about it; after RL: after the 3 updates
    assert points["before_bc", "greedy"][0] == pytest.approx(-points["after_bc", "greedy"][0])
    assert points["before_bc", "greedy"][0] < 0
    assert points["after_rl", "greedy"][0] + points["after_rl", "sampled"][0] == pytest.approx(6)
    assert points["after_rl", "sampled"][1:] == (0.5, [0.24, 0.76])


def test_paired_cli_compares_any_two_evaluation_files_per_template(run_dir, capsys):
    """`python -m learner.report paired A B`: e.g. two checkpoints evaluated on one validation range."""
    assert (
        report.main(["paired", str(run_dir / "eval_after_bc.jsonl"), str(run_dir / "eval_after_rl.jsonl")])
        == 0
    )
    out = capsys.readouterr().out
    cells = _row(out, "| before -> after |")
    assert cells[2:5] == ["10", "0.300", "0.700"] and cells[7:] == ["4", "0", "0 unscorable, 1 unmatched"]
    # template = task index % 3; gained per template: tasks 1 (t0), 2 (t1), 3 and 9 (t2)
    # template, pairs, before, after, gained, lost
    assert _row(out, "| 0 |") == ["0", "4", "2", "3", "1", "0"]
    assert _row(out, "| 1 |") == ["1", "3", "1", "2", "1", "0"]
    assert _row(out, "| 2 |") == ["2", "3", "0", "2", "2", "0"]


def test_paired_cli_refuses_a_missing_file_or_files_with_no_common_episode(run_dir, tmp_path, capsys):
    other = tmp_path / "other.jsonl"
    dump_jsonl([Trajectory(task_id=99, sample_idx=0, reward=1.0, termination="stop")], str(other))
    for args, says in (
        ([str(run_dir / "nope.jsonl"), str(other)], "nope.jsonl: no such file"),
        ([str(run_dir / "eval_after_bc.jsonl"), str(other)], "no episode of .*other.jsonl is in"),
        ([str(other)], "usage: python -m learner.report paired BEFORE.jsonl AFTER.jsonl"),
    ):
        with pytest.raises(SystemExit) as e:
            report.main(["paired", *args])
        assert e.value.code == 2
        assert re.search(says, capsys.readouterr().err)
