"""Executes one `Action` on the active tab; returns the tab that is active afterwards and an error text or None.

Elements are resolved by id to the element itself (`[data-wa-id="12"]` in the main frame, then in each child
frame; Playwright's CSS engine pierces open shadow roots), never to coordinates. Every failure becomes a short,
model-readable error string; nothing here raises for a bad id or a bad action.
"""

from __future__ import annotations

import re
from typing import Any

from browser_actors.safety import AllowList, Guard, resolve_url
from common import records as R

# WebArena's key names (and common spellings) -> Playwright's.
_KEYS = {
    "ctrl": "Control",
    "control": "Control",
    "cmd": "Meta",
    "meta": "Meta",
    "command": "Meta",
    "alt": "Alt",
    "option": "Alt",
    "shift": "Shift",
    "enter": "Enter",
    "return": "Enter",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "Space",
    "backspace": "Backspace",
    "delete": "Delete",
    "del": "Delete",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "home": "Home",
    "end": "End",
}

# What the guard looks at: the element's text and the URL it would lead to (link, form action, formaction).
_DESCRIBE_JS = """el => {
  const raw = el.innerText || el.value || '';
  let t = '';  // the first 300 UTF-16 units, ending on a grapheme boundary (never half an emoji)
  for (const g of new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(raw)) {
    if (g.index + g.segment.length > 300) break;
    t += g.segment;
  }
  const lab = [el.getAttribute('aria-label'), el.getAttribute('title'), el.getAttribute('name')].filter(Boolean).join(' ');
  const url = el.href || (el.form && (el.getAttribute('formaction') ? el.formAction : el.form.action)) || '';
  return [t + ' ' + lab, String(url)];
}"""
_SCROLL_JS = """d => { const s = document.scrollingElement || document.body; const b = s.scrollTop;
  window.scrollBy(0, d * window.innerHeight * 0.9); return [b, s.scrollTop]; }"""


def normalize_key(combo: str) -> str:
    """`ctrl+a` -> `Control+a`, `Enter` stays; unknown names are passed to Playwright, which reports them."""
    parts = [p.strip() for p in re.split(r"\+(?=.)", combo.strip()) if p.strip()]
    return "+".join(_KEYS.get(p.lower(), p) for p in parts)


