"""Peer driver, run inside .venv-peers: scores finished episodes with WebArena-Lite's reference evaluator
(`browsergym.webarenalite.evaluators.evaluator_router`, 0.14.3) and prints scores and times as JSON. Imports
nothing of this project.

    .venv-peers/bin/python bench/peers/wa_evaluate.py < spec.json > result.json

spec: {"chromium", "site_env" ({"SHOPPING": url, ...}: WebArena's env_config reads these), "items": [{"config"
(a WebArena task config, placeholders filled), "url" (the episode's last page), "answer", "storage_state",
"cookies"}]}. For each item the episode's end is restored first, untimed: a fresh context with its storage state
and sandbox cookie, a page on its last URL (the reference scores the live page an episode ends on). Then the
evaluator call alone is timed, as the reference runs it: program_html checks navigate and sleep 3 s.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time


def main() -> None:
    spec = json.load(sys.stdin)
    os.environ.update(spec["site_env"])  # before webarena's env_config is imported
    from browsergym.webarenalite.evaluators import evaluator_router
    from playwright.sync_api import sync_playwright
    from webarena.browser_env import create_stop_action

    out = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = pw.chromium.launch(executable_path=spec["chromium"], args=["--no-sandbox", "--disable-gpu"])
        for i, item in enumerate(spec["items"]):
            path = os.path.join(tmp, f"{i}.json")
            with open(path, "w") as f:
                json.dump(item["config"], f)
            context = browser.new_context(storage_state=item["storage_state"] or None)
            context.add_cookies(item["cookies"])
            page = context.new_page()
            page.goto(item["url"])
            page.wait_for_load_state("load")
            trajectory = [{"observation": {}, "info": {}}, create_stop_action(item["answer"] or "")]
            t0 = time.perf_counter()
            try:
                score, error = float(evaluator_router(path)(trajectory, path, page)), None
            except Exception as e:  # noqa: BLE001 - a reference failure is data for the caller
                score, error = None, f"{type(e).__name__}: {e}"
            out.append({"score": score, "seconds": time.perf_counter() - t0, "error": error})
            context.close()
        browser.close()
    json.dump({"results": out}, sys.stdout)


if __name__ == "__main__":
    main()
