"""The expert's vocabulary: read elements out of an observation's text and turn script steps into `Action`s.

An expert script is a list of steps. Each step looks at the current observation (the same text a model sees) and
returns the next action with a one-line reason, or None when it has nothing to do (the script moves on with the
same observation). Element ids are always read from the observation: `Click(link="Product Name")` finds
`<a id="28" ...> Product Name </a>` and clicks id 28. `Go(path)` navigates by URL, as a user who knows the site
would. A step that cannot find its element raises `ExpertError`, which ends the episode as a failed demonstration.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from common import records as R
from reward.checks import url_gold_in_pred

_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)((?:\s[^<>]*)?)>")
_ATTR = re.compile(r'([a-zA-Z_:][-a-zA-Z0-9_:\[\]]*)(?:="([^"]*)")?')
_VOID = {"input", "img", "br", "hr"}
# An id written after an element's content (browser.html_ids: after_text): `[28]` right before its closing tag
# (after a space, except in a text area, whose value is shown as it is).
_ID_AFTER = re.compile(r"\[([0-9]+)\]\s*\Z")
_NUMBER = re.compile(r"[-+$]?[0-9][0-9,.]*%?")


class ExpertError(RuntimeError):
    """The script cannot continue on this page (an element it needs is not in the observation)."""


@dataclass
class El:
    id: str
    tag: str
    attrs: dict[str, str]
    text: str = ""
    pos: int = 0
    # the id was written after the element's content (`<label> Red [3]</label>`), not in its opening tag
    id_after: bool = False


def parse_elements(text: str) -> list[El]:
    """Elements with ids from a simplified-HTML observation, in document order, with their text content.

    An element's id is read from its opening tag (`<a id="28"> Name </a>`) or, in the after-text layout, from the
    `[28]` right before its closing tag (`<a> Name [28]</a>`); id markers are not part of any element's text.
    """
    body = text.split("\n----\n", 1)[-1]
    els: list[El] = []
    marks: list[tuple[int, int]] = []  # spans of the after-text id markers read, in body order
    # (tag, element or None, start of its content, attributes, start of the opening tag)
    stack: list[tuple[str, El | None, int, dict[str, str], int]] = []
    for m in _TAG.finditer(body):
        closing, tag, rest = m.group(1), m.group(2).lower(), m.group(3) or ""
        if closing:
            for k in range(len(stack) - 1, -1, -1):
                if stack[k][0] == tag:
                    _, el, start, attrs, pos = stack[k]
                    if el is None and (mark := _ID_AFTER.search(body, start, m.start())):
                        el = El(id=mark.group(1), tag=tag, attrs=attrs, pos=pos, id_after=True)
                        els.append(el)
                        marks.append(mark.span(1))
                    if el is not None:
                        el.text = _clean(_unmarked(body, start, m.start(), marks))
                    del stack[k:]
                    break
            continue
        attrs = {a: html.unescape(v or "") for a, v in _ATTR.findall(rest)}
        el = None
        if "id" in attrs:
            el = El(id=attrs.pop("id"), tag=tag, attrs=attrs, pos=m.start())
            els.append(el)
        if tag not in _VOID:
            stack.append((tag, el, m.end(), attrs, m.start()))
    return sorted(els, key=lambda e: e.pos)


def _unmarked(body: str, start: int, end: int, marks: list[tuple[int, int]]) -> str:
    """body[start:end] without the id markers inside it (each `[n]` whose digits span is in `marks`)."""
    parts, at = [], start
    for a, b in marks:
        if a - 1 >= at and b + 1 <= end:
            parts.append(body[at : a - 1])
            at = b + 1
    parts.append(body[at:end])
    return "".join(parts)


def _clean(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]*>", " ", fragment)).split())


def norm(s: str) -> str:
    return " ".join(s.split()).casefold()


@dataclass(frozen=True)
class Match:
    """What an element must look like: tag, exact text, text containing, attributes (exact values)."""

    tag: str | None = None
    text: str | None = None
    contains: str | None = None
    attrs: tuple[tuple[str, str], ...] = ()

    def ok(self, el: El) -> bool:
        if self.tag and el.tag != self.tag:
            return False
        if self.text is not None and norm(el.text or el.attrs.get("title", "")) != norm(self.text):
            return False
        if self.contains is not None and norm(self.contains) not in norm(el.text):
            return False
        return all(el.attrs.get(k) == v for k, v in self.attrs)

    def describe(self) -> str:
        parts = [self.tag or "element"]
        if self.text is not None:
            parts.append(f"'{self.text}'")
        if self.contains is not None:
            parts.append(f"containing '{self.contains}'")
        parts += [f'{k}="{v}"' for k, v in self.attrs]
        return " ".join(parts)


def M(tag: str | None = None, text: str | None = None, contains: str | None = None, **attrs: str) -> Match:
    """`M("a", "My Orders")`, `M("input", name="q")` (attribute names with brackets: pass a dict via **{...})."""
    return Match(tag, text, contains, tuple(sorted(attrs.items())))


def find(els: list[El], match: Match, after: Match | None = None) -> El | None:
    """The first element matching `match` (after the first element matching `after`, when given)."""
    start = 0
    if after is not None:
        anchor = next((e for e in els if after.ok(e)), None)
        if anchor is None:
            return None
        start = anchor.pos
    return next((e for e in els if e.pos >= start and match.ok(e)), None)


def need(obs: R.Observation, match: Match, after: Match | None = None) -> El:
    el = find(parse_elements(obs.text), match, after)
    if el is None:
        where = f" after {after.describe()}" if after else ""
        raise ExpertError(f"{match.describe()}{where} not found on {obs.url}")
    return el


def on_page(url: str, page: str) -> bool:
    """Whether `url` is the page `page` (absolute): its path holds the page's path and it has the page's query
    values (WebArena's GOLD-in-PRED rule, the one url_match checks use)."""
    return url_gold_in_pred(url, page)[0] == 1.0


def base_url(url: str) -> str:
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


# -- steps --------------------------------------------------------------------------------------------------------
class Step:
    why: str = ""

    def act(self, obs: R.Observation, ctx: dict[str, Any]) -> tuple[R.Action, str, bool] | None:
        """(action, reason, advance) or None (nothing to do here: move on with the same observation)."""
        raise NotImplementedError


@dataclass
class Go(Step):
    path: str
    why: str = ""

    def act(self, obs, ctx):
        return R.Goto(url=ctx["base"] + self.path), self.why or f"open {self.path} directly", True


@dataclass
class Click(Step):
    target: Match
    after: Match | None = None
    why: str = ""

    def act(self, obs, ctx):
        el = need(obs, self.target, self.after)
        return R.Click(element_id=el.id), self.why or f"click the {self.target.describe()}", True


@dataclass
class ClickOrGo(Step):
    """Click the link when the page as shown has it; otherwise open `path` directly (a link cut off by the
    observation budget is still a place a user who knows the site can go)."""

    target: Match
    path: str
    why: str = ""

    def act(self, obs, ctx):
        el = find(parse_elements(obs.text), self.target)
        if el is not None:
            return R.Click(element_id=el.id), self.why or f"click the {self.target.describe()}", True
        return R.Goto(url=ctx["base"] + self.path), (self.why or "open it") + " (its link is not shown)", True


@dataclass
class Fill(Step):
    target: Match
    text: str
    enter: bool = False
    why: str = ""

    def act(self, obs, ctx):
        el = need(obs, self.target)
        return (
            R.Type(element_id=el.id, text=self.text, press_enter=self.enter),
            self.why or f"type '{self.text}' into the {self.target.describe()}",
            True,
        )


@dataclass
class Choose(Step):
    target: Match
    option: str
    why: str = ""

    def act(self, obs, ctx):
        el = need(obs, self.target)
        return R.Select(element_id=el.id, text=self.option), self.why or f"choose '{self.option}'", True


@dataclass
class Answer(Step):
    """Stop with the answer. `page` (a path with an optional query, e.g. "/bedding.html?price=200-1000") names the
    page the answer is read from: the expert must be on it when it answers (WebArena's GOLD-in-PRED URL rule), and
    `sites.tasks.answer_page` exposes it, so a success that never saw that page can be told from a guess."""

    answer: str = ""
    page: str = ""
    why: str = ""

    def act(self, obs, ctx):
        if self.page and not on_page(obs.url, ctx["base"] + self.page):
            raise ExpertError(f"answering on {obs.url}, not on the answer page {self.page}")
        # The answer comes from the template's reference data; it is only a demonstration if the pages as shown
        # (cut to the prompt's budget) held it. Numbers are exempt: counts are often counted, not printed.
        seen = html.unescape("\n".join(ctx.get("seen", [obs.text])))
        parts = [p for p in re.split(r"; |, ", self.answer) if p and not _NUMBER.fullmatch(p)]
        missing = [p for p in parts if p not in seen]
        if missing:
            raise ExpertError(f"the answer is not on the pages as shown: {missing[:3]}")
        reason = self.why or (
            f"the page shows the answer: {self.answer}" if self.answer else "the task is done"
        )
        return R.Stop(answer=self.answer), reason, True


@dataclass
class Until(Step):
    """Click `next` (e.g. a pager's Next link) until `target` is on the page, at most `limit` times."""

    target: Match
    next: Match
    limit: int = 20
    why: str = ""
    _clicks: int = field(default=0, repr=False)

    def act(self, obs, ctx):
        if find(parse_elements(obs.text), self.target) is not None:
            return None
        if self._clicks >= self.limit:
            raise ExpertError(f"{self.target.describe()} not found after {self.limit} pages")
        self._clicks += 1
        el = need(obs, self.next)
        return (
            R.Click(element_id=el.id),
            self.why or f"{self.target.describe()} is not here: next page",
            False,
        )


@dataclass
class AllPages(Step):
    """Read every page of a paged list: click `next` while the page has it, then move on."""

    next: Match
    limit: int = 20
    why: str = ""
    _clicks: int = field(default=0, repr=False)

    def act(self, obs, ctx):
        el = find(parse_elements(obs.text), self.next)
        if el is None:
            return None
        if self._clicks >= self.limit:
            raise ExpertError(f"more than {self.limit} pages")
        self._clicks += 1
        return R.Click(element_id=el.id), self.why or "read this page, then the next one", False


class Script:
    """A stateful policy over a list of steps: `next_action(obs) -> (Action, reason)`."""

    def __init__(self, steps: list[Step], base: str) -> None:
        self.steps, self.cursor = list(steps), 0
        self.ctx: dict[str, Any] = {"base": base.rstrip("/")}

    def next_action(self, obs: R.Observation) -> tuple[R.Action, str]:
        self.ctx.setdefault("seen", []).append(obs.text)
        if obs.last_action_error and self.cursor:
            raise ExpertError(f"the previous action failed: {obs.last_action_error}")
        while self.cursor < len(self.steps):
            res = self.steps[self.cursor].act(obs, self.ctx)
            if res is None:
                self.cursor += 1
                continue
            action, why, advance = res
            self.cursor += advance
            return action, why
        raise ExpertError("the script ended without stopping")
