"""Pure checks against WebArena-Lite's reference semantics, including the annotation pitfalls."""

from __future__ import annotations

import asyncio

import pytest

from common.tasks import Task
from reward import checks as C
from reward.plan import build_plan
from reward.score_plan import combine, string_checks


def _task(reference_answers: dict, *, eval_types=("string_match",), **eval_extra) -> Task:
    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": 1,
            "start_url": "__SHOPPING__",
            "intent": "How many?",
            "eval": {"eval_types": list(eval_types), "reference_answers": reference_answers, **eval_extra},
        }
    )


def _string_score(reference_answers: dict, answer: str, string_note: str = "") -> float | None:
    plan = build_plan(_task(reference_answers, string_note=string_note))
    checks = asyncio.run(string_checks(plan.steps[0], answer, judge=None))
    return combine(checks)


@pytest.mark.parametrize(
    "raw,clean",
    [
        ('  "Yes" ', "yes"),
        ("'N/A'", "n/a"),
        ("\"'x'\"", "'x'"),
        ("'a\"", "'a\""),
        ("'", ""),
        ('"', ""),
        ("MiXeD", "mixed"),
        ("", ""),
    ],
)
def test_clean_answer_strips_one_pair_of_quotes_and_lowercases(raw, clean):
    assert C.clean_answer(raw) == clean


def test_exact_match_cleans_both_sides_and_the_answer_twice():
    assert C.exact_match("N/A", " 'n/a' ") == 1.0
    # The string evaluator cleans the answer up front and again inside exact_match: two quote pairs go.
    assert _string_score({"exact_match": "N/A"}, "\"'N/A'\"") == 1.0
    assert _string_score({"exact_match": "Yes"}, "Yes, it is") == 0.0
    assert _string_score({"exact_match": "Canceled"}, "canceled") == 1.0


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("0", 1.0),
        ("10", 0.0),
        ("There are 0 orders.", 1.0),
        ("2010", 0.0),
        ("0.5", 0.0),
        ("(0)", 1.0),
        ("The count is 0.", 1.0),
        ("answer: 0", 1.0),
        ("0,1", 0.0),
        ('"0"', 1.0),
        ("zero", 0.0),
    ],
)
def test_single_character_reference_is_matched_as_a_word(answer, expected):
    assert _string_score({"must_include": ["0"]}, answer) == expected


def test_tokenizing_applies_only_to_a_single_one_character_reference():
    # Two references: plain substring, so "1" is found inside "10" (WebArena's behaviour, kept).
    assert _string_score({"must_include": ["1", "apples"]}, "10 apples") == 1.0
    # One reference of two characters: substring, "25" inside "125".
    assert _string_score({"must_include": ["25"]}, "125") == 1.0
    # A bare string reference (task 81's annotation) reads as a one-entry list.
    assert _string_score({"must_include": "yjlou"}, "The user is YJLOU") == 1.0


def test_must_include_currency_and_case_pitfalls():
    assert _string_score({"must_include": ["39.64"]}, "$39.64") == 1.0
    assert _string_score({"must_include": ["3053.97"]}, "$3,053.97") == 0.0  # the reference has no comma
    assert _string_score({"must_include": ["$1,234.00"]}, "It cost $1,234.00 in total") == 1.0
    assert _string_score({"must_include": ["Hollister"]}, "hollister") == 1.0
    assert _string_score({"must_include": ["Lo", "Chen", "Chu"]}, "lo, chen and chu") == 1.0
    assert _string_score({"must_include": ["Lo", "Chen", "Chu"]}, "lo and chen") == 0.0


def test_or_in_a_string_must_include_is_literal_as_in_webarena():
    # WebArena's string evaluator does not split " |OR| " (only program_html does): task 94's pitfall.
    assert _string_score({"must_include": ["65 |OR| 3"]}, "65") == 0.0
    assert _string_score({"must_include": ["65 |OR| 3"]}, "65 |or| 3") == 1.0


