"""The code host site (`gitlab`) driven in real Chromium: issues (create, assign, label, due date, comment, close),
members (invite with a role, change it, read back with WebArena's members-page locator), stars, tokens, the RSS feed
token, profile status, new project, merge requests; the default is read-only; queries.py agrees with the pages."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from page_forms import submit

from sites.gitlab import queries
from sites.gitlab.constants import DB_GROUP, DEFAULT_USER

# The two page.evaluate calls of WebArena's gitlab_get_project_memeber_role helper, with the same selectors.
ACCOUNT_INDEX_JS = """(name) => {
  const els = document.querySelectorAll("td[data-label='Account'] span.gl-avatar-labeled-sublabel");
  for (let i = 0; i < els.length; i++) { if (els[i].outerText === '@' + name) return i; }
  return -1; }"""
ROLE_AT_JS = "(i) => document.querySelectorAll('td.col-max-role span')[i].outerText"
NOTES_LAST_JS = (
    "document.querySelector('[id=\"notes-list\"').lastElementChild"
    ".querySelector('.timeline-discussion-body').outerText"
)


@pytest.fixture
def url(site_server) -> str:
    return site_server.urls["gitlab"]


@pytest.fixture
def sandboxed(browser, site_server):
    """A logged-in page on a fresh sandbox, and that sandbox's database (for queries.py)."""
    token = site_server.new_sandbox()
    ctx = browser.new_context(storage_state=str(site_server.storage_state_path("gitlab")))
    ctx.add_cookies([site_server.sandbox_cookie(token)])
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    yield page, lambda: queries.connect(site_server.store.db_path(token, DB_GROUP))
    ctx.close()


def member_role(page, username: str) -> str:
    idx = page.evaluate(ACCOUNT_INDEX_JS, username)
    return page.evaluate(ROLE_AT_JS, idx) if idx >= 0 else ""


def test_issue_lifecycle(sandboxed, url):
    page, db = sandboxed
    project = "byteblaze/a11y-syntax-palette"
    page.goto(f"{url}/{project}/-/issues/new")
    page.fill("#issue_title", "404 for many URLs")
    page.fill("#issue_description", "Several links are broken.")
    page.select_option("#issue_label_ids", label="bug")
    page.fill("#issue_due_date", "2030-01-03")
    submit(page, "[data-testid='issuable-create-button']")
    assert re.search(rf"/{project}/-/issues/\d+$", page.url)
    assert (
        page.evaluate("document.querySelector('[data-qa-selector=\"title_content\"]').outerText")
        == "404 for many URLs"
    )
    assert "Jan 3, 2030" in page.evaluate(
        "document.querySelector('[data-testid=\"sidebar-due-date\"').outerText"
    )
    assignee_block = "document.querySelector('.block.assignee').outerText"
    # the block holds its value only, not the edit form
    assert "Byte Blaze" not in page.evaluate(assignee_block)
    submit(page, "button.assign-yourself")
    assert "Byte Blaze" in page.evaluate(assignee_block)
    page.fill("#note-body", "Good idea")
    submit(page, "[data-testid='comment-button']")
    assert page.evaluate(NOTES_LAST_JS) == "Good idea"
    submit(page, "[data-testid='close-issue-button']")
    assert page.inner_text("[data-testid='issue-state-badge']") == "Closed"
    iid = int(page.url.rsplit("/", 1)[1])
    issue = next(i for i in queries.issues(db(), project) if i["iid"] == iid)
    assert (issue["state"], issue["labels"], issue["assignees"], issue["due_date"], issue["comments"]) == (
        "closed",
        ["bug"],
        [DEFAULT_USER],
        "2030-01-03",
        1,
    )
    page.goto(f"{url}/{project}/-/issues/?state=closed&label_name%5B%5D=bug&sort=created_date")
    assert page.locator(".issue-title-text a").first.inner_text() == "404 for many URLs"
    page.goto(f"{url}/dashboard/issues?scope=all&state=closed&assignee_username={DEFAULT_USER}")
    assert "404 for many URLs" in page.content()


