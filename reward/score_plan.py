"""Run an evaluator plan on one finished episode: string, URL and program checks, each with a one-line reason.

The order and the arithmetic are WebArena-Lite's (see `reward.checks` for the references):
- string_match cleans the answer once, then walks the reference kinds in config order; `fuzzy_match: "N/A"` first
  asks for an exact "N/A" and, failing that, REPLACES the running string score with the unachievable-reason
  judge's verdict (earlier checks are kept in the output, marked as superseded, with score 1);
- program_html walks its targets in order on ONE page: a target with url "last" checks whatever page the previous
  target left open; a locator that throws in the page scores 0 and ends the step (the remaining targets are not
  visited, as in WebArena-Lite);
- the reward is the product of the checks; a 0 decides it even when another check is unscorable (None), since
  every check is binary; otherwise any None makes the reward None.
Departures, all deliberate: navigation waits for the page to be ready (load state, optionally network idle)
instead of sleeping 3 s; a site that cannot be reached makes the check unscorable instead of crashing; an empty
answer is judged without calling the judge (0 unless the reference is empty, WebArena's own rule).
"""

from __future__ import annotations

import html
from typing import Any, Protocol

from common.records import CheckResult, MiniwobResult, Reward
from reward import checks as C
from reward.funcs import CallContext, Helpers, HelperUnavailable
from reward.judge import Judge
from reward.plan import HtmlStep, MiniwobStep, Plan, StringStep, Target, UrlStep

NEEDS_LIVE = "needs a live page (--live)"


class PageSession(Protocol):
    """One episode's view of the sites: a single page that checks navigate, and cookie-carrying HTTP."""

    current_url: str

    async def page(self) -> Any: ...
    async def goto(self, url: str) -> None: ...
    async def http_get(self, url: str) -> tuple[int, Any]: ...


class SandboxGone(RuntimeError):
    """The site no longer knows the episode's sandbox (dropped or expired): what the episode wrote is gone, so the
    episode cannot be scored at all -- never a 0 for the agent."""


class NavigationError(RuntimeError):
    """A page that could not be loaded at all (connection refused, time-out): an infrastructure failure."""


async def _fuzzy(judge: Judge | None, pred: str, ref: str, intent: str, kind: str) -> CheckResult:
    if not pred:
        score = 1.0 if not ref else 0.0
        return CheckResult(type=kind, score=score, why=f"empty answer vs {C.short(ref)}")
    if judge is None:
        return CheckResult(type=kind, score=None, why="no judge configured for fuzzy_match")
    score, why = await judge.fuzzy(pred, ref, intent)
    return CheckResult(type=kind, score=score, why=f"{why}; reference {C.short(ref, 50)}")


async def _na_check(
    step: StringStep, pred: str, earlier: list[CheckResult], judge: Judge | None
) -> list[CheckResult]:
    exact = C.exact_match("N/A", pred)
    if C.product([c.score for c in earlier]) == 1.0 and exact == 1.0:
        return earlier + [
            CheckResult(type="string_match.fuzzy_match", score=1.0, why="answer is exactly N/A")
        ]
    superseded = [
        CheckResult(type=c.type, score=1.0, why=f"superseded by ua_match (was {c.score}): {c.why}")
        for c in earlier
    ]
    if judge is None:
        ua = CheckResult(type="string_match.ua_match", score=None, why="no judge configured for ua_match")
    else:
        score, why = await judge.ua(pred, step.string_note, step.intent)
        ua = CheckResult(type="string_match.ua_match", score=score, why=why)
    return superseded + [ua]


async def string_checks(step: StringStep, answer: str, judge: Judge | None) -> list[CheckResult]:
    pred = C.clean_answer(answer)
    out: list[CheckResult] = []
    for approach, ref in step.items:
        kind = f"string_match.{approach}"
        if approach == "exact_match":
            ok = C.exact_match(ref, pred)
            out.append(
                CheckResult(type=kind, score=ok, why=f"{C.short(pred)} {'==' if ok else '!='} {C.short(ref)}")
            )
        elif approach == "must_include":
            for r in ref:
                ok = C.must_include(r, pred, tokenize=len(ref) == 1)
                how = " as a word" if len(ref) == 1 and len(C.clean_answer(r)) == 1 else ""
                out.append(
                    CheckResult(type=kind, score=ok, why=f"{C.short(r)} {'found' if ok else 'missing'}{how}")
                )
        elif approach == "must_exclude":
            out += [
                CheckResult(type=kind, score=c.score, why=c.why) for c in C.contents_exclude(list(ref), pred)
            ]
        elif approach == "required_values":
            out += [
                CheckResult(type=kind, score=c.score, why=c.why) for c in C.contents_values(list(ref), pred)
            ]
        elif approach == "one_of":
            hit = next((r for r in ref if C.clean_answer(r) in pred), None)
            out.append(
                CheckResult(type=kind, score=float(hit is not None), why=f"one of {len(ref)}: {C.short(hit)}")
            )
        elif approach == "fuzzy_match" and ref == "N/A":
            out = await _na_check(step, pred, out, judge)
        else:
            for r in ref:
                out.append(await _fuzzy(judge, pred, r, step.intent, kind))
    return out


