"""Text is cut on character boundaries: an emoji across a cap no longer breaks the episode (issue 12, item 11).

The fault, on a real page in real Chromium: characters of two UTF-16 units (an emoji), a flag of two code points
and a lone surrogate half, placed exactly across the observation's caps. Before the fix the cut left half an emoji,
and writing the trajectory failed with "surrogates not allowed".
"""

from __future__ import annotations

from conftest import make_task

from common.records import Observation, Trajectory, Turn
from common.text import boundary, cut, scrub


def test_an_emoji_across_every_cap_gives_an_observation_that_encodes(actor, server):
    obs = actor.reset(make_task(server.url("emoji_cut.html")))
    text = obs.text
    assert "a" * 399 + "…" in text and "a" * 399 + "😀" not in text  # cut before the emoji, not inside it
    assert "b" * 399 + "…" in text and "c" * 79 + "…" in text
    assert "d" * 398 + "🇩🇪…" in text or "d" * 398 + "…" in text  # the flag stays whole or goes
    assert "lone \ufffd half" in text  # the page's own half surrogate is replaced
    assert obs.title == "Emoji at the cap 😀"
    traj = Trajectory(task_id="emoji", turns=[Turn(index=0, observation=obs)])
    back = Trajectory.model_validate_json(traj.model_dump_json())  # the step that used to raise
    assert back.turns[0].observation.text == text
    text.encode("utf-8")


def test_cut_never_splits_a_character():
    assert cut("abc", 3) == "abc" and cut("abcd", 3, "…") == "abc…"
    assert cut("ab👍🏽x", 3) == "ab" and cut("ab👍🏽x", 4) == "ab👍🏽"  # skin tone stays with its emoji
    assert cut("ab🇩🇪🇫🇷", 5) == "ab🇩🇪" and cut("ab🇩🇪🇫🇷", 3) == "ab"  # flags are pairs
    assert cut("e\u0301tat", 1) == "" and cut("e\u0301tat", 2) == "e\u0301"  # combining accent
    family = "👨\u200d👩\u200d👧"
    assert cut(family + "!", 4) == "" and cut(family + "!", 5) == family
    assert cut("a\r\nb", 2) == "a" and boundary("abc", 10) == 3 and boundary("abc", -1) == 0


def test_scrub_repairs_lone_surrogates_only():
    assert scrub("ok 😀") == "ok 😀"
    assert scrub("x\ud83dy\udc00") == "x\ufffdy\ufffd"
    Observation(text=scrub("\ud83d")).model_dump_json()
