"""common.records.iter_jsonl: streaming a rollouts file that a killed writer left torn."""

from __future__ import annotations

import json

import pytest

from common.records import Trajectory, dump_jsonl, iter_jsonl, load_jsonl


def _torn_file(tmp_path, n: int = 5):
    """n whole trajectories, then a sixth cut mid-write inside a multi-byte character (what SIGKILL leaves)."""
    path = tmp_path / "rollouts.jsonl"
    trajs = [Trajectory(task_id=i, answer=f"answer {i} 🙂") for i in range(n + 1)]
    dump_jsonl(trajs, str(path))
    data = path.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = data.index("🙂".encode(), last) + 2  # two of the emoji's four bytes
    path.write_bytes(data[:cut])
    return path, trajs[:n]


def test_torn_line_is_skipped_and_counted(tmp_path):
    path, whole = _torn_file(tmp_path)
    skipped: list[tuple[int, str]] = []
    got = list(iter_jsonl(path, on_error=lambda n, msg: skipped.append((n, msg))))
    assert [t.task_id for t in got] == [t.task_id for t in whole]
    assert [n for n, _ in skipped] == [len(whole) + 1]
    assert str(path) in skipped[0][1] and "Trajectory" in skipped[0][1]


def test_torn_line_in_the_middle_does_not_hide_later_lines(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"iteration": 1}\n{"iterat\n\n{"iteration": 3}\n', encoding="utf-8")
    skipped: list[int] = []
    got = list(iter_jsonl(path, cls=None, on_error=lambda n, msg: skipped.append(n)))
    assert got == [{"iteration": 1}, {"iteration": 3}]
    assert skipped == [2]


def test_without_on_error_a_torn_line_names_file_and_line(tmp_path):
    path, whole = _torn_file(tmp_path, n=2)
    stream = iter_jsonl(path)
    assert next(stream).task_id == 0  # lazy: records come before the bad line is read
    with pytest.raises(ValueError, match=rf"rollouts.jsonl:{len(whole) + 1}: not a valid Trajectory"):
        list(stream)
    with pytest.raises(ValueError, match=":3: not a valid"):
        load_jsonl(str(path))


def test_stream_matches_load_on_a_whole_file(tmp_path):
    path = tmp_path / "r.jsonl"
    trajs = [Trajectory(task_id="t", sample_idx=i, reward=i % 2) for i in range(4)]
    dump_jsonl(trajs, str(path))
    assert list(iter_jsonl(path)) == load_jsonl(str(path)) == trajs
    assert [json.loads(t.model_dump_json()) for t in iter_jsonl(path)] == list(iter_jsonl(path, cls=None))
