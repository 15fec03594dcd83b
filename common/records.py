"""The typed records that flow browser -> reward -> learner.

Why pydantic v2 (not dataclasses): every record crosses a process boundary (Ray) and is saved as JSONL, so
validation on load and exact JSON round-trips matter more than construction speed; pydantic-core validates a
10k-element token-id list in well under a millisecond, which is noise next to a browser step or a generate call.
Actions are frozen (hashable, safe to share); trajectory records are mutable while an episode is being built.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Act(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Click(_Act):
    type: Literal["click"] = "click"
    element_id: str


class Type(_Act):
    """Clear the field, type `text`, then press Enter when `press_enter` (WebArena's default is Enter)."""

    type: Literal["type"] = "type"
    element_id: str
    text: str
    press_enter: bool = True


class Hover(_Act):
    type: Literal["hover"] = "hover"
    element_id: str


class Press(_Act):
    """A key combination in Playwright's spelling, e.g. `Enter`, `Control+a`, `Meta+Shift+ArrowLeft`."""

    type: Literal["press"] = "press"
    key: str


class Scroll(_Act):
    type: Literal["scroll"] = "scroll"
    direction: Literal["up", "down"]


class Goto(_Act):
    type: Literal["goto"] = "goto"
    url: str


class GoBack(_Act):
    type: Literal["go_back"] = "go_back"


class GoForward(_Act):
    type: Literal["go_forward"] = "go_forward"


class NewTab(_Act):
    type: Literal["new_tab"] = "new_tab"


class TabFocus(_Act):
    type: Literal["tab_focus"] = "tab_focus"
    tab_index: int


class CloseTab(_Act):
    type: Literal["close_tab"] = "close_tab"


class Select(_Act):
    """Choose the option whose label (or value) is `text` in the dropdown `element_id`."""

    type: Literal["select"] = "select"
    element_id: str
    text: str


class Stop(_Act):
    """End the episode; `answer` is the reply for information-seeking tasks ("" otherwise)."""

    type: Literal["stop"] = "stop"
    answer: str = ""


Action = Annotated[
    Union[
        Click, Type, Hover, Press, Scroll, Goto, GoBack, GoForward, NewTab, TabFocus, CloseTab, Select, Stop
    ],
    Field(discriminator="type"),
]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)
ACTION_TYPES: tuple[str, ...] = (
    "click",
    "type",
    "hover",
    "press",
    "scroll",
    "goto",
    "go_back",
    "go_forward",
    "new_tab",
    "tab_focus",
    "close_tab",
    "select",
    "stop",
)


def action_to_json(action: Action) -> dict[str, Any]:
    """The canonical JSON of an action: `type` plus only the fields that apply."""
    return action.model_dump()


def action_from_json(data: dict[str, Any] | str) -> Action:
    if isinstance(data, str):
        return ACTION_ADAPTER.validate_json(data)
    return ACTION_ADAPTER.validate_python(data)


class Observation(BaseModel):
    """What the agent sees after a reset or a step."""

    text: str = Field(
        description="the full observation (simplified HTML or accessibility tree) with element ids"
    )
    short: str = Field("", description="the compressed form used for earlier turns in the history")
    url: str = ""
    title: str = ""
    tabs: list[str] = Field(default_factory=list, description="titles (or URLs) of the open tabs, in order")
    active_tab: int = 0
    last_action_error: str | None = Field(
        None, description="why the previous action failed, shown to the model"
    )
    mode: Literal["html", "axtree"] = "html"
    truncated: bool = Field(False, description="the text was cut to the token budget")
    screenshot: str | None = Field(None, description="path of a PNG saved for this step, when enabled")
    infra_error: str | None = Field(
        None, description="an infrastructure failure (crashed / hung page) that was recovered from"
    )
    done: bool = Field(
        False, description="the environment ended the episode (a MiniWoB++ page gave its reward): stop here"
    )


class MiniwobResult(BaseModel):
    """A MiniWoB++ page's own episode state, read from core.js's globals (WOB_*) at the end of an episode."""

    task: str
    seed: int
    utterance: str = Field("", description="the instruction the page generated for this seed")
    started: bool = Field(
        False, description="the page still holds the seeded episode that reset started (not reloaded or left)"
    )
    done: bool = Field(False, description="the page ended the episode (WOB_DONE_GLOBAL)")
    raw_reward: float = Field(
        0.0, description="the page's reward without time penalty (WOB_RAW_REWARD_GLOBAL)"
    )
    reward: float = Field(0.0, description="the page's reward with its time penalty (WOB_REWARD_GLOBAL)")
    reason: str | None = Field(None, description="the page's reason for the reward, when it gives one")


