"""Records every request an inference engine answers, for bench/bench_rl_throughput.py; does nothing elsewhere.

The bench puts this folder on PYTHONPATH of a driver run with WEBAGENT_ENGINE_PROBE=<file>. Python imports
`sitecustomize` at start in every process of the run (the driver, Ray's workers: they inherit the environment),
and here, only when that variable is set, a meta-path hook waits for `rollout_workers.inference` to be imported
and wraps `InferenceActor._result` (the one place every finished request passes) to append one JSON line per
request: its end time, seconds, prompt tokens, prompt tokens served from the prefix cache, generated tokens,
weight version and the file the engine's code came from. Why a hook and not a log line in the driver: the same
probe measures an older commit, whose code cannot be changed, exactly as it measures this tree.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import time

_OUT = os.environ.get("WEBAGENT_ENGINE_PROBE")
_TARGET = "rollout_workers.inference"


def _patch(module) -> None:
    cls = module.InferenceActor
    original = cls._result

    def _result(self, *args, **kwargs):
        res = original(self, *args, **kwargs)
        record = {
            "end": time.time(),
            "seconds": res.seconds,
            "prompt": res.prompt_len,
            "cached": res.cached_prompt_tokens,
            "generated": len(res.completion_ids),
            "version": res.weight_version,
            "engine": res.engine,
            "code": module.__file__,
        }
        with open(_OUT, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        return res

    cls._result = _result


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        sys.meta_path.remove(self)  # the real finders find the module; this hook is done after one import
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if _OUT:
    sys.meta_path.insert(0, _Hook())
