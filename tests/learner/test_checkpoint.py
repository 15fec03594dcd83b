"""Checkpoints: crash-safe folders, resume: auto after a SIGKILL mid-write, and the folder loads with transformers."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from learner import checkpoint as ckpt

REPO = Path(__file__).resolve().parents[2]


def _fake(root: Path, iteration: int, complete: bool) -> Path:
    tmp = ckpt.begin(root, iteration)
    (tmp / "config.json").write_text("{}")
    if not complete:
        return tmp
    return ckpt.commit(tmp, ckpt.LearnerState(iteration=iteration))


def test_only_complete_checkpoints_count(tmp_path):
    _fake(tmp_path, 1, True)
    _fake(tmp_path, 2, True)
    (tmp_path / "ckpt-00000007").mkdir()  # a folder without marker: e.g. copied by hand, half-written
    (tmp_path / "ckpt-00000007" / "model.safetensors").write_bytes(b"half")
    assert [p.name for p in ckpt.list_complete(tmp_path)] == ["ckpt-00000001", "ckpt-00000002"]
    assert ckpt.resolve_resume("auto", tmp_path).name == "ckpt-00000002"
    assert ckpt.resolve_resume("never", tmp_path) is None
    assert ckpt.resolve_resume("auto", tmp_path / "nothing-here") is None
    with pytest.raises(FileNotFoundError, match="not a complete checkpoint"):
        ckpt.resolve_resume(str(tmp_path / "ckpt-00000007"), tmp_path)


def test_a_crash_leaves_only_a_temp_folder_which_the_next_save_removes(tmp_path):
    _fake(tmp_path, 1, True)
    tmp = _fake(tmp_path, 2, complete=False)  # the writer died here
    assert tmp.name.startswith(".tmp-") and ckpt.latest(tmp_path).name == "ckpt-00000001"
    _fake(tmp_path, 2, True)
    assert not tmp.exists() and ckpt.latest(tmp_path).name == "ckpt-00000002"


def test_commit_replaces_a_same_iteration_checkpoint_and_prune_keeps_newest(tmp_path):
    for i in (1, 2, 3):
        _fake(tmp_path, i, True)
    again = ckpt.begin(tmp_path, 3)
    (again / "marker-of-second-write").write_text("x")
    ckpt.commit(again, ckpt.LearnerState(iteration=3, extra={"note": "second"}))
    assert (tmp_path / "ckpt-00000003" / "marker-of-second-write").exists()
    assert ckpt.read_state(tmp_path / "ckpt-00000003").extra == {"note": "second"}
    removed = ckpt.prune(tmp_path, keep=2)
    assert [p.name for p in removed] == ["ckpt-00000001"]
    assert [p.name for p in ckpt.list_complete(tmp_path)] == ["ckpt-00000002", "ckpt-00000003"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_resume_after_sigkill_while_writing_continues_at_the_same_iteration(tiny_model_dir, tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    import learner_resume_worker as worker

    env = {**os.environ, "PYTHONPATH": str(REPO), "DS_ACCELERATOR": "cpu"}
    proc = subprocess.run(
        [sys.executable, str(Path(worker.__file__)), tiny_model_dir, str(tmp_path), "4"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=500,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == -9, proc.stderr[-3000:]  # it died by SIGKILL, mid-write of checkpoint 4
    losses = {e["iteration"]: e["loss"] for e in events if "loss" in e}
    assert [e["saved"] for e in events if "saved" in e] == [1, 2] and sorted(losses) == [1, 2, 3, 4]
    root = tmp_path / "checkpoints"
    half = root / ".tmp-ckpt-00000004"
    assert (half / "model.safetensors").exists() and not (half / ckpt.MARKER).exists()
    assert ckpt.latest(root).name == "ckpt-00000002"

    # the newest complete checkpoint is a Hugging Face folder
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hf = AutoModelForCausalLM.from_pretrained(root / "ckpt-00000002")
    assert AutoTokenizer.from_pretrained(root / "ckpt-00000002").chat_template
    hf_weights = {n: p.detach().clone() for n, p in hf.named_parameters()}
    with torch.no_grad():
        assert torch.isfinite(hf(torch.tensor([[1, 2, 3]])).logits).all()
    del hf

    from learner.actor import LearnerActor

    learner = LearnerActor(worker.config(str(tmp_path)), model_path=tiny_model_dir)
    try:
        assert learner.iteration == 2 and learner.resumed_from == str(root / "ckpt-00000002")
        restored = dict(learner.named_full_parameters())  # ZeRO-3: gathered
        assert all(torch.equal(restored[n], hf_weights[n]) for n in restored)
        # step 3's loss checks the restored weights; step 4's also the Adam moments and the LR schedule
        for it in (3, 4):
            m = learner.bc_step([worker.demo()])
            assert m.iteration == it and m.loss == pytest.approx(losses[it], rel=1e-5)
        final = learner.save_checkpoint()
    finally:
        del learner
        gc.collect()  # drops the ZeRO-3 HfDeepSpeedConfig so later from_pretrained calls are plain again
    assert Path(final).name == "ckpt-00000004" and not half.exists()
    assert [p.name for p in ckpt.list_complete(root)] == ["ckpt-00000002", "ckpt-00000004"]
    assert ckpt.read_state(final).bc_steps == 4


def test_every_file_and_folder_is_on_disk_before_complete(tmp_path, monkeypatch):
    """Records every fsync (the real call still runs) and checks that each file of the checkpoint, the weight
    shards of nested folders included, was flushed before the COMPLETE marker was written."""
    tmp = ckpt.begin(tmp_path, 4)
    (tmp / "model.safetensors").write_bytes(os.urandom(1 << 16))
    (tmp / "deepspeed" / "state").mkdir(parents=True)
    (tmp / "deepspeed" / "state" / "optim.pt").write_bytes(os.urandom(1 << 12))
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), tmp))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    final = ckpt.commit(tmp, ckpt.LearnerState(iteration=4))
    before_marker = set(synced[: synced.index(ckpt.MARKER)])
    assert {"model.safetensors", "deepspeed/state/optim.pt", ckpt.STATE_FILE} <= before_marker
    assert {".", "deepspeed", "deepspeed/state"} <= before_marker
    assert ckpt.is_complete(final)
