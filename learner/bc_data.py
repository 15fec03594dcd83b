"""Demonstrations from a file (`bc.demos`) that carry observations and actions but no token ids.

The expert's own demonstrations come out of the rollout loop with exact ids already (rollout_workers/demos.py).
Demonstrations recorded elsewhere (another agent, people) hold observations and actions only: here each action is
written as a reply in the run's grammar (`rollout_workers.policy.reply_text`), tokenized once as the completion, and
every turn's prompt is built by the same PromptBuilder that rollouts use, with earlier completions spliced in as ids
— so a BC sample is exactly the prompt the policy will see at that point of an episode. They stay Trajectories.
"""

from __future__ import annotations

from common.records import Trajectory, Turn
from rollout_workers.policy import reply_text


def with_token_ids(demos: list[Trajectory], builder, style: str = "summary") -> list[Trajectory]:
    """The demonstrations with prompt / completion ids on every turn that has an action (turns that already carry
    ids are kept as they are); demonstrations scored below 1 are left out."""
    out: list[Trajectory] = []
    for traj in demos:
        if traj.reward is not None and traj.reward < 1:
            continue
        if all(t.prompt_ids and t.completion_ids for t in traj.turns):
            out.append(traj)
            continue
        history: list[Turn] = []
        for turn in traj.turns:
            if turn.action is None:
                continue
            text = reply_text(turn.action, builder.grammar, builder.thinking, turn.completion_text, style)
            t = turn.model_copy(
                update={
                    "prompt_ids": builder.build(traj.intent, history, turn.observation),
                    "completion_ids": builder.encode_completion(text),
                    "completion_text": text,
                    "logprobs": [],
                }
            )
            history.append(t)
        out.append(traj.model_copy(update={"turns": history}))
    return out
