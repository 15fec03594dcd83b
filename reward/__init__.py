"""WebArena-Lite's reward checks (string / URL / program), exact to the reference semantics, without `eval`;
plus `miniwob`, a MiniWoB++ page's own reward carried in the final state (success = raw reward > 0).

Entry points: `RewardActor` (scores episodes, with its own browser for page checks), `build_plan` (route a task
config to its checks), `python -m reward score --batch CASES.jsonl [--live]` (batch scoring from the shell).

    actor.py       RewardActor: ascore(task, final_state) -> Reward
    plan.py        a task config routed to its evaluator plan, validated before any page opens
    score_plan.py  run_plan: a plan's checks on one finished episode, each with its one-line reason
    checks.py      the deterministic checks as pure functions (exact_match, must_include, url_match, ...)
    funcs.py       the fixed registry of `func:` helpers, parsed with `ast`
    judge.py       the pluggable LLM judge behind fuzzy_match and ua_match
    tokenize.py    NLTK-compatible word tokens without NLTK
    __main__.py    `python -m reward score`
"""

from reward.actor import RewardActor
from reward.plan import Plan, PlanError, build_plan

__all__ = ["RewardActor", "Plan", "PlanError", "build_plan"]
