"""A run's trajectories as a dataset: one Parquet or JSONL file with one row per trajectory.

    python -m learner.report export RUN_DIR --format parquet|jsonl [--out PATH] [--tokenizer PATH|none]

Reads every trajectory file of the run folder (demos.jsonl, eval_*.jsonl, rollouts.jsonl; rollout_workers/run_files.py)
and writes RUN_DIR/trajectories.<format> unless --out says otherwise. The file loads with
`datasets.load_dataset("parquet", data_files=PATH)` (or "json" for JSONL), and `load_export` + `to_trajectories`
read it back into `Trajectory` records.

A row holds the trajectory's keys and outcome (file, phase, label, iteration, task_id, sample_idx, intent, sites,
source, termination, reward, failure, final_url, answer), its reward checks as three parallel lists (check_types,
check_scores, check_whys), the rest of its `meta` as a JSON string, and its turns as parallel lists, one entry per
turn in order: observations (the full page text), urls, last_action_errors, prompt_ids and completion_ids (the exact
ids the engine saw and produced), logprobs, replies (the completion text), finish_reasons, actions (the parsed
action as JSON, null where the reply did not parse), parse_errors and weight_versions. One row per trajectory (not
per turn) keeps a multi-turn episode, the unit of reward and of GRPO's groups, in one record.

prompt_texts is each turn's prompt decoded with the run's tokenizer (config.json's model.path, when it loads from
local files: a fast tokenizer decodes a run in seconds); where it does not load, or with --tokenizer none, the
column is null and the observations plus prompt_ids stand in. task_id is a string with task_id_is_int beside it
(bundled-site ids are ints, MiniWoB++ ids strings; a column has one type). Not exported: the episode's and its
turns' timings, screenshots, and the observation fields other than text, URL and last action error.

Exactness: Parquet and `load_export` give back every value bit for bit. `datasets.load_dataset("json")` does for all
but floats: pyarrow's JSON reader (26.0) builds an invalid array when a list column's first row holds two or more
nulls and a later row a string (`last_action_errors` of an episode without failed actions, then one with), and
datasets then falls back to pandas' ujson, which may round a double's last digit (a logprob to ~1e-16 relative).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from common.config import expand
from common.records import CheckResult, Observation, Trajectory, Turn, action_from_json
from rollout_workers.run_files import iter_trajectories, trajectory_files

FORMATS = ("parquet", "jsonl")
TAGS = ("phase", "label", "iteration")  # meta keys given their own columns
ROWS_PER_GROUP = 64  # Parquet row group: prompt ids of 64 long episodes are tens of MB


class ExportError(ValueError):
    """A run folder that cannot be exported; the CLI prints it as one line and exits 2."""


def schema() -> Any:
    """The Parquet schema: fixed, so every row group (and every run) has the same column types."""
    import pyarrow as pa

    ids = pa.list_(pa.list_(pa.int32()))
    strings = pa.list_(pa.string())
    return pa.schema(
        [
            ("file", pa.string()),
            ("phase", pa.string()),
            ("label", pa.string()),
            ("iteration", pa.int64()),
            ("task_id", pa.string()),
            ("task_id_is_int", pa.bool_()),
            ("sample_idx", pa.int64()),
            ("intent", pa.string()),
            ("sites", strings),
            ("source", pa.string()),
            ("termination", pa.string()),
            ("reward", pa.float64()),
            ("failure", pa.string()),
            ("final_url", pa.string()),
            ("answer", pa.string()),
            ("check_types", strings),
            ("check_scores", pa.list_(pa.float64())),
            ("check_whys", strings),
            ("meta", pa.string()),
            ("observations", strings),
            ("urls", strings),
            ("last_action_errors", strings),
            ("prompt_ids", ids),
            ("prompt_texts", strings),
            ("completion_ids", ids),
            ("logprobs", pa.list_(pa.list_(pa.float64()))),
            ("replies", strings),
            ("finish_reasons", strings),
            ("actions", strings),
            ("parse_errors", strings),
            ("weight_versions", pa.list_(pa.int64())),
        ]
    )


def to_row(t: Trajectory, file: str, tokenizer: Any = None) -> dict[str, Any]:
    """One trajectory as a row (see the module docstring); prompt_texts only with a tokenizer."""
    turns = t.turns
    rest = {k: v for k, v in t.meta.items() if k not in TAGS}
    return {
        "file": file,
        **{k: t.meta.get(k) for k in TAGS},
        "task_id": str(t.task_id),
        "task_id_is_int": isinstance(t.task_id, int),
        "sample_idx": t.sample_idx,
        "intent": t.intent,
        "sites": t.sites,
        "source": t.source,
        "termination": t.termination,
        "reward": t.reward,
        "failure": t.failure,
        "final_url": t.final_url,
        "answer": t.answer,
        "check_types": [c.type for c in t.checks],
        "check_scores": [c.score for c in t.checks],
        "check_whys": [c.why for c in t.checks],
        "meta": json.dumps(rest, sort_keys=True),
        "observations": [x.observation.text for x in turns],
        "urls": [x.observation.url for x in turns],
        "last_action_errors": [x.observation.last_action_error for x in turns],
        "prompt_ids": [x.prompt_ids for x in turns],
        "prompt_texts": (
            tokenizer.batch_decode([x.prompt_ids for x in turns], skip_special_tokens=False)
            if tokenizer is not None
            else None
        ),
        "completion_ids": [x.completion_ids for x in turns],
        "logprobs": [x.logprobs for x in turns],
        "replies": [x.completion_text for x in turns],
        "finish_reasons": [x.finish_reason for x in turns],
        "actions": [x.action.model_dump_json() if x.action else None for x in turns],
        "parse_errors": [x.parse_error for x in turns],
        "weight_versions": [x.weight_version for x in turns],
    }


def to_trajectory(row: dict[str, Any]) -> Trajectory:
    """A row back as a Trajectory with the exported fields (turn k gets index k; the rest take their defaults)."""
    meta = json.loads(row["meta"]) if row.get("meta") else {}
    meta.update({k: row[k] for k in TAGS if row.get(k) is not None})
    turns = [
        Turn(
            index=k,
            observation=Observation(
                text=row["observations"][k],
                url=row["urls"][k],
                last_action_error=row["last_action_errors"][k],
            ),
            prompt_ids=row["prompt_ids"][k],
            completion_ids=row["completion_ids"][k],
            logprobs=row["logprobs"][k],
            completion_text=row["replies"][k],
            finish_reason=row["finish_reasons"][k],
            action=action_from_json(row["actions"][k]) if row["actions"][k] is not None else None,
            parse_error=row["parse_errors"][k],
            weight_version=row["weight_versions"][k],
        )
        for k in range(len(row["observations"]))
    ]
    checks = zip(row["check_types"], row["check_scores"], row["check_whys"], strict=True)
    return Trajectory(
        task_id=int(row["task_id"]) if row["task_id_is_int"] else row["task_id"],
        sample_idx=row["sample_idx"],
        intent=row["intent"],
        sites=row["sites"],
        turns=turns,
        final_url=row["final_url"],
        answer=row["answer"],
        termination=row["termination"],
        reward=row["reward"],
        checks=[CheckResult(type=c, score=s, why=w) for c, s, w in checks],
        failure=row["failure"],
        source=row["source"],
        meta=meta,
    )


def to_trajectories(rows: Iterable[dict[str, Any]]) -> list[Trajectory]:
    """Rows of an export (from `load_export`, or a `datasets` split) back as Trajectory records."""
    return [to_trajectory(r) for r in rows]


def load_export(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of an exported file, streamed: Parquet by row group, JSONL by line."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(path).iter_batches(batch_size=ROWS_PER_GROUP):
            yield from batch.to_pylist()
        return
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def run_tokenizer(run_dir: Path) -> tuple[Any, str | None]:
    """(the run's tokenizer, None), or (None, why not): config.json's model.path, from local files only."""
    config = Path(run_dir) / "config.json"
    if not config.is_file():
        return None, f"{config} is missing"
    try:
        path = expand(json.loads(config.read_text(encoding="utf-8"))["model"]["path"])
    except (ValueError, KeyError, TypeError) as e:
        return None, f"{config} names no usable model.path ({e})"
    return load_tokenizer(path)


def load_tokenizer(path: str) -> tuple[Any, str | None]:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True), None
    except (OSError, ValueError) as e:
        return None, f"the tokenizer of {path} does not load here ({type(e).__name__})"


def rows(run_dir: Path, tokenizer: Any = None) -> Iterator[dict[str, Any]]:
    """Every trajectory of the run folder as a row, file by file in run order."""
    for path in trajectory_files(run_dir):
        for t in iter_trajectories(path):
            yield to_row(t, path.name, tokenizer)


def check_run(run_dir: Path) -> None:
    """An ExportError unless `run_dir` is a folder with trajectory files."""
    if not Path(run_dir).is_dir():
        raise ExportError(f"run folder {run_dir} does not exist")
    if not trajectory_files(run_dir):
        raise ExportError(f"{run_dir} holds no trajectory files (demos.jsonl, eval_*.jsonl, rollouts.jsonl)")


def export_run(
    run_dir: Path, fmt: str = "parquet", out: Path | None = None, tokenizer: Any = None
) -> tuple[Path, int]:
    """Write the run's trajectories to `out` (default RUN_DIR/trajectories.<fmt>); returns (path, rows).

    Written beside the target and renamed into place, so a killed export never leaves a half file under the name."""
    run_dir = Path(run_dir)
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    check_run(run_dir)
    out = Path(out) if out is not None else run_dir / f"trajectories.{fmt}"
    if not out.parent.is_dir() or out.is_dir():
        raise ExportError(f"cannot write {out}: {'it is a folder' if out.is_dir() else 'no such folder'}")
    tmp = out.with_name(out.name + ".part")
    try:
        n = (_write_parquet if fmt == "parquet" else _write_jsonl)(rows(run_dir, tokenizer), tmp)
        if n == 0:
            raise ExportError(f"{run_dir}'s trajectory files hold no trajectories")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out, n


def _write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def _write_parquet(rows: Iterable[dict[str, Any]], path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n, batch, s = 0, [], schema()
    with pq.ParquetWriter(path, s) as writer:
        for row in rows:
            batch.append(row)
            if len(batch) == ROWS_PER_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=s))
                n, batch = n + len(batch), []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=s))
            n += len(batch)
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m learner.report export", description="Write a run's trajectories as one dataset file."
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run folder (runs/<name>)")
    parser.add_argument("--format", choices=FORMATS, default="parquet", help="file format (default parquet)")
    parser.add_argument("--out", type=Path, help="output file (default RUN_DIR/trajectories.<format>)")
    parser.add_argument(
        "--tokenizer",
        help="tokenizer folder for prompt_texts (default: the run's model.path); `none` leaves them null",
    )
    args = parser.parse_args(argv)
    try:
        check_run(args.run_dir)  # before loading a tokenizer: a wrong folder fails at once
        tokenizer, why = None, "--tokenizer none"
        if args.tokenizer != "none":
            tokenizer, why = load_tokenizer(args.tokenizer) if args.tokenizer else run_tokenizer(args.run_dir)
        path, n = export_run(args.run_dir, args.format, args.out, tokenizer)
    except ExportError as e:
        print(f"export: {e}", file=sys.stderr)
        return 2
    if why:
        print(f"export: prompt_texts left null: {why}", file=sys.stderr)
    print(f"{path} ({n} trajectories)")
    return 0
