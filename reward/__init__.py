"""WebArena-Lite's reward checks (string / URL / program), exact to the reference semantics, without `eval`;
plus `miniwob`, a MiniWoB++ page's own reward carried in the final state (success = raw reward > 0).

Entry points: `RewardActor` (scores episodes, with its own browser for page checks), `build_plan` (route a task
config to its checks), `python -m reward score --batch CASES.jsonl [--live]` (batch scoring from the shell).
"""

from reward.actor import RewardActor
from reward.plan import Plan, PlanError, build_plan

__all__ = ["RewardActor", "Plan", "PlanError", "build_plan"]
