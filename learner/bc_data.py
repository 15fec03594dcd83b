"""Behaviour-cloning samples from demonstrations: each expert turn becomes (prompt ids, completion ids).

Demonstrations record observations and actions (the expert acts through the same grammar and browser as the model),
not token ids. Here each action is rendered in the run's grammar, tokenized once as the completion, and every
turn's prompt is built by the same PromptBuilder that rollouts use, with earlier completions spliced in as ids —
so a BC sample is exactly the prompt the policy will see at that point of an episode.
"""

from __future__ import annotations

from common.actions import render_action
from common.records import Trajectory, Turn


def completion_text(turn: Turn, grammar: str, thinking: bool) -> str:
    action = render_action(turn.action, grammar)
    if thinking:
        why = turn.completion_text or "I will take the next step towards the goal."
        return f"<think>{why}</think><answer>{action}</answer>"
    return (
        f"In summary, the next action I will perform is ```{action}```" if grammar == "webarena" else action
    )


def tokenize_demos(demos: list[Trajectory], builder) -> list[Turn]:
    """Turns with prompt_ids/completion_ids filled (the learner's BC input); failed or unscored demos are skipped."""
    out: list[Turn] = []
    for traj in demos:
        if traj.reward is not None and traj.reward < 1:
            continue
        history: list[Turn] = []
        for turn in traj.turns:
            if turn.action is None:
                continue
            text = completion_text(turn, builder.grammar, builder.thinking)
            completion = builder.encode_completion(text)
            prompt = builder.build(traj.intent, history, turn.observation)
            t = turn.model_copy(
                update={
                    "prompt_ids": prompt,
                    "completion_ids": completion,
                    "completion_text": text,
                    "logprobs": [],
                }
            )
            history.append(t)
            out.append(t)
    return out
