"""Each turn's prompt as token ids, built with the model's own chat template, token-exact across turns.

The conversation (as in WebRL / WebAgent-R1's code):
    system     instructions + the action space of the chosen grammar (+ the thinking format when on)
    user       "Task Instruction: <intent>\\n\\nRound 0\\n<observation 0>"
    assistant  <completion 0>            (the exact ids the engine produced)
    user       "Round 1\\n<feedback><observation 1>"
    ...
    user       "Round k\\n<feedback><observation k, in full>"   + the template's generation prompt
(`prompt.task_reminder` repeats the task instruction after the current observation only; earlier rounds drop it
with their pages.)

Dynamic context compression (the paper's): only the current observation is shown in full; earlier ones are replaced
by `prompt.compression` = "placeholder" (a fixed text, as the paper's code does), "summary" (Observation.short, or
URL + title) or "none" (full). Earlier completions are always kept. Feedback lines (the previous action's error, a
reply that held no action) are kept in every mode: they are about the actions, not the page.

Token exactness: a completion is placed into later prompts as the id list the engine returned, never decoded and
re-encoded. The prompt is rendered once per turn by the tokenizer's chat template with unique sentinel strings in
place of each assistant content (and of the system prompt), split at the sentinels; the text between sentinels is
tokenized, each sentinel becomes its id list. So the segment boundaries come from the template itself and any chat
template works (ChatML / SmolLM2 / Qwen2.5, Llama-3, ...). When a completion already ends with the end-of-turn token
the template writes after it (`<|im_end|>`, `<|eot_id|>`), that token is not written twice. Text from pages and
tasks cannot forge turn boundaries: special-token strings in it are broken up with a zero-width space.

Speed (this runs every turn): the system prompt is tokenized once; text segments before the current observation
repeat turn after turn and are served from an LRU cache, so a turn costs one template render and the tokenization of
the newest observation.
"""

from __future__ import annotations

import re
import secrets
from array import array
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from common.actions import GRAMMARS, action_space_text
from common.records import Observation, Turn

if TYPE_CHECKING:
    from common.config import PromptConfig

PLACEHOLDER = "** Simplified html **"  # what WebRL's / WebAgent-R1's code puts in place of earlier pages
COMPRESSIONS = ("placeholder", "summary", "none")
_ZWSP = "\u200b"

_FORMAT = {
    "webarena": (
        "Think about the page and the task briefly, then end your reply with the next action in a code block, "
        'e.g. "In summary, the next action I will perform is ```click [1234]```".'
    ),
    "webrl": 'Reply with one line of code for the next action, e.g. do(action="Click", element="12").',
}
_THINKING = (
    "First think step by step inside <think>...</think>, then give exactly one action inside <answer>...</answer>, "
    "e.g. <think>The search box has id 5.</think><answer>{example}</answer>."
)
_EXAMPLE = {
    "webarena": "type [5] [blue mug] [1]",
    "webrl": 'do(action="Search", argument="blue mug", element="5")',
}


# The compact system prompt for small models and short contexts: the actions the bundled sites need, one line each
# (~100 tokens instead of ~420; every prompt row of the learner pays for the system prompt).
_COMPACT = {
    "webarena": (
        "You are a web agent. Each round you see the page; elements carry ids. Reply with one action in a code "
        "block:\n```click [id]``` ```type [id] [text] [1]``` (1 = press Enter, 0 = not) ```select [id] [option]```"
        " ```scroll [down]``` ```goto [url]``` ```go_back``` ```stop [answer]``` (the answer if the task asks for "
        "one, else stop [])."
    ),
    "webrl": (
        "You are a web agent. Each round you see the page; elements carry ids. Reply with one line of code: "
        'do(action="Click", element="id"), do(action="Type", argument="text", element="id"), '
        'do(action="Select Dropdown Option", argument="option", element="id"), do(action="Scroll Down"), '
        'go_backward(), exit(message="answer").'
    ),
}
SYSTEM_PROMPTS = ("full", "compact")


