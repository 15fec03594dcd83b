"""Policies: what chooses each turn's reply inside the one episode loop (`rollout_workers.episode.run_episode`).

    policy = ModelPolicy(router, Sampling(max_tokens=32, temperature=1.0))   # the model, through the engines
    policy = ExpertPolicy(builder, grammar="webarena", thinking=False)       # the scripted expert (demonstrations)
    reply = await policy.act(episode_id, task, prompt_ids, visible_obs, max_tokens)

Both see the same thing: the prompt builder's ids for the model, and for the expert the observation exactly as the
prompt shows it (`PromptBuilder.visible`, cut to the token budget). So a demonstration can only act on what the model
will see, and it gets the model's sandboxes, retries, scoring and metrics from the same loop. The expert's reply is
written text in the run's grammar, tokenized once (`PromptBuilder.encode_completion`), so its turns carry exact
prompt and completion ids and train without any re-tokenization.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from common.actions import render_action
from common.prompts import PromptBuilder
from common.records import Action, Observation
from common.tasks import Task

if TYPE_CHECKING:
    from rollout_workers.router import EngineRouter


@dataclass
class Sampling:
    max_tokens: int
    temperature: float
    top_p: float = 1.0


@dataclass
class Reply:
    """One turn's reply, token-exact. C = completion length."""

    completion_ids: list[int]  # [C]
    logprobs: list[float]  # [C] sampling logprobs ([] for written replies)
    text: str
    finish_reason: str | None = None
    weight_version: int = 0
    seconds: float = 0.0


class PolicyGaveUp(Exception):
    """The policy cannot go on in this episode (the expert's script found nothing to act on)."""


class Policy(Protocol):
    source: str  # what trajectories record as their source: "policy" | "expert"

    async def act(
        self, episode_id: str, task: Task, prompt_ids: list[int], obs: Observation, max_tokens: int
    ) -> Reply: ...

    def end(self, episode_id: str) -> None: ...


class ModelPolicy:
    """The model: prompt ids go to the engines (through the router, which keeps an episode on one engine)."""

    source = "policy"

    def __init__(self, router: EngineRouter | None, sampling: Sampling) -> None:
        """`router` None: a worker without engines (the expert's demonstrations); `act` then fails."""
        self.router, self.sampling = router, sampling

    async def act(
        self, episode_id: str, task: Task, prompt_ids: list[int], obs: Observation, max_tokens: int
    ) -> Reply:
        s = self.sampling
        if self.router is None:
            raise RuntimeError("ModelPolicy without engines: this stack was started with engines=False")
        res = await self.router.generate(
            episode_id, prompt_ids, max_tokens=max_tokens, temperature=s.temperature, top_p=s.top_p
        )
        return Reply(
            completion_ids=list(res.completion_ids),
            logprobs=list(res.logprobs),
            text=res.text,
            finish_reason=res.finish_reason,
            weight_version=res.weight_version,
            seconds=res.seconds,
        )

    def end(self, episode_id: str) -> None:
        if self.router is not None:
            self.router.release(episode_id)


def reply_text(action: Action, grammar: str, thinking: bool, why: str = "", style: str = "summary") -> str:
    """A written reply that parses back to `action` in `grammar`: the text a demonstration teaches.

    style "summary": WebArena's "In summary, the next action I will perform is ```...```"; "bare": the fenced action
    alone (fewer tokens to learn for small models). The thinking format wraps `why` as the thought."""
    rendered = render_action(action, grammar)
    if thinking:
        return f"<think>{why or 'I will take the next step towards the goal.'}</think><answer>{rendered}</answer>"
    if grammar != "webarena":
        return rendered
    if style == "bare":
        return f"```{rendered}```"
    return f"In summary, the next action I will perform is ```{rendered}```"


class Script(Protocol):
    """One episode's scripted expert (sites/tasks/steps.py): the next action and why; raises when stuck."""

    def next_action(self, obs: Observation) -> tuple[Action, str]: ...


ScriptFactory = Callable[[Task, Observation], Script]


class ExpertPolicy:
    """The scripted expert as a policy. `scripts(task, first_obs)` makes a per-episode object with
    `next_action(obs) -> (Action, reason)` that raises when stuck (sites.expert.script_for by default)."""

    source = "expert"

    def __init__(
        self,
        builder: PromptBuilder,
        grammar: str,
        thinking: bool,
        *,
        style: str = "summary",
        scripts: ScriptFactory | None = None,
    ) -> None:
        if scripts is None:
            from sites.expert import script_for

            scripts = script_for
        self.builder, self.grammar, self.thinking, self.style = builder, grammar, thinking, style
        self._scripts = scripts
        self._live: dict[str, Script] = {}

    async def act(
        self, episode_id: str, task: Task, prompt_ids: list[int], obs: Observation, max_tokens: int
    ) -> Reply:
        from sites.tasks.steps import ExpertError

        script = self._live.get(episode_id)
        try:
            if script is None:
                script = self._live[episode_id] = self._scripts(task, obs)
            action, why = script.next_action(obs)
        except (ExpertError, KeyError, ValueError) as e:
            raise PolicyGaveUp(str(e)) from e
        text = reply_text(action, self.grammar, self.thinking, why, self.style)
        return Reply(completion_ids=self.builder.encode_completion(text), logprobs=[], text=text)

    def end(self, episode_id: str) -> None:
        self._live.pop(episode_id, None)
