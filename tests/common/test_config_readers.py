"""Every config field has a reader: a field that nothing reads is a knob that does nothing (issue: no dead config).

The check is textual and deliberately simple: each field's name must appear as an attribute access (`.name`)
somewhere in the project's code outside its own definition line. A field read only through a string (getattr,
model_dump) would fail here; give it a real reader instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from common.config import TrainConfig

REPO = Path(__file__).resolve().parents[2]
SKIP = {".venv", ".venv-peers", "tests", "node_modules", ".git"}


def _code() -> str:
    parts = []
    for p in REPO.rglob("*.py"):
        if SKIP.intersection(p.relative_to(REPO).parts):
            continue
        text = p.read_text(errors="ignore")
        # a field's own definition ("name: type = Field(") is not a reader
        parts.append(re.sub(r"(?m)^\s+\w+: [^\n]*= Field\(", "", text))
    return "\n".join(parts)


def _fields(model: type[BaseModel], prefix: str = ""):
    for name, f in model.model_fields.items():
        ann = f.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from _fields(ann, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", name


def test_every_config_field_is_read_somewhere():
    code = _code()
    unread = [full for full, name in _fields(TrainConfig) if not re.search(rf"\.{re.escape(name)}\b", code)]
    assert not unread, f"config fields that nothing reads: {unread}"


def test_the_check_finds_a_field_nobody_reads():
    class Probe(BaseModel):
        knob_that_nothing_reads_at_all: int = 0

    code = _code()
    assert [f for f, n in _fields(Probe) if not re.search(rf"\.{n}\b", code)] == [
        "knob_that_nothing_reads_at_all"
    ]