def system_prompt(grammar: str = "webarena", thinking: bool = False, style: str = "full") -> str:
    """The system prompt: the agent's role, the action space of `grammar`, and the reply format. `style` "compact"
    lists the common actions in one paragraph (the parser still accepts the whole grammar)."""
    if grammar not in GRAMMARS:
        raise ValueError(f"unknown grammar {grammar!r} (expected one of {', '.join(GRAMMARS)})")
    if style not in SYSTEM_PROMPTS:
        raise ValueError(
            f"unknown system prompt style {style!r} (expected one of {', '.join(SYSTEM_PROMPTS)})"
        )
    fmt = _THINKING.format(example=_EXAMPLE[grammar]) if thinking else _FORMAT[grammar]
    if style == "compact":
        return _COMPACT[grammar] + (f" {fmt}" if thinking else "")
    return (
        "You are a web agent that completes tasks in a web browser. Each round you see the current page as text, in "
        "which the elements you can act on carry ids, and you issue exactly one action. Earlier pages are shown in "
        "short form; your earlier actions are shown as you wrote them.\n\n"
        f"{action_space_text(grammar)}\n\n{fmt}"
    )


def _ids_of(encoded: Any) -> list[int]:
    """apply_chat_template / tokenizer output -> a flat id list (transformers 4 returns a list, 5 a mapping)."""
    if isinstance(encoded, Mapping):
        encoded = encoded["input_ids"]
    return list(encoded)


FOLD_MIN_LINES = 3
FOLD_MARKER = "[{n} lines of site header as in the previous round, not repeated]"


def fold_header(previous: str, current: str) -> str:
    """`current` with its site header folded: from the top, lines that the previous page also had are replaced by
    one marker line, lines it did not have (a search box now holding the query, a cart count) are kept, and folding
    stops at the first FOLD_MIN_LINES new lines in a row (the page's own content). Nothing is folded when fewer
    than FOLD_MIN_LINES lines would be, or when the page did not change at all."""
    seen, lines = set(previous.split("\n")), current.split("\n")
    kept: list[str] = []
    folded = run = 0
    end = len(lines)
    for i, line in enumerate(lines):
        if line in seen:
            folded, run = folded + 1, 0
            continue
        kept.append(line)
        run += 1
        if run >= FOLD_MIN_LINES:
            end = i + 1
            break
    if folded < FOLD_MIN_LINES or folded == len(lines):
        return current
    return "\n".join([FOLD_MARKER.format(n=folded), *kept, *lines[end:]])


