"""What every bench hands to `bench/run_all.py`: figures as rows (figure, ours, baseline, ratio, target, met?),
printed as they are made and written to `bench/results/<name>.json` (git-ignored).

    from report import Figure, save
    save("browser_peer", [Figure("step time vs BrowserGym", "120 ms", "480 ms", 0.25, "<= 0.5")], extra={...})

A target is "<= x" or ">= x" on the ratio (ours / baseline unless the figure says otherwise); `met` is computed
here, in one place, so a bench cannot claim a target its numbers miss.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class Figure:
    figure: str  # what is measured, and the unit of the ratio ("step time, ours / BrowserGym defaults")
    ours: str  # our measured value, with its unit
    baseline: str  # the peer's / baseline's value measured in the same run
    ratio: float | None  # ours / baseline, or the quantity the target is stated on
    target: str = ""  # "<= 0.5", ">= 5", "== 1" or "" (reported, no target)
    met: bool | None = field(default=None)

    def __post_init__(self) -> None:
        if self.met is None:
            self.met = meets(self.ratio, self.target)


def meets(ratio: float | None, target: str) -> bool | None:
    """Whether `ratio` meets `target` ("<= 0.5" | ">= 5" | "== 1"); None when there is no target or no ratio."""
    if not target or ratio is None:
        return None
    op, _, value = target.partition(" ")
    bound = float(value)
    if op == "<=":
        return ratio <= bound
    if op == ">=":
        return ratio >= bound
    if op == "==":
        return abs(ratio - bound) < 1e-9
    raise ValueError(f"bad target {target!r}: expected '<= x', '>= x' or '== x'")


def save(name: str, figures: list[Figure], extra: dict | None = None) -> Path:
    """Print the figures and write them (with `extra`: raw timings, settings) to bench/results/<name>.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    for f in figures:
        verdict = "" if f.met is None else ("  [met]" if f.met else "  [MISSED]")
        ratio = "n/a" if f.ratio is None else f"{f.ratio:.3g}"
        print(
            f"{f.figure}: ours {f.ours} | baseline {f.baseline} | ratio {ratio} | target {f.target or '-'}{verdict}"
        )
    out = RESULTS / f"{name}.json"
    doc = {
        "bench": name,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "figures": [asdict(f) for f in figures],
        **(extra or {}),
    }
    out.write_text(json.dumps(doc, indent=1, default=str))
    print(f"wrote {out}")
    return out


def machine() -> str:
    import os

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{platform.machine()} {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, load {load:.1f}"
