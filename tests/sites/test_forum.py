"""The forum site (`reddit`) driven in real Chromium: log in through the storage state, post, vote, comment, edit,
delete, subscribe, biography; the default is read-only; queries.py agrees with the pages."""

from __future__ import annotations

import re

import httpx
import pytest
from page_forms import submit

from sites.forum import queries
from sites.forum.constants import DB_GROUP, DEFAULT_USER

VOTE_CLASS = "document.querySelector('div.submission__vote').querySelector('form').getAttribute('class')"


@pytest.fixture
def url(site_server) -> str:
    return site_server.urls["reddit"]


def new_page(browser, site_server, sandbox: bool = True):
    ctx = browser.new_context(storage_state=str(site_server.storage_state_path("reddit")))
    if sandbox:
        ctx.add_cookies([site_server.sandbox_cookie(site_server.new_sandbox())])
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    return page


def test_post_vote_comment_edit_delete(browser, site_server, url):
    page = new_page(browser, site_server)
    page.goto(f"{url}/submit/nyc")
    page.fill("#submission_title", "is car necessary in NYC")
    page.fill("#submission_body", "Moving next month.\nAny advice?")
    submit(page, "#submission_submit")
    assert re.search(r"/f/nyc/\d+/is-car-necessary-in-nyc$", page.url)
    post_path = page.url
    inner = page.evaluate("document.querySelector('.submission__inner').outerText")
    assert "is car necessary in NYC" in inner and "Any advice?" in inner and DEFAULT_USER in inner
    assert "vote--user-upvoted" in page.evaluate(VOTE_CLASS)  # Postmill upvotes your own post
    submit(page, page.locator("div.submission__vote .vote__down"))
    assert "vote vote--user-downvoted" in page.evaluate(VOTE_CLASS)
    submit(page, page.locator("div.submission__vote .vote__down"))  # clicking again retracts the vote
    assert page.evaluate(VOTE_CLASS) == "vote"

    page.fill("#comment_comment", "???")
    submit(page, "#comment_submit")
    assert page.url == post_path
    assert page.evaluate("document.querySelector('.comment__body').outerText") == "???"
    page.locator("details.comment__reply summary").first.click()
    page.locator("details.comment__reply textarea").first.fill("a reply")
    submit(page, page.locator("details.comment__reply button").first)
    assert page.locator(".comment__replies .comment__body").first.inner_text() == "a reply"

    page.goto(post_path.rsplit("/", 1)[0] + "/-/edit")
    page.fill("#submission_body", "Every watch makes me feel like a kid again")
    submit(page, "#submission_submit")
    assert (
        page.evaluate("document.querySelector('.submission__body').outerText")
        == "Every watch makes me feel like a kid again"
    )
    assert "(edited)" in page.inner_text(".submission__info")

    page.locator(".comment--top-level .comment__nav >> text=Edit").first.click()
    page.fill("#comment_comment", "edited comment")
    submit(page, "#comment_submit")
    assert page.evaluate("document.querySelector('.comment__body').outerText") == "edited comment"
    submit(page, page.locator(".comment--top-level .comment__delete").first)
    assert page.locator(".comment__body").count() == 0  # the reply went with its parent

    submit(page, page.locator(".submission__delete"))
    assert page.url.endswith("/f/nyc")
    assert page.goto(post_path).status == 404
    page.context.close()


def test_subscribe_biography_and_listings(browser, site_server, url):
    page = new_page(browser, site_server)
    page.goto(f"{url}/f/MachineLearning")
    submit(page, "button.subscribe-button--subscribe")
    page.goto(f"{url}/")
    assert "MachineLearning" in page.evaluate('document.querySelector("#sidebar > section").outerText')
    page.goto(f"{url}/user/{DEFAULT_USER}/edit_biography")
    page.fill("#user_biography_biography", "Seeking SDE positions")
    submit(page, "#user_biography_submit")
    assert (
        page.evaluate('document.querySelector(".user-bio__biography").outerText') == "Seeking SDE positions"
    )
    assert page.locator(".user-profile").count() == 1

    # The pages and queries.py agree on the seeded data (read from the same sandbox-free seed).
    db = queries.connect(site_server.store.seeds[DB_GROUP])
    top = queries.forum_posts(db, "books", "top", 25)
    page.goto(f"{url}/f/books/top")
    titles = page.locator(".submission__title a").all_inner_texts()
    assert titles == [p["title"] for p in top]
    page.goto(f"{url}/f/books/top?p=2")
    assert (
        page.locator(".submission__title a").first.inner_text()
        == queries.forum_posts(db, "books", "top")[25]["title"]
    )
    page.goto(f"{url}{top[0]['path']}")
    assert page.locator(".submission__title").inner_text().startswith(top[0]["title"])
    assert page.locator(".comment__body").count() == len(queries.comments(db, top[0]["id"]))
    page.goto(f"{url}/search?q=library")
    assert "result(s)" in page.inner_text(".search-summary")
    page.context.close()


def test_default_is_read_only(browser, site_server, url):
    db = queries.connect(site_server.store.seeds[DB_GROUP])
    before = queries.post(db, 1)
    page = new_page(browser, site_server, sandbox=False)
    page.goto(f"{url}{before['path']}")
    assert page.locator(".site-nav__user").inner_text() == DEFAULT_USER  # logged in on the default too
    with page.expect_response(lambda r: r.request.method == "POST") as info:
        submit(page, page.locator("div.submission__vote .vote__down"))
    assert info.value.status == 403
    assert "read-only default; open a sandbox" in page.content()
    assert queries.post(db, 1) == before
    r = httpx.post(f"{url}/subscribe/books", cookies={"reddit_session": _session_cookie(site_server)})
    assert r.status_code == 403
    page.context.close()


def test_anonymous_and_bad_input(site_server, url):
    assert httpx.get(f"{url}/submit/books").status_code == 302  # to the login page
    assert httpx.get(f"{url}/f/nosuchforum").status_code == 404
    assert httpx.get(f"{url}/f/books/zzz").status_code == 404
    token = site_server.new_sandbox()
    cookies = {"reddit_session": _session_cookie(site_server), "wa_sandbox": token}
    r = httpx.post(
        f"{url}/submit/books", data={"submission[title]": "", "submission[forum]": "books"}, cookies=cookies
    )
    assert r.status_code == 400 and "The title must not be empty." in r.text
    r = httpx.post(f"{url}/sv/1", data={"choice": "7"}, cookies=cookies)
    assert r.status_code == 400
    r = httpx.post(
        f"{url}/submit/books",
        data={
            "submission[title]": "t",
            "submission[forum]": "books",
            "submission[url]": "javascript:alert(1)",
        },
        cookies=cookies,
    )
    assert r.status_code == 400 and "http://" in r.text


def _session_cookie(site_server) -> str:
    import json

    state = json.loads(site_server.storage_state_path("reddit").read_text())
    return next(c["value"] for c in state["cookies"] if c["name"] == "reddit_session")
