"""Submitting a form in a page test: click, then wait until the page the POST leads to has loaded.

`page.click` returns once a navigation it starts has begun, not when the next document is parsed; a
`page.evaluate` right after it can read a half-built page (CI saw a members table with no rows:
`member_role(...) == ''`). Every click that submits a form in the sync page tests goes through `submit`, and
every click or key press that leads to another page in the async shop tests through `asubmit`.
"""

from __future__ import annotations


def submit(page, button) -> None:
    """Click `button` (a selector or a Locator of a form's submit button); return once the next page fired `load`."""
    with page.expect_navigation():
        (page.locator(button) if isinstance(button, str) else button).click()


async def asubmit(page, button, key: str | None = None) -> None:
    """`submit` for Playwright's async API; with `key`, press that key in `button` (e.g. Enter in a search box)."""
    target = page.locator(button) if isinstance(button, str) else button
    async with page.expect_navigation():
        await (target.press(key) if key else target.click())