def test_members_stars_and_merge_request(sandboxed, url):
    page, db = sandboxed
    project = "byteblaze/dotfiles"
    outsider = next(
        u["username"] for u in queries.users(db()) if u["username"] not in queries.members(db(), project)
    )
    page.goto(f"{url}/{project}/-/project_members")
    page.fill("#invite_user_ids", outsider)
    page.select_option("#invite_access_level", label="Guest")
    submit(page, "[data-testid='invite-button']")
    assert member_role(page, outsider) == "Guest"
    assert member_role(page, DEFAULT_USER) == "Owner"
    page.select_option(f"select[aria-label='Role of {outsider}']", label="Maintainer")
    submit(page, f"button[aria-label='Update role of {outsider}']")
    assert member_role(page, outsider) == "Maintainer"
    assert queries.members(db(), project)[outsider] == "Maintainer"

    target = next(
        p["full_path"]
        for p in queries.projects(db(), public_only=True)
        if p["full_path"] not in queries.starred_by(db(), DEFAULT_USER)
    )
    page.goto(f"{url}/{target}")
    before = int(page.inner_text(".star-count"))
    submit(page, "button.star-btn")
    assert (
        page.inner_text("button.star-btn") == "Unstar" and int(page.inner_text(".star-count")) == before + 1
    )
    page.goto(f"{url}/{target}/-/starrers")
    assert f"@{DEFAULT_USER}" in page.inner_text(".starrers")
    page.goto(f"{url}/dashboard/projects/starred")
    assert target.split("/")[1] in page.inner_text(".projects-list")

    page.goto(f"{url}/{project}/-/merge_requests/new")
    branches = page.locator("#merge_request_source_branch option").all_inner_texts()
    source = next(b for b in branches if b != "main")
    page.select_option("#merge_request_source_branch", source)
    page.select_option("#merge_request_target_branch", "main")
    page.fill("#merge_request_title", "Rework the prompt")
    page.select_option("#merge_request_reviewer_ids", value=str(_user_id(page, outsider)))
    submit(page, "[data-testid='issuable-create-button']")
    links = page.evaluate(
        "[...document.querySelectorAll('.detail-page-description > a.gl-font-monospace')]"
        ".map(a => a.outerText)"
    )
    assert links == [source, "main"]
    assert f"@{outsider}" in page.evaluate("document.querySelector('.block.reviewer').outerText")


def _user_id(page, username: str) -> int:
    opt = page.locator("#merge_request_reviewer_ids option", has_text=f"(@{username})")
    return int(opt.get_attribute("value"))


def test_settings_tokens_and_new_project(sandboxed, url):
    page, db = sandboxed
    page.goto(f"{url}/-/profile/personal_access_tokens")
    page.fill("#personal_access_token_name", "ci-bot")
    page.check("#personal_access_token_scopes_read_api")
    page.check("#personal_access_token_scopes_read_repository")
    submit(page, "[data-testid='create-token-button']")
    assert page.input_value("#created-personal-access-token").startswith("glpat-")
    assert queries.access_tokens(db(), DEFAULT_USER)[0] == {
        "name": "ci-bot",
        "scopes": ["read_api", "read_repository"],
        "expires_at": None,
    }
    page.reload()
    assert page.locator("#created-personal-access-token").count() == 0  # shown once only

    page.goto(f"{url}/-/profile/account")
    old = page.input_value("#feed_token")
    assert old == queries.user(db(), DEFAULT_USER)["feed_token"]
    submit(page, "[data-testid='reset-feed-token']")
    new = page.input_value("#feed_token")
    assert new != old and len(new) == 20 and queries.user(db(), DEFAULT_USER)["feed_token"] == new

    page.goto(f"{url}/-/profile")
    page.fill("#user_status_message", "Enjoying life")
    page.fill("#user_website_url", "https://egg.tart.com")
    submit(page, "[data-testid='update-profile-button']")
    page.goto(f"{url}/{DEFAULT_USER}")
    assert page.evaluate("document.querySelector('.cover-status').lastChild.textContent") == "Enjoying life"
    assert (
        page.evaluate("document.querySelector('.profile-header [itemprop=\"url\"]').outerText")
        == "egg.tart.com"
    )

    page.goto(f"{url}/projects/new")
    page.fill("#project_name", "web agent android")
    page.select_option("#project_template_name", label="Android")
    page.check("#project_visibility_level_0")
    submit(page, "[data-testid='project-create-button']")
    assert page.url.endswith(f"/{DEFAULT_USER}/web-agent-android")
    assert page.evaluate("document.querySelector('.visibility-icon').getAttribute('title')") == "Private"
    page.goto(f"{url}/{DEFAULT_USER}/web-agent-android/-/commits")
    assert "Initialized from 'Android' project template" in page.content()
    assert queries.members(db(), f"{DEFAULT_USER}/web-agent-android") == {DEFAULT_USER: "Owner"}


