"""The behaviour-cloning phase, and the demonstrations it (and RL's expert filters) start from.

    checkpoint = await run_bc(parts)            # SFT on the demonstrations, weights pushed, weights-only checkpoint
    demos, report = await demonstrations(parts) # bc.demos, or the scripted expert's solved episodes (cached)

The demonstrations are played by the scripted expert through the one episode loop (rollout_workers/demos.py), so
their prompts are exactly what the model will see; a template-balanced slice of them is held out to measure
action-token accuracy before and after each epoch.
"""

from __future__ import annotations

import json
import time
from typing import Any

from common.config import expand
from common.records import Trajectory, dump_jsonl, load_jsonl
from learner.run_parts import RunParts


def held_out_split(demos: list[Trajectory], held: int) -> tuple[list[Trajectory], list[Trajectory]]:
    """(train, held out): `held` demonstrations spread over templates, none when there are not more than twice as
    many. The held-out ones come one per template, from the last demonstration of each template in list order,
    and only from templates that keep another one to train on (a second round takes the next-to-last ones): a
    template is never held out entirely, and the same list always splits the same way."""
    held = held if len(demos) > 2 * held else 0
    by_template: dict[Any, list[Trajectory]] = {}
    for d in demos:
        by_template.setdefault(d.meta.get("template"), []).append(d)
    held_out: list[Trajectory] = []
    depth = 1
    while len(held_out) < held and any(len(ds) > depth for ds in by_template.values()):
        for ds in by_template.values():
            if len(ds) > depth and len(held_out) < held:
                held_out.append(ds[-depth])
        depth += 1
    train = [d for d in demos if all(d is not h for h in held_out)]
    return train, held_out


async def run_bc(parts: RunParts) -> str:
    """Behaviour cloning, the weight push, and the weights-only checkpoint RL starts from (its path)."""
    cfg, learner = parts.cfg, parts.need_learner()
    demos, report = await demonstrations(parts)
    train, held_out = held_out_split(demos, cfg.bc.held_out)
    turns = sum(len(d.turns) for d in train)
    prompt = [len(t.prompt_ids) for d in train for t in d.turns]
    print(
        f"[train] BC on {len(train)} demonstrations ({turns} turns, mean prompt "
        f"{sum(prompt) / max(1, len(prompt)):.0f} tokens), {len(held_out)} held out; expert: "
        f"{report.get('solved')}/{report.get('played')} solved, {report.get('over_budget', 0)} over "
        "inference.max_new_tokens",
        flush=True,
    )
    stats = await learner.train_bc(train, held_out, timeout=cfg.bc.timeout_s)
    parts.log.record(
        {
            "phase": "bc",
            "demos": len(train),
            "held_out_demos": len(held_out),
            "expert": report,
            **stats.to_json(),
        }
    )
    await parts.sync.push()
    # weights only when RL starts with a fresh optimizer; with rl.adam_start=bc_second_moment a run resumed from
    # here needs BC's Adam state
    keep = cfg.rl.adam_start == "bc_second_moment"
    return await learner.save_checkpoint(tag="bc", optimizer=keep)


async def demonstrations(parts: RunParts) -> tuple[list[Trajectory], dict[str, Any]]:
    """The BC data and the expert's report: a JSONL file (`bc.demos`), or the scripted expert's episodes scored
    1 on a template-balanced sample of the train split, played through the rollout loop and cached in the run
    folder (demos.jsonl + demos.report.json)."""
    cfg, stack = parts.cfg, parts.stack
    if cfg.bc.demos:
        from learner.bc_data import with_token_ids

        demos = with_token_ids(load_jsonl(expand(cfg.bc.demos)), stack.builder, cfg.bc.reply_style)
        return demos, {"played": len(demos), "solved": len(demos), "by_template": {}}
    from rollout_workers.demos import collect_demos

    path, report_path = parts.out / "demos.jsonl", parts.out / "demos.report.json"
    if path.exists() and report_path.exists():
        return load_jsonl(str(path)), json.loads(report_path.read_text())
    t0 = time.time()
    demos, report = await collect_demos(stack.worker, stack.tasks("train"), cfg, limit=cfg.bc.max_demos)
    summary = {**report.as_dict(), "seconds": round(time.time() - t0, 1)}
    dump_jsonl(demos, str(path))
    report_path.write_text(json.dumps(summary, indent=1))
    return demos, summary
