"""The LLM judge against a tiny local OpenAI-compatible server (a stand-in for the external service), and caching."""

from __future__ import annotations

import asyncio
import json
import re
import threading

import pytest

from common.records import FinalState
from common.tasks import Task
from reward.judge import OpenAIJudge, fuzzy_verdict, make_judge, ua_verdict


def quoted_answer(user: str, label: str) -> str | None:
    """The agent's answer, which the judge prompt quotes as a JSON string on the line `label (...): "..."`."""
    m = re.search(rf"^{label} \(.*?\): (\".*\")$", user, re.M)
    return json.loads(m.group(1)) if m else None


class ChatServer:
    """Answers POST /v1/chat/completions with a scripted reply chosen from the user message; counts calls."""

    def __init__(self) -> None:
        from flask import Flask, jsonify, request
        from werkzeug.serving import make_server

        self.calls: list[dict] = []
        app = Flask("fake-openai")

        @app.post("/v1/chat/completions")
        def chat():
            body = request.get_json()
            self.calls.append(body)
            user = body["messages"][-1]["content"]
            if quoted_answer(user, "student answer") == "boom":
                return jsonify(error="overloaded"), 503
            if "unachievable" in user:
                reported = quoted_answer(user, "reported unachievable reason")
                reply = "same" if "no such feature" in reported else "different"
            elif quoted_answer(user, "student answer") == "mumble":
                reply = "I cannot tell."
            else:
                reply = "correct" if "may 23" in user.lower() and "23 may" in user.lower() else "incorrect"
            return jsonify(
                choices=[
                    {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
                ]
            )

        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def chat():
    srv = ChatServer()
    yield srv
    srv.server.shutdown()


def _task(reference_answers, string_note=""):
    return Task.model_validate(
        {
            "sites": ["shopping"],
            "task_id": 3,
            "start_url": "__SHOPPING__",
            "intent": "When was it?",
            "eval": {
                "eval_types": ["string_match"],
                "reference_answers": reference_answers,
                "string_note": string_note,
            },
        }
    )


def test_verdict_parsing_follows_webarena():
    assert fuzzy_verdict("Correct.") == 1.0
    assert fuzzy_verdict("The answer is partially correct") == 0.0
    assert fuzzy_verdict("incorrect") == 0.0
    assert fuzzy_verdict("no idea") is None
    assert ua_verdict("SAME") == 1.0 and ua_verdict("different") == 0.0 and ua_verdict("?") is None


def test_fuzzy_and_ua_through_the_reward_actor(chat, tmp_path):
    from reward.actor import RewardActor

    judge = OpenAIJudge(chat.url, "judge-model", cache_path=tmp_path / "verdicts.json", backoff_s=0.05)
    with RewardActor(judge=judge) as actor:
        assert (
            actor.score(_task({"fuzzy_match": ["May 23 2023"]}), FinalState(answer="23 May 2023")).score
            == 1.0
        )
        assert actor.score(_task({"fuzzy_match": ["May 23 2023"]}), FinalState(answer="June 1")).score == 0.0
        na = _task({"fuzzy_match": "N/A"}, string_note="there is no such feature")
        assert actor.score(na, FinalState(answer="N/A")).score == 1.0  # exact N/A: no judge call
        r = actor.score(na, FinalState(answer="The site has no such feature"))
        assert r.score == 1.0 and r.checks[-1].type == "string_match.ua_match"
        assert actor.score(na, FinalState(answer="I gave up")).score == 0.0
        unclear = actor.score(_task({"fuzzy_match": ["May 23 2023"]}), FinalState(answer="mumble"))
        assert unclear.score is None and "no verdict" in unclear.checks[0].why
        down = actor.score(_task({"fuzzy_match": ["May 23 2023"]}), FinalState(answer="boom"))
        assert down.score is None and "call failed" in down.checks[0].why
    assert chat.calls[0]["temperature"] == 0 and chat.calls[0]["model"] == "judge-model"
    assert judge.stats["unscorable"] == 2


def test_verdicts_are_cached_in_memory_and_on_disk(chat, tmp_path):
    path = tmp_path / "cache.json"
    judge = OpenAIJudge(chat.url, "m", cache_path=path)
    before = len(chat.calls)
    for _ in range(3):
        assert asyncio.run(judge.fuzzy("23 may 2023", "May 23 2023", "When?"))[0] == 1.0
    assert len(chat.calls) == before + 1 and judge.stats["cache_hits"] == 2
    again = OpenAIJudge(chat.url, "m", cache_path=path)  # a new process reads the file
    score, why = asyncio.run(again.fuzzy("23 may 2023", "May 23 2023", "When?"))
    assert score == 1.0 and "cached" in why and len(chat.calls) == before + 1
    other_model = OpenAIJudge(chat.url, "other", cache_path=path)
    asyncio.run(other_model.fuzzy("23 may 2023", "May 23 2023", "When?"))
    assert len(chat.calls) == before + 2  # the cache key includes the judge model


def test_unscorable_verdicts_are_not_cached(chat):
    judge = OpenAIJudge(chat.url, "m")
    before = len(chat.calls)
    for _ in range(2):
        assert asyncio.run(judge.fuzzy("mumble", "x", "q"))[0] is None
    assert len(chat.calls) == before + 2


def test_make_judge_from_config_values():
    assert make_judge("none") is None
    assert isinstance(make_judge("openai", "http://127.0.0.1:1/v1", "m"), OpenAIJudge)
    with pytest.raises(ValueError, match="judge_url"):
        make_judge("openai")
    with pytest.raises(ValueError, match="unknown judge"):
        make_judge("magic")
