"""Task schema, run config and record round-trips (issue 2)."""

import ast
import json
from pathlib import Path

import pytest

from common.config import ConfigError, TrainConfig, load_config
from common.records import (
    Click,
    Observation,
    Stop,
    Trajectory,
    TrajectoryGroup,
    Turn,
    Type,
    action_from_json,
    dump_jsonl,
    load_jsonl,
)
from common.tasks import Task, fill_placeholders, load_tasks
from common.tasks import main as tasks_main

LITE = Path(__file__).resolve().parents[3] / "shared" / "webarena" / "test_webarena_lite.raw.json"
ROOT = Path(__file__).resolve().parents[2]


def test_all_165_lite_configs_load_and_reserialise_without_loss():
    raw = json.loads(LITE.read_text())
    tasks = load_tasks(LITE)
    assert len(tasks) == len(raw) == 165
    for t, r in zip(tasks, raw, strict=True):
        assert t.to_config() == r, t.task_id
    # unknown fields are kept, not dropped
    assert tasks[0].model_extra["old_task_id"] == raw[0]["old_task_id"]


def test_placeholders_are_filled_longest_first():
    t = Task.model_validate(json.loads(LITE.read_text())[0])
    filled = t.with_urls({"shopping": "http://s:1/", "shopping_admin": "http://a:2"})
    assert filled.start_url == "http://a:2"
    out = fill_placeholders({"u": ["__SHOPPING__/x", "__SHOPPING_ADMIN__/y"]}, {"__SHOPPING__": "http://s"})
    assert out == {"u": ["http://s/x", "__SHOPPING_ADMIN__/y"]}


def test_validate_cli_names_task_and_field(tmp_path, capsys):
    bad = json.loads(LITE.read_text())[:3]
    del bad[1]["intent"]
    bad[2]["eval"]["eval_types"] = "string_match"
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(bad))
    assert tasks_main(["validate", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"task {bad[1]['task_id']}: intent" in err
    assert f"task {bad[2]['task_id']}: eval.eval_types" in err
    assert tasks_main(["validate", str(LITE)]) == 0
    assert "165 tasks OK" in capsys.readouterr().out


def test_config_overrides_and_errors(tmp_path):
    cfg = load_config(
        None,
        [
            "rl.group_size=8",
            "browser.num_browsers=8",
            "prompt.thinking=true",
            "environment.urls={shopping: http://x}",
        ],
    )
    assert cfg.rl.group_size == 8 and cfg.prompt.thinking is True
    assert cfg.environment.urls == {"shopping": "http://x"}
    with pytest.raises(ConfigError, match=r"unknown key 'rl.group_sise' \(did you mean 'rl.group_size'\?\)"):
        load_config(None, ["rl.group_sise=8"])
    with pytest.raises(ConfigError, match="bad value for 'scheduling.max_turns'"):
        load_config(None, ["scheduling.max_turns=many"])
    with pytest.raises(ConfigError, match="not key=value"):
        load_config(None, ["rl.group_size"])
    y = tmp_path / "c.yaml"
    y.write_text("rl:\n  group_size: 0\n")
    with pytest.raises(ConfigError, match="group_size must be >= 1"):
        load_config(y)


def test_every_config_field_is_described():
    def walk(model):
        for name, f in model.model_fields.items():
            assert f.description, f"{model.__name__}.{name} has no description"
            if isinstance(f.annotation, type) and hasattr(f.annotation, "model_fields"):
                walk(f.annotation)

    walk(TrainConfig)


def test_presets_load():
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        load_config(path)


def test_records_round_trip(tmp_path):
    obs = Observation(text="[1] button 'Go'", url="http://x/", tabs=["x"], last_action_error="no such id")
    turn = Turn(
        index=0,
        observation=obs,
        prompt_ids=[1, 2, 3],
        completion_ids=[4, 5],
        logprobs=[-0.1, -0.2],
        action=Type(element_id="1", text="hi", press_enter=False),
        timings={"generate": 0.5},
    )
    bad = Turn(index=1, observation=obs, completion_ids=[9], logprobs=[-1.0], parse_error="no action found")
    traj = Trajectory(task_id=7, sample_idx=2, turns=[turn, bad], answer="42", reward=1.0, termination="stop")
    g = TrajectoryGroup(
        task_id=7, trajectories=[traj, traj.model_copy(update={"sample_idx": 3, "reward": None})]
    )
    assert traj.id == "7#2" and turn.loss_mask == [0, 0, 0, 1, 1]
    assert TrajectoryGroup.model_validate_json(g.model_dump_json()) == g
    f = tmp_path / "t.jsonl"
    dump_jsonl(g.trajectories, str(f))
    assert load_jsonl(str(f)) == g.trajectories
    f.write_text(f.read_text() + "{not json\n")
    with pytest.raises(ValueError, match=r"t.jsonl:3: not a valid Trajectory"):
        load_jsonl(str(f))
    assert action_from_json({"type": "click", "element_id": "3"}) == Click(element_id="3")
    assert action_from_json('{"type": "stop"}') == Stop(answer="")


def test_no_eval_or_exec_anywhere_in_the_project():
    offenders = []
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if any(p.startswith(".venv") for p in parts) or "build" in parts or "runs" in parts:
            continue  # virtualenvs (.venv, the benches' .venv-peers) hold other people's code
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("eval", "exec")
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
