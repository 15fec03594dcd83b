"""A realistic run folder built from the project's own records, for the viewer and export tests.

Several tasks (bundled-site ids are ints, MiniWoB++ ids strings), every outcome (success, fail, unscorable, infra
failure), one to six turns with long page observations, replies written the way the model writes them and parsed by
the project's parser (some fail to parse), per-check reward explanations, and the driver's `meta` tags. With a
PromptBuilder the turns carry the exact prompt and completion ids the engine would have seen.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from common.actions import render_action, try_parse
from common.records import CheckResult, Click, Observation, Stop, Trajectory, Turn, Type, dump_jsonl

# (task id, intent, sites)
TASKS: list[tuple[int | str, str, list[str]]] = [
    (101000, "What is the price of the cheapest blue mug?", ["shopping"]),
    (106002, "Add 2 units of the Espresso Cup to the cart", ["shopping"]),
    (201003, "How many orders did Jane Doe place in 2023?", ["shopping_admin"]),
    (224001, "Set the status of order #000000170 to Complete", ["shopping_admin"]),
    ("miniwob.click-button.7", 'Click on the "submit" button.', ["miniwob"]),
    ("miniwob.enter-text.3", 'Enter "Kanesha" into the text field and press Submit.', ["miniwob"]),
]
OUTCOMES = ("success", "fail", "unscorable", "infra_error")
# markup an observation of a hostile page may hold: the viewer must show it as text, never run it
INJECTION = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"></pre></details>'
WORDS = "mug blue cart order price review status customer espresso ceramic gift shipping total search".split()


def page_text(rng: random.Random, url: str, lines: int) -> str:
    """Simplified page HTML with element ids, the way the browser actor renders a page."""
    out = [f"Tab 0 (current): {url}", ""]
    for i in range(lines):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        tag = rng.choice(["a", "button", "span", "td", "input", "h2"])
        out.append(f"[{i + 1}] <{tag}> {words.capitalize()}")
    return "\n".join(out)


def reply(rng: random.Random, action_text: str | None) -> str:
    """A model reply: reasoning, then the action in a fence; without an action it does not parse."""
    thought = f"Let's think step by step. The page lists {rng.choice(WORDS)} items."
    if action_text is None:
        return thought + " I am not sure what to do next."
    return f"{thought} In summary, the next action I will perform is ```{action_text}```"


def checks_for(task: tuple[int | str, str, list[str]], result: str, answer: str | None) -> list[CheckResult]:
    """The reward checks of an outcome, each with its one-line reason."""
    tid, _, sites = task
    if sites == ["miniwob"]:
        score = {"success": 1.0, "fail": 0.0}.get(result)
        why = f"{tid}: the page gave reward {score}" if score is not None else "no MiniWoB++ result"
        return [CheckResult(type="miniwob", score=score, why=why)]
    if result == "unscorable":
        return [CheckResult(type="fuzzy_match", score=None, why="no judge configured for a fuzzy answer")]
    won = result == "success"
    return [
        CheckResult(type="string_match", score=1.0 if won else 0.0, why=f"answer {answer!r} vs '$12.50'"),
        CheckResult(type="url_match", score=1.0, why="the final URL is on the expected page"),
    ]


def trajectory(
    rng: random.Random,
    task: tuple[int | str, str, list[str]],
    sample_idx: int,
    result: str,
    builder: Any = None,
    obs_lines: tuple[int, int] = (60, 400),
    meta: dict[str, Any] | None = None,
) -> Trajectory:
    """One episode of `task` that ends in `result` (one of OUTCOMES)."""
    tid, intent, sites = task
    t = Trajectory(task_id=tid, sample_idx=sample_idx, intent=intent, sites=sites, meta=dict(meta or {}))
    n_turns = rng.randint(1, 6)
    for k in range(n_turns):
        url = f"http://127.0.0.1:7770/{sites[0]}/page{k}?q={rng.choice(WORDS)}"
        lines = (
            rng.randint(5, 30) if rng.random() < 0.3 else rng.randint(*obs_lines)
        )  # a short page, a long one
        text = page_text(rng, url, lines)
        if rng.random() < 0.05:
            text += "\n" + INJECTION
        obs = Observation(
            text=text,
            url=url,
            title=f"page {k}",
            last_action_error="no element with id 999" if k and rng.random() < 0.2 else None,
        )
        last = k == n_turns - 1
        if last and result != "infra_error":
            action_text = render_action(Stop(answer="$12.50" if result == "success" else "$9.99"))
        elif rng.random() < 0.1:
            action_text = None  # a reply without an action
        elif rng.random() < 0.5:
            action_text = render_action(Type(element_id=str(rng.randint(1, 40)), text="blue mug"))
        else:
            action_text = render_action(Click(element_id=str(rng.randint(1, 40))))
        text_out = reply(rng, action_text)
        action, error = try_parse(text_out)
        turn = Turn(
            index=k,
            observation=obs,
            completion_text=text_out,
            action=action,
            parse_error=error,
            finish_reason="stop",
            weight_version=int((meta or {}).get("iteration", 0)),
        )
        if builder is not None:
            turn.prompt_ids = builder.build(intent, t.turns, obs)
            turn.completion_ids = builder.encode_completion(text_out)
            # float32 values, as vLLM returns them
            turn.logprobs = [float(np.float32(-rng.random() * 3)) for _ in turn.completion_ids]
        t.turns.append(turn)
    t.final_url = t.turns[-1].observation.url
    stop = t.turns[-1].action
    if isinstance(stop, Stop):
        t.answer, t.termination = stop.answer, "stop"
    else:
        t.termination = "error"
    if result == "infra_error":
        t.failure = "browser crashed: Target page, context or browser has been closed"
        return t
    t.checks = checks_for(task, result, t.answer)
    scores = [c.score for c in t.checks]
    t.reward = None if None in scores else float(all(s == 1.0 for s in scores))
    return t


def build_run(
    run_dir: Path,
    eval_episodes: int = 120,
    rl_iterations: int = 4,
    rl_episodes: int = 64,
    seed: int = 0,
    builder: Any = None,
    obs_lines: tuple[int, int] = (60, 400),
    model_path: str | None = None,
    demos: int = 0,
) -> dict[str, list[Trajectory]]:
    """demos.jsonl (when `demos`), eval_before_bc.jsonl, rollouts.jsonl (appended per iteration),
    eval_after_rl.jsonl and config.json (when `model_path` is given) in `run_dir`; returns what each file holds."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, list[Trajectory]] = {}

    def episodes(n: int, meta: dict[str, Any]) -> list[Trajectory]:
        out = []
        for i in range(n):
            task = TASKS[i % len(TASKS)]
            result = rng.choices(OUTCOMES, weights=[4, 4, 1, 1])[0]
            out.append(trajectory(rng, task, i // len(TASKS), result, builder, obs_lines, meta))
        return out

    if demos:  # the expert's solved episodes: no phase tags, source "expert"
        files["demos.jsonl"] = [
            trajectory(rng, TASKS[i % len(TASKS)], 0, "success", builder, obs_lines) for i in range(demos)
        ]
        for t in files["demos.jsonl"]:
            t.source = "expert"
        dump_jsonl(files["demos.jsonl"], str(run_dir / "demos.jsonl"))
    for label in ("before_bc", "after_rl"):
        files[f"eval_{label}.jsonl"] = episodes(eval_episodes, {"phase": "eval", "label": label})
    files["rollouts.jsonl"] = []
    for it in range(rl_iterations):
        batch = episodes(rl_episodes, {"phase": "rl", "iteration": it, "template": it % 3})
        dump_jsonl(batch, str(run_dir / "rollouts.jsonl"), append=True)
        files["rollouts.jsonl"] += batch
    for name in ("eval_before_bc.jsonl", "eval_after_rl.jsonl"):
        dump_jsonl(files[name], str(run_dir / name))
    if model_path is not None:
        (run_dir / "config.json").write_text(json.dumps({"model": {"path": model_path}}))
    return files


def exported(t: Trajectory) -> Trajectory:
    """`t` with only the fields the export keeps (learner/export.py's docstring); the others at their defaults."""
    turns = [
        Turn(
            index=k,
            observation=Observation(
                text=x.observation.text,
                url=x.observation.url,
                last_action_error=x.observation.last_action_error,
            ),
            prompt_ids=x.prompt_ids,
            completion_ids=x.completion_ids,
            logprobs=x.logprobs,
            completion_text=x.completion_text,
            finish_reason=x.finish_reason,
            action=x.action,
            parse_error=x.parse_error,
            weight_version=x.weight_version,
        )
        for k, x in enumerate(t.turns)
    ]
    return t.model_copy(update={"turns": turns, "timings": {}})