def test_fuzzy_without_judge_is_unscorable_but_an_empty_answer_is_decided():
    assert _string_score({"fuzzy_match": ["May 23 2023"]}, "23/05/2023") is None
    assert _string_score({"fuzzy_match": ["May 23 2023"]}, "") == 0.0
    # A deterministic 0 decides the product even next to an unscorable check.
    assert _string_score({"must_include": ["Acadia"], "fuzzy_match": ["10h 33min"]}, "Zion, 10 hours") == 0.0
    assert (
        _string_score({"must_include": ["Acadia"], "fuzzy_match": ["10h 33min"]}, "Acadia, 10 hours") is None
    )


def test_na_fuzzy_match_accepts_exact_na_and_otherwise_needs_the_ua_judge():
    assert _string_score({"fuzzy_match": "N/A"}, "N/A", "cannot add order history") == 1.0
    assert _string_score({"fuzzy_match": "N/A"}, "It is impossible", "cannot add order history") is None


def test_url_gold_in_pred_trailing_slash_query_order_and_or():
    ref = "http://h:7770/catalogsearch/result/?q=switch+accessories"
    assert C.url_match("http://h:7770/catalogsearch/result/?q=switch+accessories", ref).score == 1.0
    assert C.url_match("http://h:7770/catalogsearch/result/index/?q=switch+accessories&p=2", ref).score == 1.0
    assert C.url_match("http://h:7770/catalogsearch/result/?q=switch", ref).score == 0.0
    ref2 = "http://h/shoes.html?product_list_order=price&product_list_dir=desc"
    assert (
        C.url_match("http://h/shoes.html?product_list_dir=desc&product_list_order=price", ref2).score == 1.0
    )
    assert C.url_match("http://h/shoes.html?product_list_dir=asc&product_list_order=price", ref2).score == 0.0
    assert C.url_match("http://h/f/nyc/", "http://h/f/nyc").score == 1.0
    assert C.url_match("http://h/f/nyc", "http://h/f/nyc/").score == 1.0
    # The reference's path is not stripped after parsing, so a slash before its query must be present.
    assert C.url_match("http://h/result?q=a", "http://h/result/?q=a").score == 0.0
    alts = "http://h/f/machinelearning |OR| http://h/f/deeplearning"
    assert C.url_match("http://h/f/deeplearning/12/post", alts).score == 1.0
    assert C.url_match("http://h/f/technology", alts).score == 0.0
    # GOLD in PRED on host+path is a substring test: a longer path still matches (WebArena's rule).
    assert C.url_match("http://h/f/nyc-more", "http://h/f/nyc").score == 1.0


def test_url_query_values_are_pooled_across_alternatives():
    ref = "http://h/a?x=1 |OR| http://h/b?x=2"
    assert C.url_match("http://h/a?x=2", ref).score == 1.0  # pooled values, as WebArena computes them
    assert C.url_match("http://h/a", ref).score == 0.0


def test_url_exact_mode_and_unknown_rule():
    assert C.url_match("http://h/a/", "http://h/a", mode="exact").score == 1.0
    assert C.url_match("http://h/a/b", "http://h/a", mode="exact").score == 0.0
    bad = C.url_match("http://h/a", "http://h/a", rule="SOMETHING")
    assert bad.score is None and "url_note" in bad.why


def test_required_values_and_must_exclude():
    assert [c.score for c in C.contents_values(["> 3", "<= 10"], "1,0")] == [1.0, 1.0]  # "1,0" reads as 10
    assert [c.score for c in C.contents_values(["== 2 |OR| == 3"], " 3 ")] == [1.0]
    assert C.contents_values(["> 3"], "three")[0].score == 0.0
    assert C.contents_exclude(["0"], "10 items")[0].score == 1.0  # one token: looked up as a word
    assert C.contents_exclude(["out of stock"], "Item is OUT OF STOCK")[0].score == 0.0


def test_program_html_must_include_splits_or_and_never_tokenizes():
    checks = C.contents_include(["Canceled |OR| Cancelled", "0"], "Status: Cancelled since 2010")
    assert [c.score for c in checks] == [1.0, 1.0]


def test_every_check_has_a_one_line_reason():
    checks = C.contents_include(["a\nb"], "x" * 500) + [C.contents_exact("q", "multi\nline")]
    assert all(c.why and "\n" not in c.why and len(c.why) < 240 for c in checks)
