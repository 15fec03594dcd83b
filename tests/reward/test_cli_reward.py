"""`python -m reward score --batch`: one output line per input line, in order; bad lines become error lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cfg(eval_spec: dict, task_id: int = 1) -> dict:
    return {
        "sites": ["shopping"],
        "task_id": task_id,
        "start_url": "__SHOPPING__",
        "intent": "q",
        "eval": eval_spec,
    }


def _cases(site: str) -> list[str]:
    html = {
        "eval_types": ["program_html"],
        "program_html": [
            {
                "url": "__SHOPPING__/plain",
                "locator": 'document.querySelector("#status").outerText',
                "required_contents": {"exact_match": "Canceled"},
            }
        ],
    }
    return [
        json.dumps(
            {
                "config": _cfg(
                    {"eval_types": ["string_match"], "reference_answers": {"must_include": ["0"]}}
                ),
                "answer": "There are 0 orders",
                "final_url": "",
            }
        ),
        "{not json",
        json.dumps({"config": _cfg(html, 2), "answer": "", "final_url": f"{site}/x"}),
        json.dumps(
            {
                "config": _cfg({"eval_types": ["url_match"], "reference_url": "__SHOPPING__/plain/"}, 3),
                "answer": "",
                "final_url": f"{site}/plain?x=1",
            }
        ),
        json.dumps({"config": {"task_id": 9}, "answer": "x"}),
        json.dumps(
            {
                "config": _cfg(
                    {"eval_types": ["string_match"], "reference_answers": {"must_include": ["0"]}}
                ),
                "answer": "10 orders",
                "final_url": "",
            }
        ),
    ]


def _run(tmp_path: Path, lines: list[str], *extra: str) -> list[dict]:
    batch = tmp_path / "cases.jsonl"
    batch.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "reward", "score", "--batch", str(batch), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_batch_without_live(tmp_path, fixture_site):
    out = _run(tmp_path, _cases(fixture_site), "--urls", f"shopping={fixture_site}")
    assert len(out) == 6
    assert out[0]["score"] == 1.0 and out[0]["checks"][0]["type"] == "string_match.must_include"
    assert out[1]["score"] is None and "line 2" in out[1]["error"]
    assert out[2]["score"] is None and out[2]["checks"][0]["why"] == "needs a live page (--live)"
    assert out[3]["score"] == 1.0
    assert out[4]["score"] is None and "line 5" in out[4]["error"]
    assert out[5]["score"] == 0.0
    assert all(set(c) == {"type", "score", "why"} for o in out for c in o["checks"])


def test_batch_live_checks_pages(tmp_path, fixture_site):
    out = _run(tmp_path, _cases(fixture_site), "--live", "--urls", f"shopping={fixture_site}")
    assert [o["score"] for o in out] == [1.0, None, 1.0, 1.0, None, 0.0]
