"""WebArena-Lite's deterministic checks as pure functions: answer cleaning, exact_match, must_include, must_exclude,
required_values and url_match, each returning a score or a `CheckResult` with a one-line reason.

Reference semantics (the evaluator shipped with the WebArena-Lite configs in `browsergym-webarenalite`, which is
WebArena's own `evaluation_harness/evaluators.py` plus VisualAgentBench's extra required-content keys):
- clean_answer: strip, drop ONE pair of enclosing quotes ('...' or "..."), lower-case. The string evaluator cleans
  the answer once up front and the comparison cleans it again, so `"'N/A'"` equals `N/A` (both passes kept here).
- must_include: substring of the cleaned answer, except that a reference list of exactly one entry whose cleaned
  text is a single character is matched against the answer's word tokens (so "0" does not match "10").
  In program_html checks the split on " |OR| " gives alternatives and no tokenizing is done.
- must_exclude (VisualAgentBench): a one-token reference is looked up among the tokens, else as a substring.
- required_values (VisualAgentBench): the text as an int (commas dropped) compared with "<= 5", "> 3", "== 2" ...
- url_match "GOLD in PRED": trailing slashes stripped; score = (some reference's netloc+path is a substring of
  the prediction's netloc+path) x (for every query key of any reference, one of its values appears under that key).
  References are split on " |OR| " and their query values are pooled per key, exactly as WebArena does.
"""

from __future__ import annotations

import urllib.parse
from collections import defaultdict

from common.records import CheckResult, MiniwobResult
from common.text import cut
from reward.tokenize import word_tokenize

OR_SEP = " |OR| "


def clean_answer(answer: str) -> str:
    answer = answer.strip()
    if len(answer) >= 1 and answer[0] == answer[-1] and answer[0] in ("'", '"'):
        answer = answer[1:-1]
    return answer.lower()


def exact_match(ref: str, pred: str) -> float:
    return float(clean_answer(pred) == clean_answer(ref))


def must_include(ref: str, pred: str, tokenize: bool = False) -> float:
    clean_ref, clean_pred = clean_answer(ref), clean_answer(pred)
    if tokenize and len(clean_ref) == 1 and len(word_tokenize(clean_ref)) == 1:
        return float(clean_ref in word_tokenize(clean_pred))
    return float(clean_ref in clean_pred)


def must_exclude(ref: str, pred: str) -> float:
    clean_ref, clean_pred = clean_answer(ref), clean_answer(pred)
    if len(word_tokenize(clean_ref)) == 1:
        return float(clean_ref not in word_tokenize(clean_pred))
    return float(clean_ref not in clean_pred)


def str_to_int(text: str) -> int | None:
    """VisualAgentBench's number reading: strip, drop thousands commas, int(); None when it is not an int."""
    try:
        return int(text.strip().replace(",", ""))
    except ValueError:
        return None


_INEQUALITIES = ("<=", ">=", "==", "<", ">")  # first one found in the text wins, as in VisualAgentBench


def satisfies(value: float, inequality: str, tol: float = 1e-8) -> bool:
    """`value` against "<= 700", ">= 300", "== 2" ...; a text with no operator is an error (as in the reference)."""
    for op in _INEQUALITIES:
        if op in inequality:
            bound = float(inequality.split(op)[1].strip())
            return {
                "<=": value <= bound + tol,
                ">=": value >= bound - tol,
                "==": abs(value - bound) <= tol,
                "<": value < bound + tol,
                ">": value > bound - tol,
            }[op]
    raise ValueError(f"not an inequality: {inequality!r}")


def short(text: str, limit: int = 80) -> str:
    """A one-line, bounded rendering of a value for a check's `why`."""
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= limit else cut(flat, limit - 3, "..."))


# -- url_match ----------------------------------------------------------------------------------------------
def clean_url(url: str) -> str:
    return str(url).rstrip("/")


def _base_and_query(url: str) -> tuple[str, dict[str, list[str]]]:
    parsed = urllib.parse.urlparse(url)
    return parsed.netloc + parsed.path, urllib.parse.parse_qs(parsed.query)