class PromptBuilder:
    """Builds the token ids of each turn's prompt; see the module docstring.

    builder = PromptBuilder(tokenizer, grammar="webrl", thinking=True, compression="placeholder")
    ids = builder.build(intent, history=trajectory.turns, observation=current_obs)
    """

    def __init__(
        self,
        tokenizer: Any,
        grammar: str = "webarena",
        thinking: bool = False,
        compression: str = "summary",
        obs_max_tokens: int = 1500,
        cache_size: int = 2048,
        template_kwargs: dict[str, Any] | None = None,
        system: str = "full",
        fold_header: bool = False,
        task_reminder: bool = False,
    ) -> None:
        if compression not in COMPRESSIONS:
            raise ValueError(
                f"unknown compression {compression!r} (expected one of {', '.join(COMPRESSIONS)})"
            )
        self.tokenizer = tokenizer
        self.grammar, self.thinking, self.compression = grammar, thinking, compression
        self.obs_max_tokens = obs_max_tokens
        self.fold_header = fold_header
        self.task_reminder = task_reminder
        self.template_kwargs = dict(template_kwargs or {})
        self._system = system_prompt(grammar, thinking, system)
        self._init_args = (
            tokenizer,
            grammar,
            thinking,
            compression,
            obs_max_tokens,
            cache_size,
            template_kwargs,
            system,
            fold_header,
            task_reminder,
        )
        self._special_ids = frozenset(getattr(tokenizer, "all_special_ids", []))
        added = getattr(
            tokenizer, "added_tokens_decoder", {}
        ).values()  # <|eot_id|>, <file_sep>, reserved ones
        specials = {str(t) for t in getattr(tokenizer, "all_special_tokens", [])}
        specials |= {t.content for t in added if getattr(t, "special", False)}
        # longest first in the alternation
        specials = sorted((t for t in specials if t), key=len, reverse=True)
        self._special_re = re.compile("|".join(map(re.escape, specials))) if specials else None
        nonce = secrets.token_hex(8)  # sentinels no page or model text will contain
        self._mark = f"\u27e6{nonce}:{{}}\u27e7"
        self._mark_re = re.compile(f"\u27e6{nonce}:(S|[0-9]+)\u27e7")
        self._encode_cached = lru_cache(maxsize=cache_size)(self._encode_array)
        self._fit = lru_cache(maxsize=64)(self._fit_uncached)
        self._system_role = self._accepts_system_role()
        self._system_ids = self.encode(self._system)
        self._split_system = self._system_role and self._system_split_is_exact()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (e.g. by Ray) as its constructor arguments; caches are rebuilt on the other side."""
        return (PromptBuilder, self._init_args)

    @classmethod
    def from_config(cls, tokenizer: Any, prompt: PromptConfig) -> PromptBuilder:
        """From the config's `prompt` section."""
        return cls(
            tokenizer,
            prompt.grammar,
            prompt.thinking,
            prompt.compression,
            prompt.obs_max_tokens,
            system=prompt.system_prompt,
            fold_header=prompt.fold_header,
            task_reminder=prompt.task_reminder,
        )

    # ------------------------------------------------------------ public

    def system_prompt(self) -> str:
        return self._system

    def build(self, intent: str, history: Sequence[Turn], observation: Observation) -> list[int]:
        """The prompt ids for the next turn: history turns' completions verbatim, then the current observation."""
        users = self.user_texts(intent, history, observation)
        system = self._mark.format("S") if self._split_system else self._system
        rendered = self._render(users, [self._mark.format(i) for i in range(len(history))], system)
        parts = self._mark_re.split(rendered)  # [text, tag, text, tag, ..., text]
        self._check_tags(parts[1::2], len(history))
        ids: list[int] = []
        last = len(parts) - 1
        prev: Sequence[int] = ()
        for i in range(0, len(parts), 2):
            # the last segment holds the current (new) observation: not worth a cache slot
            seg = self.encode(parts[i]) if i == last else self._encode_cached(parts[i])
            skip = 1 if prev and len(seg) and seg[0] == prev[-1] and prev[-1] in self._special_ids else 0
            ids.extend(seg[skip:])
            if i < last:
                tag = parts[i + 1]
                prev = self._system_ids if tag == "S" else history[int(tag)].completion_ids
                ids.extend(prev)
        return ids

    def messages(
        self, intent: str, history: Sequence[Turn], observation: Observation
    ) -> list[dict[str, str]]:
        """The same conversation as chat messages, with each completion's text (for viewers and checks)."""
        users = self.user_texts(intent, history, observation)
        return self._messages(users, [t.completion_text for t in history], self._system)

    def user_texts(self, intent: str, history: Sequence[Turn], observation: Observation) -> list[str]:
        """The user message of every round: earlier observations compressed, the current one in full."""
        out = []
        for k, turn in enumerate([*history, None]):
            obs = observation if turn is None else turn.observation
            parse_error = history[k - 1].parse_error if k > 0 else None
            previous = history[k - 1].observation if k > 0 else None
            out.append(self._user_text(k, intent, obs, parse_error, turn is None, previous))
        return out

    def visible(self, obs: Observation, history: Sequence[Turn] = ()) -> Observation:
        """The observation as the prompt shows it after `history`: the repeated header folded (when on) and the
        text cut to `obs_max_tokens` real tokens (the only place a page is cut). The scripted expert acts on this,
        so it can only use what the model sees."""
        previous = history[-1].observation if history else None
        return obs.model_copy(update={"text": self._page_text(obs, previous)})

    def _page_text(self, obs: Observation, previous: Observation | None) -> str:
        text = obs.text
        if self.fold_header and previous is not None:
            text = fold_header(previous.text, text)
        return self._fit(text)

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False) if text else []

    def encode_completion(self, text: str) -> list[int]:
        """Ids of a written (not sampled) completion, e.g. a demonstration: the text, then end-of-turn, so that
        behaviour cloning also teaches the model to stop."""
        eos = self.tokenizer.eos_token_id
        return self.encode(text) + ([eos] if eos is not None else [])

    def decode(self, ids: Sequence[int]) -> str:
        """The text of sampled completion ids, special tokens dropped (for parsing and display only)."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # ------------------------------------------------------------ messages and rendering

    def _user_text(
        self,
        k: int,
        intent: str,
        obs: Observation,
        parse_error: str | None,
        current: bool,
        previous: Observation | None = None,
    ) -> str:
        lines = [f"Task Instruction: {intent}\n"] if k == 0 else []
        lines.append(f"Round {k}")
        if parse_error:
            lines.append(f"Your previous reply held no valid action: {parse_error}")
        if obs.last_action_error:
            lines.append(f"The previous action failed: {obs.last_action_error}")
        if obs.infra_error:
            lines.append(f"Note: the page was reloaded after a browser failure ({obs.infra_error}).")
        lines.append(self._observation_text(obs, current or self.compression == "none", previous))
        if current and self.task_reminder:
            # after the page, next to where the reply starts: a small model attends to recent tokens far more
            lines.append(f"\nTask Instruction (as above): {intent}")
        text = "\n".join(lines)
        if self._special_re is not None:
            text = self._special_re.sub(lambda m: m.group(0)[0] + _ZWSP + m.group(0)[1:], text)
        return text

    def _observation_text(self, obs: Observation, full: bool, previous: Observation | None = None) -> str:
        head = [f"URL: {obs.url}"] if obs.url else []
        if obs.title:
            head.append(f"Title: {obs.title}")
        if full:
            if len(obs.tabs) > 1:
                tabs = " | ".join(
                    f"[{i}]{' (current)' if i == obs.active_tab else ''} {t}" for i, t in enumerate(obs.tabs)
                )
                head.append(f"Open tabs: {tabs}")
            return "\n".join([*head, "Observation:", self._page_text(obs, previous)])
        if self.compression == "placeholder":
            return PLACEHOLDER
        return obs.short or "\n".join(head) or PLACEHOLDER

    def _messages(self, users: list[str], assistants: list[str], system: str) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": system}] if self._system_role else []
        for k, user in enumerate(users):
            # templates without a system role: fold it into the first turn
            if k == 0 and not self._system_role:
                user = f"{system}\n\n{user}"
            msgs.append({"role": "user", "content": user})
            if k < len(assistants):
                msgs.append({"role": "assistant", "content": assistants[k]})
        return msgs

    def _render(self, users: list[str], assistants: list[str], system: str) -> str:
        msgs = self._messages(users, assistants, system)
        return self.tokenizer.apply_chat_template(
            msgs, tokenize=False, add_generation_prompt=True, **self.template_kwargs
        )

    def _check_tags(self, tags: list[str], n_history: int) -> None:
        want = (["S"] if self._split_system else []) + [str(i) for i in range(n_history)]
        if tags != want:
            raise RuntimeError(
                "the chat template dropped, repeated or reordered messages; "
                f"expected segments {want[:6]}..., got {tags[:6]}..."
            )

    # ------------------------------------------------------------ tokenization

    def _encode_array(self, text: str) -> array:
        return array("i", self.encode(text))  # 4 bytes per id: cached segments stay small

    def _fit_uncached(self, text: str) -> str:
        """The observation cut to `obs_max_tokens` tokens (at a line end when one is near), with a marker."""
        budget = self.obs_max_tokens
        if budget <= 0 or len(text.encode("utf-8", "surrogatepass")) <= budget:
            return text  # fewer bytes than budget: cannot be more tokens (byte-level tokenizers)
        ids = self.encode(text)
        if len(ids) <= budget:
            return text
        cut = self.tokenizer.decode(ids[:budget], skip_special_tokens=False).rstrip("\ufffd")
        nl = cut.rfind("\n")
        if nl > len(cut) * 0.8:
            cut = cut[:nl]
        return f"{cut}\n[... observation cut to {budget} tokens]"

    def _accepts_system_role(self) -> bool:
        try:
            self.tokenizer.apply_chat_template(
                [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
                tokenize=False, add_generation_prompt=True, **self.template_kwargs,
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - jinja raises its own TemplateError for "system role not supported"
            return False
        return True

    def _system_split_is_exact(self) -> bool:
        """Whether tokenizing around the system prompt separately equals tokenizing the whole text.

        True for the usual templates (the system content sits between a newline and a special token); when it is
        not, the system prompt stays inside its text segment (still cached, just not as its own entry)."""
        probe = Observation(text="<div id=1>probe</div>", url="http://localhost/", title="Probe")
        users = self.user_texts("probe task", [], probe)
        whole = self._render(users, [], self._system)
        parts = self._mark_re.split(self._render(users, [], self._mark.format("S")))
        ids = [*self.encode(parts[0]), *self._system_ids, *self.encode(parts[2])] if len(parts) == 3 else []
        return ids == self.encode(whole)
