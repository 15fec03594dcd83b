"""Bad configs and task files fail at load, naming the file, the key or task id, and the field (issue 12, 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.config import ConfigError, load_config
from reward.__main__ import main as reward_main
from reward.plan import validate_file

LITE = Path(__file__).resolve().parents[3] / "shared" / "webarena" / "test_webarena_lite.raw.json"
ROOT = Path(__file__).resolve().parents[2]


def test_a_duplicate_yaml_key_is_refused_with_file_and_lines(tmp_path):
    y = tmp_path / "run.yaml"
    y.write_text("rl:\n  group_size: 2\nscheduling:\n  max_turns: 3\nrl:\n  iterations: 1\n")
    with pytest.raises(ConfigError, match=rf"{y}:5: duplicate key 'rl' \(first given on line 1\)"):
        load_config(y)
    y.write_text("rl:\n  group_size: 2\n  lr: 1.0e-6\n  group_size: 4\n")  # nested, not only top level
    with pytest.raises(ConfigError, match=r":4: duplicate key 'group_size' \(first given on line 2\)"):
        load_config(y)
    with pytest.raises(ConfigError, match="duplicate key 'shopping'"):
        load_config(None, ["environment.urls={shopping: http://a, shopping: http://b}"])


def test_yaml_merge_keys_may_still_be_overridden(tmp_path):
    y = tmp_path / "run.yaml"
    y.write_text(
        "environment:\n  urls:\n    <<: {shopping: http://a, reddit: http://r}\n    shopping: http://b\n"
    )
    assert load_config(y).environment.urls == {"shopping": "http://b", "reddit": "http://r"}


def test_the_old_rollout_section_names_the_new_keys(tmp_path):
    y = tmp_path / "run.yaml"
    y.write_text("rollout:\n  max_turns: 3\n  grammar: webrl\n  num_browsers: 2\n  max_turn: 4\n")
    with pytest.raises(ConfigError) as err:
        load_config(y)
    assert str(err.value) == (
        f"{y}: the 'rollout' section was split into 'prompt', 'browser' and 'scheduling'; move its keys: "
        "rollout.max_turns -> scheduling.max_turns, rollout.grammar -> prompt.grammar, "
        "rollout.num_browsers -> browser.num_browsers, rollout.max_turn (unknown)"
    )
    with pytest.raises(ConfigError, match="rollout.overlap_with_learner -> scheduling.overlap_with_learner"):
        load_config(None, ["rollout.overlap_with_learner=true"])


def test_every_preset_still_loads():
    for preset in sorted((ROOT / "configs").glob("*.yaml")):
        load_config(preset)


def test_a_group_larger_than_the_browser_pool_is_refused(tmp_path):
    y = tmp_path / "run.yaml"
    y.write_text("browser:\n  num_browsers: 2\nrl:\n  group_size: 4\n")
    with pytest.raises(ConfigError, match=rf"{y}: rl.group_size=4 is more than browser.num_browsers=2"):
        load_config(y)
    with pytest.raises(ConfigError, match="eval.samples_per_task=3 is more than browser.num_browsers=2"):
        load_config(None, ["browser.num_browsers=2", "rl.group_size=2", "eval.samples_per_task=3"])
    assert load_config(None, ["browser.num_browsers=4", "rl.group_size=4"]).rl.group_size == 4


def test_validate_builds_each_reward_plan_and_names_file_task_and_field(tmp_path, capsys):
    tasks = json.loads(LITE.read_text())
    html = next(t for t in tasks if t["eval"]["program_html"])
    good = next(t for t in tasks if t is not html)
    html["eval"]["program_html"][0]["url"] = "func:gitlab_get_project_owner('x')"  # not a registered helper
    f = tmp_path / "tasks.json"
    f.write_text(json.dumps([good, html]))
    with pytest.raises(ValueError) as err:
        validate_file(f)
    msg = str(err.value)
    assert msg.startswith(f"{f}: 1 task(s) cannot be scored")
    assert f"task {html['task_id']}: eval.program_html[0].url" in msg
    assert "unknown helper 'gitlab_get_project_owner'" in msg
    assert reward_main(["validate", str(f)]) == 1
    assert f"task {html['task_id']}: eval.program_html[0].url" in capsys.readouterr().err
    assert reward_main(["validate", str(LITE)]) == 0
