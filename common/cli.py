"""Command-line errors as one line, before anything starts.

Every entry point (`python -m learner.train`, `rollout_workers.evaluate`, `rollout_workers.play`, ...) checks its
inputs (config, checkpoint or model path, task files, URLs) before it starts Ray, an engine or a browser, and a bad
one ends the command with exit status 2 and one line on stderr that names the input and what would be valid:

    error: --checkpoint runs/nope: no such folder (expected a Hugging Face checkpoint folder with config.json, ...)

    if __name__ == "__main__":
        run(main)            # ConfigError -> one line, exit 2; `fail(...)` inside main does the same

A mistake should cost a second, not an engine start and a traceback.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from common.config import ConfigError, TrainConfig, expand, load_config

CHECKPOINT_HINT = (
    "expected a Hugging Face checkpoint folder with config.json, e.g. runs/NAME/checkpoints/ckpt-00000028"
)
# `owner/name`: how a model hub id looks; anything else (absolute, ./, ~, deeper paths) is a local path.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# Folders this project writes models into (logging.output_dir's default): `runs/x` is a path even before ./runs exists.
_LOCAL_ROOTS = ("runs",)


class InputError(RuntimeError):
    """Bad input found below an entry point (e.g. a run folder another driver holds): `run` prints it as one line
    and exits 2, as it does a ConfigError."""


def fail(msg: str) -> NoReturn:
    """Print `error: msg` as one line on stderr and exit with status 2 (a usage error)."""
    line = ""  # a multi-line message (one line per bad task, say) joined into one
    for text in msg.splitlines():
        if part := " ".join(text.split()):
            line += part if not line else (" " if line.endswith(":") else "; ") + part
    print(f"error: {line}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def run(main: Callable[[], int]) -> NoReturn:
    """Run an entry point's `main()`; the project's config and input errors become one `error:` line and exit 2.
    Standard output is line-buffered first (`line_buffered_stdout`)."""
    line_buffered_stdout()
    try:
        code = main()
    except (ConfigError, InputError) as e:
        fail(str(e))
    raise SystemExit(code)


def line_buffered_stdout() -> None:
    """Every line printed to standard output reaches it when printed, even where it is a file or a pipe.

    Ray's driver prints the lines its actors print (the learner's `[bc] step ...` lines, say) to `sys.stdout` and
    flushes only under RAY_FLUSH_DRIVER_LOGS. With stdout a file (`make train-miniwob > log`, or the driver of a
    `ray job submit`, whose output Ray writes to the job's log) Python would hold them in 8 KB blocks, for minutes
    of BC. Standard error is line-buffered already.
    """
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # a replaced stdout (pytest's capture, say) is left as it is
        try:
            reconfigure(line_buffering=True)
        except (ValueError, OSError):  # closed or detached
            pass


def config_from_args(args: Any) -> TrainConfig:
    """The run config of `--config` / `--set` (see common.config.add_config_args); a bad one -> `fail`."""
    if args.config and not Path(args.config).is_file():
        fail(f"--config {args.config}: no such file (expected a YAML preset, e.g. configs/miniwob_cpu.yaml)")
    try:
        return load_config(args.config, args.set)
    except ConfigError as e:
        fail(str(e))


def looks_local(path: str) -> bool:
    """A path rather than a model hub id: absolute, ./ or ~ relative, deeper than `owner/name`, no slash at all,
    or under a folder that exists here or that runs write to (`runs/x`)."""
    if path.startswith(("/", ".", "~")) or not _HUB_ID.fullmatch(path):
        return True
    root = path.split("/")[0]
    return root in _LOCAL_ROOTS or Path(root).is_dir()


def check_checkpoint(path: str, flag: str = "--checkpoint") -> str:
    """`path` as an existing Hugging Face folder (config.json inside), else `fail` naming what is there instead:
    a run folder points at its newest checkpoint. Never a hub id: checkpoints are folders this project wrote."""
    p = Path(expand(path))
    if not p.exists():
        fail(f"{flag} {path}: no such folder ({CHECKPOINT_HINT})")
    if not p.is_dir():
        fail(f"{flag} {path}: not a folder ({CHECKPOINT_HINT})")
    if not (p / "config.json").is_file():
        ckpts = sorted((p / "checkpoints").glob("ckpt-*")) if (p / "checkpoints").is_dir() else []
        hint = f"; this looks like a run folder, its newest checkpoint is {ckpts[-1]}" if ckpts else ""
        fail(f"{flag} {path}: no config.json in this folder ({CHECKPOINT_HINT}){hint}")
    return str(p)


def check_model_path(path: str, flag: str = "model.path") -> str:
    """A local model folder must exist (a path is never sent to a model hub); a hub id (`owner/name`) must be in
    the local cache when HF_HUB_OFFLINE is set. Returns the expanded path."""
    try:
        value = expand(path)
    except ConfigError as e:
        fail(f"{flag}: {e}")
    if looks_local(value):
        check_checkpoint(value, flag)
        return value
    if os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(value, "config.json"), str):
            fail(
                f"{flag} {value}: no such folder, and no model of that name in the Hugging Face cache while "
                f"HF_HUB_OFFLINE is set ({CHECKPOINT_HINT}, or a downloaded hub id)"
            )
    return value


def check_url(url: str, flag: str = "--url", given: str | None = None) -> str:
    """An http(s) URL with a host, else `fail` naming `flag` and `given` (default: the URL)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail(f"{flag} {given or url}: not an http(s) URL with a host (e.g. http://127.0.0.1:7770/)")
    return url


def check_file(path: str, flag: str, expected: str) -> str:
    """An existing file, else `fail` saying what was expected."""
    if not Path(path).is_file():
        fail(f"{flag} {path}: no such file (expected {expected})")
    return path
