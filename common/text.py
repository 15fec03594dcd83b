"""Cutting text to a length without breaking a character, and repairing text that arrives broken.

Every cap on page, model or error text goes through `cut`, which counts code points and never ends inside a
user-perceived character: not between the two halves of a surrogate pair (impossible for a Python str, but the
same rule is applied in the browser, browser_actors/dom.js), not before a combining mark, a variation selector,
an emoji skin-tone modifier or a tag character, not right after a zero-width joiner, and not between the two
regional indicators of a flag. `scrub` replaces lone surrogates (a JavaScript string cut at a UTF-16 boundary,
or built by a script) with U+FFFD, so the text can be encoded as UTF-8 (JSONL, tokenizers, HTTP).
"""

from __future__ import annotations

import unicodedata

ZWJ = "\u200d"


def _extends(ch: str) -> bool:
    """Whether `ch` belongs to the character before it (so a cut must not fall just before it)."""
    o = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ch == ZWJ
        or 0xFE00 <= o <= 0xFE0F  # variation selectors (text / emoji presentation)
        or 0x1F3FB <= o <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= o <= 0xE007F  # tag characters (subdivision flags)
        or 0xE0100 <= o <= 0xE01EF  # variation selectors supplement
    )


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def boundary(text: str, limit: int) -> int:
    """The largest index <= limit at which `text` may be cut (0 when the first character is longer than limit)."""
    if limit >= len(text):
        return len(text)
    i = max(0, limit)
    while 0 < i and (_extends(text[i]) or text[i - 1] == ZWJ or text[i - 1 : i + 1] == "\r\n"):
        i -= 1
    if 0 < i and _regional(text[i]):
        run = 0  # regional indicators pair up from the start of their run: an odd run before i splits a flag
        while run < i and _regional(text[i - 1 - run]):
            run += 1
        i -= run % 2
    return i


def cut(text: str, limit: int, mark: str = "") -> str:
    """`text` if it has at most `limit` characters, else its longest prefix that ends on a character boundary
    and fits in `limit`, followed by `mark` (e.g. "…"; not counted in `limit`)."""
    if len(text) <= limit:
        return text
    return text[: boundary(text, limit)] + mark


def scrub(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a no-op, and cheap, for valid text)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
