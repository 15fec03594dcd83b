"""The typed records the driver keeps: an evaluation's summary survives the progress file, the learner's state
survives its checkpoint's trainer_state.json, and the report reads both back by attribute."""

from __future__ import annotations

import json

from learner import checkpoint as ckpt
from learner.progress import Progress, changed_settings
from learner.report import write_report
from rollout_workers.metrics import RolloutSummary


def _summary(episodes: int, wins: int, ci95: list[float]) -> RolloutSummary:
    """An evaluation of one template (101)."""
    rate = wins / episodes
    return RolloutSummary(
        episodes=episodes,
        success=rate,
        success_ci95=ci95,
        success_by_template={"101": {"success": rate, "episodes": episodes}},
    )


def test_progress_keeps_evaluations_as_summaries(tmp_path):
    s = _summary(24, 6, [0.1, 0.45])
    Progress(next_phase=2, stage="after_bc", evals={"before_bc": s}).save(tmp_path)
    back = Progress.load(tmp_path)
    assert back.evals == {"before_bc": s} and back.next_phase == 2


def test_changed_settings_names_each_differing_leaf():
    before = {"rl": {"iterations": 20, "lr": 1e-5, "templates": []}, "seed": 0, "old": 1}
    after = {"rl": {"iterations": 15, "lr": 1e-5, "templates": [101]}, "seed": 0, "new": {"x": "a"}}
    assert changed_settings(before, after) == [
        "rl.iterations: 20 -> 15",
        "rl.templates: [] -> [101]",
        'old: 1 -> "(absent)"',
        'new: "(absent)" -> {"x": "a"}',
    ]
    assert changed_settings(after, after) == []


def test_a_log_entry_reads_back_without_its_own_keys():
    entry = {
        "time": 1.0,
        "phase": "eval",
        "label": "after_rl",
        **RolloutSummary(episodes=3, success=1 / 3).to_json(),
    }
    assert RolloutSummary.from_json(entry) == RolloutSummary(episodes=3, success=1 / 3)


def test_learner_state_round_trips_through_a_checkpoint_and_ignores_unknown_fields(tmp_path):
    state = ckpt.LearnerState(
        iteration=7, rl_steps=3, weight_version=5, extra={"sampler": {"n": 1}}, tag="rl-2"
    )
    final = ckpt.commit(ckpt.begin(tmp_path, 7), state)
    assert ckpt.read_state(final) == state
    assert ckpt.LearnerState.from_json({**state.to_json(), "from_a_later_version": 1}) == state


def test_the_report_reads_the_summaries(tmp_path):
    before, after = _summary(2, 0, [0.0, 0.66]), _summary(2, 1, [0.09, 0.91])
    history = [
        {"phase": "eval", "label": "before_bc", **before.to_json()},
        {"phase": "rl", "iteration": 0, "rollout": after.to_json(), "learner": {"tokens_per_s": 10.0}},
    ]
    text = write_report(tmp_path, history, {"before_bc": before, "after_rl": after}).read_text()
    assert "| after_rl | 0.500 | [0.09, 0.91] | 2 |" in text
    assert "| 101 | 0/2 | 1/2 |" in text


def test_a_run_resumed_with_other_settings_says_so_and_keeps_the_old_config(tmp_path, capsys):
    from common.config import load_config
    from learner.train import Run

    out = tmp_path / "run"
    cfg = load_config(
        "configs/miniwob_cpu.yaml",
        [f"logging.output_dir={out}", "phases=[eval,rl,eval]", "rl.iterations=4"],
    )
    run = Run(cfg)  # builds nothing yet: no Ray, no actors
    previous = json.loads(cfg.model_dump_json())
    previous["rl"]["iterations"] = 6
    Progress(next_phase=1, stage="after_bc").save(out)  # the killed run had finished its first evaluation
    run.iteration = 5  # the learner's checkpoint holds 5 RL iterations

    run._fresh_or_resume(False, previous)

    assert run.progress.next_phase == 1  # resumed, not restarted
    said = capsys.readouterr().out
    assert "resumed with other settings" in said and "rl.iterations: 6 -> 4" in said
    assert "the RL phase has nothing left to run" in said
    (kept,) = out.glob("config.*.json")
    assert json.loads(kept.read_text())["rl"]["iterations"] == 6
    (record,) = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert record["phase"] == "resume" and record["changed_settings"] == ["rl.iterations: 6 -> 4"]
    assert record["previous_config"] == kept.name
