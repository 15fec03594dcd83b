"""Submitting a form in a page test: click, then wait until the page the POST leads to has loaded.

`page.click` returns once a navigation it starts has begun, not when the next document is parsed; a
`page.evaluate` right after it can read a half-built page (CI saw a members table with no rows:
`member_role(...) == ''`). Every click that submits a form in the sync page tests goes through `submit`.
"""

from __future__ import annotations


def submit(page, button) -> None:
    """Click `button` (a selector or a Locator of a form's submit button); return once the next page fired `load`."""
    with page.expect_navigation():
        (page.locator(button) if isinstance(button, str) else button).click()