async def _contents(
    t: Target, selected: str, intent: str, judge: Judge | None, tag: str
) -> list[CheckResult]:
    if t.content_kind == "exact_match":
        found = [C.contents_exact(t.content, selected)]
    elif t.content_kind == "must_include":
        found = C.contents_include(list(t.content), selected)
    elif t.content_kind == "must_exclude":
        found = C.contents_exclude(list(t.content), selected)
    elif t.content_kind == "required_values":
        found = C.contents_values(list(t.content), selected)
    else:
        found = [await _fuzzy(judge, selected, ", ".join(t.content), intent, "program_html.fuzzy_match")]
    note = f" (ignored: {', '.join(t.ignored_kinds)})" if t.ignored_kinds else ""
    return [CheckResult(type=c.type, score=c.score, why=f"{tag} {c.why}{note}") for c in found]


async def _select(t: Target, session: PageSession, ctx: CallContext, helpers: Helpers) -> str | None:
    """The text a target checks; None when the locator threw in the page (WebArena-Lite: the page is wrong)."""
    page = await session.page()
    if t.locator_kind == "page":
        return await page.content()
    if t.locator_kind == "func":
        assert t.locator_call is not None
        return str(await helpers.call(t.locator_call, ctx))
    for action in t.prep_actions:
        try:
            await page.evaluate(f"() => {action}")
        except Exception:  # noqa: BLE001 - WebArena ignores a failing prep action and skips the rest
            break
    try:
        value = await page.evaluate(f"() => {t.locator}")
    except Exception:  # noqa: BLE001 - a locator that throws means the page is not the expected one
        return None
    return str(value) or ""


async def html_checks(
    step: HtmlStep,
    session: PageSession,
    helpers: Helpers,
    judge: Judge | None,
    env_urls: dict[str, str],
    unescape: bool = True,
) -> list[CheckResult]:
    out: list[CheckResult] = []
    for i, t in enumerate(step.targets):
        tag = f"[{i}]"
        ctx = CallContext(
            current_url=session.current_url,
            env_urls=env_urls,
            get_page=session.page,
            http_get=session.http_get,
        )
        try:
            url = t.url
            if t.url_kind == "func":
                assert t.url_call is not None
                url = await helpers.call(t.url_call, ctx)
                if not url:
                    return out + [
                        CheckResult(
                            type="program_html.url",
                            score=0.0,
                            why=f"{tag} {t.url_call.name} found nothing to check (e.g. no order placed)",
                        )
                    ]
            if url != "last":
                await session.goto(url)
            ctx.current_url = session.current_url
            selected = await _select(t, session, ctx, helpers)
        except (HelperUnavailable, NavigationError) as e:
            return out + [CheckResult(type="program_html", score=None, why=f"{tag} {e}")]
        if selected is None:
            return out + [
                CheckResult(
                    type="program_html.locator",
                    score=0.0,
                    why=f"{tag} locator threw on {C.short(session.current_url, 60)}",
                )
            ]
        out += await _contents(t, html.unescape(selected) if unescape else selected, step.intent, judge, tag)
    return out


def combine(checks: list[CheckResult]) -> float | None:
    """Product of binary checks: any 0 decides; else any None leaves the reward unscorable."""
    scores = [c.score for c in checks]
    if any(s == 0 for s in scores if s is not None):
        return 0.0
    return C.product(scores)


async def run_plan(
    plan: Plan,
    answer: str | None,
    final_url: str,
    session: PageSession | None,
    helpers: Helpers,
    judge: Judge | None,
    env_urls: dict[str, str],
    url_mode: str = "webarena",
    unescape: bool = True,
    miniwob: MiniwobResult | None = None,
) -> Reward:
    """All checks of one episode. `session` None: program checks are reported as needing a live page.
    `miniwob`: the page's own result from the final state, for the `miniwob` check."""
    out: list[CheckResult] = []
    error = None
    for step in plan.steps:
        if isinstance(step, StringStep):
            out += await string_checks(step, answer or "", judge)
        elif isinstance(step, UrlStep):
            current = session.current_url if session is not None else final_url
            out.append(C.url_match(current, step.reference, step.rule, url_mode))
        elif isinstance(step, MiniwobStep):
            out.append(C.miniwob(miniwob))
        elif session is None:
            out.append(CheckResult(type="program_html", score=None, why=NEEDS_LIVE))
            error = NEEDS_LIVE
        else:
            out += await html_checks(step, session, helpers, judge, env_urls, unescape)
    score = None if error else combine(out)
    return Reward(score=score, checks=out, error=error)