class FinalState(BaseModel):
    """What the reward checks need from a finished episode (produced by BrowserActor.final_state())."""

    url: str = Field("", description="URL of the active page at the end")
    tabs: list[str] = Field(default_factory=list, description="URLs of all open tabs")
    storage_state: dict[str, Any] = Field(
        default_factory=dict, description="Playwright storage state (cookies..)"
    )
    sandbox: str | None = Field(None, description="bundled-site sandbox token the episode wrote into")
    answer: str | None = Field(None, description="the stop answer, if the agent stopped")
    env_urls: dict[str, str] = Field(
        default_factory=dict, description="site key -> base URL used by the episode"
    )
    miniwob: MiniwobResult | None = Field(None, description="the page's own reward, for MiniWoB++ tasks")


class CheckResult(BaseModel):
    """One reward check: its kind, its score (None = could not be scored), and a one-line reason."""

    type: str
    score: float | None
    why: str


class Reward(BaseModel):
    """The outcome reward of an episode: product of its checks (None when any check is unscorable)."""

    score: float | None
    checks: list[CheckResult] = Field(default_factory=list)
    error: str | None = Field(None, description="a failure of the checker itself (dead page, bad config)")


class Turn(BaseModel):
    """One agent turn, kept token-exact: the learner trains on these ids and never re-tokenizes text."""

    index: int
    observation: Observation
    prompt_ids: list[int] = Field(default_factory=list)  # [P] exact ids the engine saw
    completion_ids: list[int] = Field(default_factory=list)  # [C] exact ids the engine produced
    logprobs: list[float] = Field(default_factory=list)  # [C] sampling-time logprob of each completion id
    completion_text: str = ""
    finish_reason: str | None = None
    action: Action | None = None
    parse_error: str | None = None
    weight_version: int = 0
    timings: dict[str, float] = Field(
        default_factory=dict, description="seconds: generate, step, prompt, ..."
    )

    @property
    def loss_mask(self) -> list[int]:  # [P + C]: 1 only on tokens the model generated
        return [0] * len(self.prompt_ids) + [1] * len(self.completion_ids)


class Trajectory(BaseModel):
    """One episode of one task; id = (task_id, sample_idx)."""

    task_id: int | str
    sample_idx: int = 0
    intent: str = ""
    sites: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    final_url: str = ""
    answer: str | None = Field(None, description="the stop answer; None when the episode never stopped")
    termination: Literal["stop", "max_turns", "gave_up", "bad_replies", "error", "running"] = "running"
    reward: float | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    failure: str | None = Field(None, description="infrastructure failure: the group holding it is re-run")
    source: str = Field("policy", description="policy | expert (demonstration)")
    timings: dict[str, float] = Field(
        default_factory=dict, description="seconds outside the turns: reset, final_state, score"
    )
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.task_id}#{self.sample_idx}"


class TrajectoryGroup(BaseModel):
    """G trajectories of the same task from the same start state: the unit of advantage and of retry."""

    task_id: int | str
    trajectories: list[Trajectory]
    iteration: int = 0

    @property
    def rewards(self) -> list[float | None]:
        return [t.reward for t in self.trajectories]

    @property
    def failed(self) -> bool:
        return any(t.failure for t in self.trajectories)


def dump_jsonl(records: list[BaseModel], path: str, append: bool = False) -> None:
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        for r in records:
            f.write(r.model_dump_json() + "\n")


def load_jsonl(path: str, cls: type[BaseModel] = Trajectory) -> list[Any]:
    """Load one record per line; a bad line is an error naming the line number."""
    return list(iter_jsonl(path, cls))


def iter_jsonl(
    path: str | os.PathLike[str],
    cls: type[BaseModel] | None = Trajectory,
    on_error: Callable[[int, str], None] | None = None,
) -> Iterator[Any]:
    """Stream one record per line (a `cls` instance, or the parsed JSON value when `cls` is None), so a run's
    rollouts never sit in memory at once.

    A line that does not parse (a torn last line of a killed writer, a line cut inside a UTF-8 sequence) raises a
    ValueError naming the file and line, or, when `on_error` is given, is skipped and reported as
    `on_error(line_number, message)`; e.g. `skipped = []; iter_jsonl(p, on_error=lambda n, m: skipped.append(n))`.
    """
    # Bytes, decoded per line: a torn multi-byte character must cost its own line, not the rest of the file.
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
                yield json.loads(line) if cls is None else cls.model_validate_json(line)
            except (UnicodeDecodeError, ValueError) as e:  # pydantic's ValidationError is a ValueError
                what = "JSON" if cls is None else cls.__name__
                message = f"{path}:{n}: not a valid {what}: {e}"
                if on_error is None:
                    raise ValueError(message) from e
                on_error(n, message)
