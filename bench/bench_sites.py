"""Sandbox creation cost vs re-seeding a database, and warm vs cold server start (ratios from one run).

    .venv/bin/python bench/bench_sites.py [--reps 50]

Baselines measured in the same run: re-seeding the shop database from scratch (what a reset without sandboxes
would need per rollout) and a cold start that seeds. Prints one line per measure and the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import Figure, save  # noqa: E402


def _median_s(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    import httpx

    from common.sites import SANDBOX_COOKIE
    from sites.server import SiteServer
    from sites.shop.seed import seed

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_sites_"))
    n = [0]

    def reseed() -> None:
        n[0] += 1
        seed(tmp / f"reseed{n[0]}.sqlite")

    t_seed = _median_s(reseed, 3)

    t0 = time.perf_counter()
    cold = SiteServer(base_port=0, data_dir=tmp / "data", sites=["shopping", "shopping_admin"])
    cold.start()
    t_cold = time.perf_counter() - t0
    cold.stop()
    t0 = time.perf_counter()
    srv = SiteServer(
        base_port=0, data_dir=tmp / "data", sites=["shopping", "shopping_admin"], max_sandboxes=10 * args.reps
    )
    srv.start()
    t_warm = time.perf_counter() - t0
    try:
        store = srv.store
        t_sandbox = _median_s(lambda: store.db_path(store.create(), "shop"), args.reps)
        url = srv.urls["shopping"]
        with httpx.Client(headers={"X-WA-Sandbox-Key": srv.sandbox_key}) as client:

            def http_sandbox() -> None:
                token = client.post(url + "/__sandbox__").json()["token"]
                # the first use of a sandbox copies the seeded database
                client.get(url + "/", cookies={SANDBOX_COOKIE: token}).raise_for_status()

            t_http = _median_s(http_sandbox, args.reps)
            t_page = _median_s(lambda: client.get(url + "/").raise_for_status(), args.reps)
    finally:
        srv.stop()

    print(f"re-seed shop DB (baseline)      {t_seed * 1e3:9.2f} ms")
    print(
        f"sandbox create + copy (Python)  {t_sandbox * 1e3:9.2f} ms   {t_seed / t_sandbox:8.1f}x faster than re-seed"
    )
    print(
        f"sandbox over HTTP + first page  {t_http * 1e3:9.2f} ms   {t_seed / t_http:8.1f}x faster than re-seed"
    )
    print(f"home page, default (reference)  {t_page * 1e3:9.2f} ms")
    print(f"server start, cold (seeds)      {t_cold:9.2f} s")
    print(f"server start, warm (cached)     {t_warm:9.2f} s    {t_cold / t_warm:8.1f}x faster than cold")
    save(
        "sites",
        [
            Figure(
                "sandbox create + copy / re-seed the shop DB",
                f"{t_sandbox * 1e3:.1f} ms",
                f"{t_seed * 1e3:.0f} ms",
                t_sandbox / t_seed,
            ),
            Figure(
                "sandbox over HTTP + first page / re-seed",
                f"{t_http * 1e3:.1f} ms",
                f"{t_seed * 1e3:.0f} ms",
                t_http / t_seed,
            ),
            Figure(
                "server start, warm (cached seeds) / cold (seeds)",
                f"{t_warm:.2f} s",
                f"{t_cold:.2f} s",
                t_warm / t_cold,
            ),
        ],
        {"reseed_s": t_seed, "sandbox_s": t_sandbox, "http_sandbox_s": t_http, "page_s": t_page},
    )


if __name__ == "__main__":
    main()