def brief(err: Exception) -> str:
    """First line of a Playwright error plus the last telling line of its call log."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    if not lines:
        return type(err).__name__
    first = re.sub(r"^\w+\.\w+: ", "", lines[0])
    telling = [ln.lstrip("- ") for ln in lines[1:] if re.search(r"element|intercepts|not |outside", ln)]
    return first + (f" ({telling[-1]})" if telling else "")


async def locate(page: Any, element_id: str) -> tuple[Any | None, str | None]:
    eid = str(element_id).strip().strip("[]").strip()
    if not eid.isdigit():
        return (
            None,
            f"'{element_id}' is not an element id: use a number shown as [id] / id=\"..\" in the observation",
        )
    selector = f'[data-wa-id="{eid}"]'
    for frame in page.frames:  # the main frame comes first
        loc = frame.locator(selector)
        try:
            if await loc.count():
                return loc.first, None
        except Exception:  # noqa: BLE001 - a detached or navigating frame simply does not hold the element
            continue
    return (
        None,
        f"there is no element with id [{eid}] on the current page (ids come from the latest observation)",
    )


class Executor:
    """Maps actions to Playwright calls for one episode (its allow-list, guard and action time-out)."""

    def __init__(self, allow: AllowList, guard: Guard, timeout_ms: float):
        self.allow, self.guard, self.timeout = allow, guard, timeout_ms

    async def run(self, action: Any, page: Any) -> tuple[Any, str | None]:
        from playwright.async_api import Error as PlaywrightError

        try:
            return await self._dispatch(action, page)
        except PlaywrightError as e:
            if page.is_closed() or "crash" in str(e).lower():
                raise  # the actor replaces the page and reports an infrastructure error
            return page, f"{action.type} failed: {brief(e)}"

    async def _dispatch(self, a: Any, page: Any) -> tuple[Any, str | None]:
        if isinstance(a, (R.Click, R.Type, R.Hover, R.Select)):
            return page, await self._element_action(a, page)
        if isinstance(a, R.Press):
            await page.keyboard.press(normalize_key(a.key))
            return page, None
        if isinstance(a, R.Scroll):
            return page, await self._scroll(page, a.direction)
        if isinstance(a, R.Goto):
            return page, await self._goto(page, a.url)
        if isinstance(a, (R.GoBack, R.GoForward)):
            return page, await self._history(page, back=isinstance(a, R.GoBack))
        if isinstance(a, (R.NewTab, R.TabFocus, R.CloseTab)):
            return await self._tabs(a, page)
        if isinstance(a, R.Stop):
            return page, None
        return page, f"unsupported action {getattr(a, 'type', a)!r}"

    async def _element_action(self, a: Any, page: Any) -> str | None:
        loc, err = await locate(page, a.element_id)
        if err:
            return err
        if self.guard:
            text, url = await loc.evaluate(_DESCRIBE_JS)
            if refusal := self.guard.check(url, text):
                return refusal
        t = self.timeout
        if isinstance(a, R.Click):
            await loc.click(timeout=t)
        elif isinstance(a, R.Hover):
            await loc.hover(timeout=t)
        elif isinstance(a, R.Type):
            return await self._type(loc, page, a)
        else:
            return await self._select(loc, a.text)
        return None

    async def _type(self, loc: Any, page: Any, a: Any) -> str | None:
        from playwright.async_api import Error as PlaywrightError

        tag = await loc.evaluate("el => el.tagName")
        if tag == "SELECT":
            return f"[{a.element_id}] is a dropdown: use select [{a.element_id}] [option] instead of type"
        try:
            await loc.fill(a.text, timeout=self.timeout)  # clears first, fires input/change like a user
        except PlaywrightError as e:
            if "not an <input>" not in str(e) and "not editable" not in str(e).lower():
                raise
            # Not a form field (e.g. a div with key handlers): focus it, select all, type over.
            await loc.click(timeout=self.timeout)
            await page.keyboard.press("Control+a")
            await page.keyboard.type(a.text)
        if a.press_enter:
            await loc.press("Enter", timeout=self.timeout)
        return None

    async def _select(self, loc: Any, text: str) -> str | None:
        from playwright.async_api import Error as PlaywrightError

        if await loc.evaluate("el => el.tagName") != "SELECT":
            return "select works on <select> dropdowns only; click the control and then the option instead"
        for key in ("label", "value"):
            try:
                await loc.select_option(**{key: text}, timeout=1000)
                return None
            except PlaywrightError:
                continue
        options = await loc.evaluate("el => Array.from(el.options).map(o => o.text.trim()).slice(0, 20)")
        return f"no option {text!r} in this dropdown; options are: {options}"

    async def _scroll(self, page: Any, direction: str) -> str | None:
        sign = -1 if direction == "up" else 1
        before, after = await page.evaluate(_SCROLL_JS, sign)
        # the document does not scroll: an inner scroller under the middle of the viewport may
        if before == after:
            vp = page.viewport_size or {"width": 1280, "height": 720}
            await page.mouse.move(vp["width"] / 2, vp["height"] / 2)
            await page.mouse.wheel(0, sign * vp["height"] * 0.9)
        return None

    async def _goto(self, page: Any, url: str) -> str | None:
        target = resolve_url(url, page.url)
        if why := self.allow.check(target):
            return f"navigation to {target} blocked: {why}"
        if refusal := self.guard.check(target):
            return refusal
        await page.goto(target, wait_until="commit", timeout=self.timeout)
        return None

    async def _history(self, page: Any, back: bool) -> str | None:
        if back and await _at_history_start(page):
            return "cannot go back: no previous page in this tab"
        before = page.url
        resp = await (page.go_back if back else page.go_forward)(wait_until="commit", timeout=self.timeout)
        if resp is None and page.url == before:
            return f"cannot go {'back' if back else 'forward'}: no {'previous' if back else 'next'} page in this tab"
        return None

    async def _tabs(self, a: Any, page: Any) -> tuple[Any, str | None]:
        ctx = page.context
        if isinstance(a, R.NewTab):
            return await ctx.new_page(), None
        if isinstance(a, R.TabFocus):
            pages = ctx.pages
            if not 0 <= a.tab_index < len(pages):
                return page, f"no tab {a.tab_index}: tabs are numbered 0..{len(pages) - 1}"
            await pages[a.tab_index].bring_to_front()
            return pages[a.tab_index], None
        await page.close()
        pages = ctx.pages
        nxt = pages[-1] if pages else await ctx.new_page()
        await nxt.bring_to_front()
        return nxt, None


async def _at_history_start(page: Any) -> bool:
    """True when nothing but blank pages lie behind the current entry, so go_back would leave the task's pages.
    (The reset also forgets the blank entry, but that can race with the start page's own commit.)"""
    try:
        cdp = await page.context.new_cdp_session(page)
        try:
            hist = await cdp.send("Page.getNavigationHistory")
        finally:
            await cdp.detach()
    except Exception:  # noqa: BLE001 - without CDP, fall back to Playwright's own answer
        return False
    earlier = hist["entries"][: hist["currentIndex"]]
    return all(e.get("url", "") in ("about:blank", "") for e in earlier)
