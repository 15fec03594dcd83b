"""`python -m learner.report export`: a run folder's trajectories (run_factory.py, with the exact prompt ids SmolLM2's
PromptBuilder makes) as Parquet and JSONL, loaded with the real `datasets` library and read back into Trajectory
records equal, field by field, to what was exported; prompt texts decoded with the run's tokenizer; a missing or
empty run folder exits 2 with one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from run_factory import build_run, exported

from learner import report
from learner.export import load_export, to_trajectories


@pytest.fixture(scope="module")
def tok():
    from common.models import load_default_tokenizer

    return load_default_tokenizer()


@pytest.fixture(scope="module")
def run(tmp_path_factory, tok, default_model_dir):
    from common.prompts import PromptBuilder

    run_dir = tmp_path_factory.mktemp("run")
    builder = PromptBuilder(tok, obs_max_tokens=1500)
    files = build_run(
        run_dir,
        eval_episodes=18,
        rl_iterations=2,
        rl_episodes=12,
        builder=builder,
        model_path=default_model_dir,
        demos=4,
    )
    order = ["demos.jsonl", "eval_before_bc.jsonl", "rollouts.jsonl", "eval_after_rl.jsonl"]
    return run_dir, [t for name in order for t in files[name]]


def load(kind: str, path, tmp_path):
    import datasets

    return datasets.load_dataset(kind, data_files=str(path), split="train", cache_dir=str(tmp_path / "hf"))


def test_parquet_loads_with_datasets_and_round_trips(run, tok, tmp_path, capsys):
    run_dir, trajs = run
    assert report.main(["export", str(run_dir), "--format", "parquet"]) == 0
    path = run_dir / "trajectories.parquet"
    assert capsys.readouterr().out.strip() == f"{path} ({len(trajs)} trajectories)"
    ds = load(path.suffix[1:], path, tmp_path)
    assert ds.num_rows == len(trajs)
    assert ds["task_id"] == [str(t.task_id) for t in trajs]
    assert ds["file"][:4] == ["demos.jsonl"] * 4 and ds["phase"][:4] == [None] * 4
    assert ds["iteration"] == [t.meta.get("iteration") for t in trajs]
    assert ds["reward"] == [t.reward for t in trajs]
    assert ds["check_scores"] == [[c.score for c in t.checks] for t in trajs]
    assert ds["weight_versions"] == [[x.weight_version for x in t.turns] for t in trajs]
    expected = [exported(t) for t in trajs]
    assert to_trajectories(ds) == expected
    assert to_trajectories(load_export(path)) == expected
    assert any(isinstance(t.task_id, str) for t in expected) and any(
        isinstance(t.task_id, int) for t in expected
    )

    # prompt texts: the run's tokenizer (config.json's model.path) decoding the exact ids; each holds its page
    for row, t in zip(ds, trajs, strict=True):
        for text, x in zip(row["prompt_texts"], t.turns, strict=True):
            assert text == tok.decode(x.prompt_ids, skip_special_tokens=False)
            assert x.observation.text.splitlines()[0] in text


def test_jsonl_loads_with_datasets_and_round_trips(run, tmp_path):
    run_dir, trajs = run
    out = tmp_path / "out" / "run.jsonl"
    out.parent.mkdir()
    assert (
        report.main(["export", str(run_dir), "--format", "jsonl", "--out", str(out), "--tokenizer", "none"])
        == 0
    )
    assert not (run_dir / "trajectories.jsonl").exists()
    ds = load("json", out, tmp_path)
    assert ds.num_rows == len(trajs)
    expected = [exported(t) for t in trajs]
    assert to_trajectories(load_export(out)) == expected
    # datasets' JSON loader, on pyarrow's refusal of these lists (see learner/export.py), parses with pandas' ujson,
    # which may round a double's last digits: logprobs equal to 1e-12, every other field exactly
    loaded = to_trajectories(ds)
    for got, want in zip(loaded, expected, strict=True):
        got_turns, want_turns = got.model_dump().pop("turns"), want.model_dump().pop("turns")
        assert got.model_copy(update={"turns": []}) == want.model_copy(update={"turns": []})
        for a, b in zip(got_turns, want_turns, strict=True):
            assert a.pop("logprobs") == pytest.approx(b.pop("logprobs"), rel=1e-12, abs=0)
            assert a == b
    assert ds["prompt_texts"] == [None] * len(trajs)


def test_a_torn_last_line_is_skipped(run, tmp_path, capsys):
    run_dir, trajs = run
    copy = tmp_path / "torn"
    copy.mkdir()
    for p in run_dir.glob("*.jsonl"):
        if p.name != "trajectories.jsonl":
            (copy / p.name).write_bytes(p.read_bytes())
    with open(copy / "rollouts.jsonl", "a", encoding="utf-8") as f:
        f.write('{"task_id": 5, "turns": [{"ind')  # a writer killed mid-line
    assert report.main(["export", str(copy), "--tokenizer", "none"]) == 0
    assert sum(1 for _ in load_export(copy / "trajectories.parquet")) == len(trajs)
    assert "rollouts.jsonl: 1 torn line(s) skipped" in capsys.readouterr().err


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "learner.report", "export", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )


def test_a_missing_or_empty_run_folder_exits_2_with_one_line(tmp_path, capsys):
    done = _cli(str(tmp_path / "nope"))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [f"export: run folder {tmp_path / 'nope'} does not exist"]

    assert report.main(["export", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"export: {tmp_path} holds no trajectory files (demos.jsonl, eval_*.jsonl, rollouts.jsonl)"
    ]

    (tmp_path / "rollouts.jsonl").write_text("")
    assert report.main(["export", str(tmp_path), "--format", "jsonl"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"export: {tmp_path}'s trajectory files hold no trajectories"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollouts.jsonl"]  # no half-written output left


def test_an_unwritable_out_exits_2_with_one_line(run, tmp_path, capsys):
    out = tmp_path / "missing" / "t.parquet"
    assert report.main(["export", str(run[0]), "--out", str(out), "--tokenizer", "none"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"export: cannot write {out}: no such folder"]
