"""Four BrowserActors under Ray, in parallel, keep separate cookies and sandboxes."""

from __future__ import annotations

import pytest
from conftest import fast_cfg, make_task

from common import records as R


@pytest.mark.slow
def test_four_ray_actors_keep_separate_cookies(ray_session, server):
    from browser_actors.actor import BrowserActor

    ray = ray_session
    Remote = ray.remote(num_cpus=0, resources={"browser": 1})(BrowserActor)
    actors = [Remote.options(name=f"browser-test-{i}").remote(fast_cfg()) for i in range(4)]
    try:
        # each episode sets its own page cookie and gets its own sandbox token, all at once
        resets = [
            a.reset.remote(make_task(server.url(f"cookie.html?who=actor{i}")), sandbox=f"token-{i}")
            for i, a in enumerate(actors)
        ]
        first = ray.get(resets, timeout=180)
        assert [f"who=actor{i}" in o.text for i, o in enumerate(first)] == [True] * 4
        echoes = ray.get([a.step.remote(R.Goto(url=server.url("echo-cookies"))) for a in actors], timeout=120)
        for i, obs in enumerate(echoes):
            assert f"who=actor{i}" in obs.text and f"wa_sandbox=token-{i}" in obs.text, obs.text
            others = [j for j in range(4) if j != i]
            assert not any(f"actor{j}" in obs.text or f"token-{j}" in obs.text for j in others), obs.text
        states = ray.get([a.final_state.remote() for a in actors], timeout=60)
        for i, fs in enumerate(states):
            assert sorted((c["name"], c["value"]) for c in fs.storage_state["cookies"]) == [
                ("wa_sandbox", f"token-{i}"),
                ("who", f"actor{i}"),
            ]
    finally:
        ray.get([a.close.remote() for a in actors], timeout=60)
        for a in actors:
            ray.kill(a)
