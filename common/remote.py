"""Call a part the same way whether it is a Ray actor handle or a plain local object.

Every actor is a plain class (Ray wraps it at launch), so callers must drive both: a Ray handle in a training run,
and a local object in tests and one-process tools. Local synchronous objects get a private one-thread executor,
because Playwright's sync API must always be called from the thread that created it. It lives in `common/` because
every layer that drives actors builds on it. Callers do not name actor methods here themselves: the typed handles
(`rollout_workers/handles.py` for the browser, reward and inference actors, `learner/learner_handle.py` for the
learner) are the only callers, so a reader follows a call to a method with a signature (tests/test_layering.py).
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_EXECUTORS: dict[int, ThreadPoolExecutor] = {}


def is_ray_actor(obj: Any) -> bool:
    try:
        from ray.actor import ActorHandle
    except ImportError:
        return False
    return isinstance(obj, ActorHandle)


def _executor(obj: Any) -> ThreadPoolExecutor:
    key = id(obj)
    if key not in _EXECUTORS:
        _EXECUTORS[key] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=type(obj).__name__)
    return _EXECUTORS[key]


async def call(obj: Any, method: str, *args: Any, timeout: float | None = None, **kwargs: Any) -> Any:
    """`await obj.method(*args)` for a Ray handle, an async method, or a sync method (on the object's own thread)."""
    if is_ray_actor(obj):
        fut = getattr(obj, method).remote(*args, **kwargs)
    else:
        fn = getattr(obj, method)
        if inspect.iscoroutinefunction(fn):
            fut = fn(*args, **kwargs)
        else:
            loop = asyncio.get_running_loop()
            fut = loop.run_in_executor(_executor(obj), lambda: fn(*args, **kwargs))
    if timeout is None:
        return await fut
    return await asyncio.wait_for(fut, timeout)


def release(obj: Any) -> None:
    """Forget the thread of a local object that was closed."""
    ex = _EXECUTORS.pop(id(obj), None)
    if ex is not None:
        ex.shutdown(wait=False)
