"""MiniWoB++ as a second environment: the `miniwob` package's task pages, served on 127.0.0.1, played through the
same browser actors, rollout workers, reward actor and learner as the bundled sites.

    python -m sites.miniwob serve                              # the pages, until Ctrl-C
    python -m sites.miniwob tasks --split train --out t.json   # task configs (WebArena JSON), one per (task, seed)
    python -m sites.miniwob experts --seeds 20                 # success rate of each scripted expert
    python -m learner.train --config configs/miniwob_cpu.yaml  # BC then M-GRPO (make demo-miniwob)

Modules: `server` (threaded static server), `tasks` (the documented subset, excluded tasks with reasons, seed
splits, configs, explicit held-out seeds), `instructions` (each seed's instruction read from the pages), `experts`
(+ `expert_kit`, `solvers_*`: scripted experts), `play` (expert episodes for tests and the success-rate report).
The in-page episode protocol (seed, start, reward) is `browser_actors/miniwob.py`; the reward check is
`reward.checks.miniwob` (eval type `miniwob`). With `environment.kind: miniwob` the run stack loads the split
(`environment.miniwob_tasks` picks tasks) and starts no server: every browser actor serves the pages itself on
127.0.0.1 of its own machine (`BrowserActor(local_sites={"miniwob": MiniwobServer})`) and fills `__MINIWOB__`.
"""