def test_pages_agree_with_queries(browser, site_server, url):
    db = queries.connect(site_server.store.seeds[DB_GROUP])
    ctx = browser.new_context(storage_state=str(site_server.storage_state_path("gitlab")))
    page = ctx.new_page()
    project = queries.projects(db, public_only=True)[0]["full_path"]
    opened = queries.issues(db, project, "opened")
    page.goto(f"{url}/{project}/-/issues?state=opened")
    assert page.locator(".issue-title-text a").all_inner_texts() == [i["title"] for i in opened[:20]]
    assert f"Open {len(opened)}" in page.inner_text(".issues-state-filters")
    page.goto(f"{url}/{project}/-/graphs/main")
    assert page.locator(".contributor-name").first.inner_text() == queries.commit_counts(db, project)[0][0]
    page.goto(f"{url}/explore/projects?sort=stars_desc")
    mine = set(queries.member_projects(db, DEFAULT_USER))  # private projects show to their members only
    visible = [
        p["name"] for p in queries.projects(db) if p["visibility"] == "public" or p["full_path"] in mine
    ]
    assert page.locator(".project-name").all_inner_texts() == visible[:20]
    page.goto(f"{url}/{project}/-/project_members")
    for username, role in queries.members(db, project).items():
        assert member_role(page, username) == role
    ctx.close()


def test_default_is_read_only_and_bad_input(site_server, url):
    state = json.loads(site_server.storage_state_path("gitlab").read_text())
    cookies = {c["name"]: c["value"] for c in state["cookies"]}
    db = queries.connect(site_server.store.seeds[DB_GROUP])
    before = queries.project(db, "byteblaze/dotfiles")
    r = httpx.post(f"{url}/byteblaze/dotfiles/-/star", cookies=cookies)
    assert r.status_code == 403 and "read-only default; open a sandbox" in r.text
    assert queries.project(db, "byteblaze/dotfiles") == before
    assert httpx.get(f"{url}/byteblaze/dotfiles").status_code == 200  # anonymous reads work
    assert httpx.get(f"{url}/byteblaze/homelab-ansible").status_code == 404  # private: hidden from visitors
    assert httpx.get(f"{url}/-/profile").status_code == 302  # to sign-in
    cookies["wa_sandbox"] = site_server.new_sandbox()
    r = httpx.post(
        f"{url}/byteblaze/dotfiles/-/project_members",
        data={"user_ids": "nobody_here", "access_level": "10"},
        cookies=cookies,
    )
    assert r.status_code == 400 and "No user named nobody_here" in r.text
    r = httpx.post(
        f"{url}/byteblaze/dotfiles/-/project_members",
        data={"user_ids": "adahl", "access_level": "99"},
        cookies=cookies,
    )
    assert r.status_code == 400
    r = httpx.post(f"{url}/byteblaze/dotfiles/-/issues/new", data={"issue[title]": ""}, cookies=cookies)
    assert r.status_code == 400 and "Title can&#39;t be blank" in r.text
