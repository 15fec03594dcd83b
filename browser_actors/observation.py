"""Observation text: one in-page pass (dom.js) for ids and simplified HTML, CDP for the accessibility tree.

`Observation.text` is the page content only (simplified HTML or accessibility tree). It is cut here only at a
generous safety cap in characters (`browser.page_max_chars`), with a visible marker: the token budget of the prompt is
applied by the prompt builder alone (common/prompts.py), with the real tokenizer, so what a demonstration acted on
and what the model is shown are the same text; the URL, the tabs and the last error travel in their own fields, because the prompt builder
(common/prompts.py) lays them out itself. `render(obs)` gives the full view for people and scripts:

    URL: http://127.0.0.1:7770/checkout/cart/
    Tabs: [0] Shopping Cart (active) | [1] Order #12
    Error: <the previous action's error, only when there is one>
    ----
    <the page content>

`Observation.short` is the compressed form for earlier turns in the history: URL, title and the first headings.
`browser.html_links: false` leaves link targets (href) out of the HTML: they carry no action value for an agent that
clicks by id, and are about a quarter of a page's tokens on the bundled sites. `browser.html_ids: after_text`
writes an element's id after its content (`<button> Submit [5]</button>`) instead of in its opening tag.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from common.records import Observation
from common.text import cut, scrub

DOM_JS = (Path(__file__).with_name("dom.js")).read_text(encoding="utf-8")
TRUNCATION_MARKER = (
    "[... observation truncated: {n} more lines not shown; scroll or navigate to see more ...]"
)
TokenCounter = Callable[[str], int]


def approx_tokens(text: str) -> int:
    """A cheap token estimate (about 4 characters per token for English HTML with BPE tokenizers)."""
    return (len(text) + 3) // 4


def truncate(text: str, max_tokens: int, count: TokenCounter = approx_tokens) -> tuple[str, bool]:
    """Cut `text` at a line boundary so that it plus the marker fits in `max_tokens` units of `count`."""
    if max_tokens <= 0 or count(text) <= max_tokens:
        return text, False
    lines = text.split("\n")
    budget = max_tokens - count(TRUNCATION_MARKER.format(n=len(lines)))
    lo, hi = 0, len(lines)  # binary search on the number of whole lines kept
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count("\n".join(lines[:mid])) <= budget:
            lo = mid
        else:
            hi = mid - 1
    kept = lines[:lo]
    if not kept:  # one enormous line: cut inside it, at the longest prefix that fits
        first, a, b = lines[0], 0, len(lines[0])
        while a < b:
            mid = (a + b + 1) // 2
            a, b = (mid, b) if count(first[:mid]) <= budget else (a, mid - 1)
        kept = [cut(first, a)]
        lo = 1
    return "\n".join(kept + [TRUNCATION_MARKER.format(n=len(lines) - lo)]), True


def render(obs: Observation) -> str:
    """The observation as people read it: URL, tabs, last error (and infrastructure note), then the content."""
    tabs = " | ".join(
        f"[{i}] {t}" + (" (active)" if i == obs.active_tab else "") for i, t in enumerate(obs.tabs)
    )
    lines = [f"URL: {obs.url}", f"Tabs: {tabs}"]
    if obs.last_action_error:
        lines.append(f"Error: {obs.last_action_error}")
    if obs.infra_error:
        lines.append(f"Infrastructure: {obs.infra_error}")
    return "\n".join(lines) + "\n----\n" + obs.text


def short_form(url: str, title: str, headings: list[str]) -> str:
    parts = [f"URL: {url}", f"Title: {title}"]
    if headings:
        parts.append("Headings: " + "; ".join(h for h in headings[:4] if h))
    return "\n".join(parts)


async def tab_titles(pages: list[Any]) -> list[str]:
    out = []
    for p in pages:
        try:
            title = await p.title()
        except Exception:  # noqa: BLE001 - a tab that is navigating or dead still gets a label
            title = ""
        out.append(cut(title or p.url, 80))
    return out


async def build(
    page: Any,
    cdp: Any,
    pages: list[Any],
    *,
    mode: Literal["html", "axtree"],
    max_chars: int,
    error: str | None,
    links: bool = True,
    ids: Literal["tag", "after_text"] = "tag",
) -> Observation:
    """The observation of `page` (the active tab among `pages`), cut at `max_chars` characters."""
    opts = {"html": mode == "html", "links": links, "idsAfter": ids == "after_text"}
    result = await page.evaluate(DOM_JS, opts)
    # dom.js cuts on character boundaries, but a page's own script can still hand over half an emoji.
    body = scrub(result["html"] if mode == "html" else await _axtree(cdp))
    title, headings = scrub(result["title"]), [scrub(h) for h in result["headings"]]
    tabs = [scrub(t) for t in await tab_titles(pages)]
    active = pages.index(page) if page in pages else 0
    body, was_cut = truncate(body or "(empty page)", max_chars, len)
    return Observation(
        text=body,
        short=short_form(page.url, title, headings),
        url=page.url,
        title=title,
        tabs=tabs,
        active_tab=active,
        last_action_error=error if error is None else scrub(error),
        mode=mode,
        truncated=was_cut,
    )


async def _axtree(cdp: Any) -> str:
    from browser_actors.axtree import axtree_text

    return await axtree_text(cdp)
