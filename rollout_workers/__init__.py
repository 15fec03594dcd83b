"""Running episodes: groups of G episodes of one task over G browser actors, the inference actors, evaluations.

episode.py        run_episode, the one episode loop (prompt -> policy -> parsed action -> browser step);
                  EpisodeSettings, what every episode plays by
policy.py         the Policy protocol: ModelPolicy (the engines) and ExpertPolicy (the scripted expert)
group.py          RolloutWorker (groups run, retried whole, scored; completion order) and BrowserPool
handles.py        the actor contracts: BrowserHandle, RewardHandle, EngineHandle (typed calls, one time-out wrapper)
router.py         EngineRouter: an episode's turns to one engine; engines out of service and their healing
inference.py      InferenceActor: one vLLM async engine, token ids in, ids + logprobs out, weights reloaded in place
vllm_reload.py    the in-place weight reload of an engine, fitted to what a push holds
weight_format.py  the wire format of a weight push (shared by the pusher and the engine)
sandbox.py        sandbox tokens of the bundled sites over HTTP (SandboxClient; the Sandboxes protocol)
stack.py          Stack: brings up sites, engines + router, browsers, reward actors and the RolloutWorker on Ray
preflight.py      a run's inputs checked before anything starts
demos.py          behaviour-cloning demonstrations: the scripted expert through the same episode loop
evaluate.py       `python -m rollout_workers.evaluate`: success on a split, turn sweeps, explicit seeds
guessing.py       what a constant answer scores, and successes that never read the page
paired.py         paired comparison of two evaluations of the same episodes
metrics.py        Ray metrics (Prometheus) and the RolloutSummary of a batch of groups
play.py           `python -m rollout_workers.play`: watch a checkpoint play one episode
run_files.py      a run folder's trajectory files, read back tolerantly
viewer.py         viewer.html of a run (with viewer.html and viewer.js)
"""