def url_gold_in_pred(pred_url: str, reference: str) -> tuple[float, str]:
    """WebArena's "GOLD in PRED" URL rule; returns (score, reason)."""
    refs = [clean_url(u) for u in reference.split(OR_SEP)]
    pred_base, pred_query = _base_and_query(clean_url(pred_url))
    ref_bases: list[str] = []
    ref_queries: dict[str, set[str]] = defaultdict(set)
    for ref in refs:
        base, query = _base_and_query(ref)
        ref_bases.append(base)
        for key, values in query.items():
            ref_queries[key].update(values)
    if not any(base in pred_base for base in ref_bases):
        return 0.0, f"path {short(pred_base)} does not contain {' or '.join(short(b) for b in ref_bases)}"
    for key, values in ref_queries.items():
        if not any(v in pred_query.get(key, []) for v in values):
            return 0.0, f"query {key}={pred_query.get(key, [])} lacks one of {sorted(values)}"
    keys = f" and query keys {sorted(ref_queries)}" if ref_queries else ""
    return 1.0, f"path {short(pred_base)} contains the reference{keys}"


def url_exact(pred_url: str, reference: str) -> tuple[float, str]:
    """Exact mode (an option; VisualAgentBench's "EXACT" rule): the cleaned URL equals one reference."""
    refs = [clean_url(u) for u in reference.split(OR_SEP)]
    ok = clean_url(pred_url) in refs
    return float(
        ok
    ), f"{short(clean_url(pred_url))} {'is' if ok else 'is not'} one of {len(refs)} reference URL(s)"


def url_match(pred_url: str, reference: str, rule: str | None = None, mode: str = "webarena") -> CheckResult:
    """One url_match check. `rule` is the config's url_note; `mode` is "webarena" (default) or "exact"."""
    rule = rule or "GOLD in PRED"
    if mode == "exact" or rule == "EXACT":
        score, why = url_exact(pred_url, reference)
    elif rule == "GOLD in PRED":
        score, why = url_gold_in_pred(pred_url, reference)
    else:
        return CheckResult(type="url_match", score=None, why=f"unknown url_note {rule!r}")
    return CheckResult(type="url_match", score=score, why=why)


# -- required contents of a program_html target (the deterministic kinds) -------------------------------------
def contents_exact(ref: str, selected: str) -> CheckResult:
    ok = exact_match(ref, selected)
    return CheckResult(
        type="program_html.exact_match",
        score=ok,
        why=f"{short(selected)} {'equals' if ok else 'differs from'} {short(ref)}",
    )


def contents_include(refs: list[str], selected: str) -> list[CheckResult]:
    out = []
    for ref in refs:
        alternatives = ref.split(OR_SEP)
        hit = next((a for a in alternatives if must_include(a, selected)), None)
        why = f"found {short(hit)}" if hit is not None else f"missing {short(ref)} in {short(selected, 60)}"
        out.append(CheckResult(type="program_html.must_include", score=float(hit is not None), why=why))
    return out


def contents_exclude(refs: list[str], selected: str) -> list[CheckResult]:
    out = []
    for ref in refs:
        ok = must_exclude(ref, selected)
        why = f"{short(ref)} {'absent' if ok else 'present'} in {short(selected, 60)}"
        out.append(CheckResult(type="program_html.must_exclude", score=ok, why=why))
    return out


def contents_values(values: list[str], selected: str) -> list[CheckResult]:
    number = str_to_int(selected)
    if number is None:
        return [
            CheckResult(
                type="program_html.required_values", score=0.0, why=f"{short(selected)} is not an integer"
            )
        ]
    out = []
    for value in values:
        ok = any(satisfies(number, alt) for alt in value.split(OR_SEP))
        out.append(
            CheckResult(
                type="program_html.required_values",
                score=float(ok),
                why=f"{number} {'satisfies' if ok else 'fails'} {value!r}",
            )
        )
    return out


def miniwob(result: MiniwobResult | None) -> CheckResult:
    """A MiniWoB++ page's own reward, scored as BrowserGym does: success when the raw reward is above 0."""
    if result is None:
        return CheckResult(type="miniwob", score=None, why="the final state carries no MiniWoB++ result")
    if not result.started:
        return CheckResult(
            type="miniwob",
            score=0.0,
            why=f"{result.task}: the seeded episode is gone (page reloaded or left)",
        )
    if not result.done:
        return CheckResult(type="miniwob", score=0.0, why=f"{result.task}: the page did not end the episode")
    ok = result.raw_reward > 0
    reason = f" ({short(result.reason, 60)})" if result.reason else ""
    return CheckResult(
        type="miniwob",
        score=float(ok),
        why=f"{result.task}: page reward {result.raw_reward:g} {'>' if ok else '<='} 0{reason}",
    )


def product(scores: list[float | None]) -> float | None:
    """The product of check scores; None when any is unscorable."""
    total = 1.0
    for s in scores:
        if s is None:
            return None
        total *= s
    return total
