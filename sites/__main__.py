"""Command line of the bundled sites.

    python -m sites serve [--host 127.0.0.1] [--base-port 7770] [--data-dir DIR] [--sites shopping,reddit]

`serve` starts every available site in the foreground, prints their URLs and the storage-state folder, and stops all
of them on Ctrl-C. Other subcommands (task suites, demonstrations) are added by their owners in `_COMMANDS`.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time

from common.cli import fail, run


def _serve(args: argparse.Namespace) -> int:
    from sites.sandbox import KEY_FILE
    from sites.server import SiteServer

    sites = [s for s in args.sites.split(",") if s] if args.sites else None
    t0 = time.perf_counter()
    server = SiteServer(
        host=args.host,
        base_port=args.base_port,
        data_dir=args.data_dir,
        sites=sites,
        max_sandboxes=args.max_sandboxes,
        idle_timeout_s=args.idle_timeout,
    )
    urls = server.start()
    print(
        f"started {len(urls)} site(s) in {time.perf_counter() - t0:.1f}s (data: {server.data_dir})",
        flush=True,
    )
    for key, url in urls.items():
        print(f"  {key:15s} {url}   health: {url}/__health__", flush=True)
    print(f"  storage states: {server.auth_dir}", flush=True)
    print(
        f"  sandbox admin key: {server.data_dir / KEY_FILE} (drivers elsewhere: WA_SANDBOX_KEY)", flush=True
    )
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        while not done.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print("stopped", flush=True)
    return 0


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="start all bundled sites in the foreground")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--base-port", type=int, default=7770, help="first port; site i listens on P+offset (0 = free ports)"
    )
    p.add_argument(
        "--data-dir", default=None, help="seeds, sandboxes, .auth (default $WA_SITES_DIR or the cache)"
    )
    p.add_argument("--sites", default="", help="comma-separated site keys (default: all available)")
    p.add_argument("--max-sandboxes", type=int, default=256)
    p.add_argument(
        "--idle-timeout", type=float, default=1800.0, help="seconds before an idle sandbox is dropped"
    )
    p.set_defaults(func=_serve)


def _add_task_commands(sub: argparse._SubParsersAction) -> None:
    from sites.tasks.cli import add_tasks

    add_tasks(sub)


_COMMANDS = [_add_serve, _add_task_commands]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sites", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    from sites.core import SITE_PACKAGES

    unknown = [k for k in (getattr(args, "sites", "") or "").split(",") if k and k not in SITE_PACKAGES]
    if unknown:  # checked before a site starts: one line, exit 2
        fail(
            f"--sites {args.sites}: unknown site(s) {', '.join(unknown)}; known: {', '.join(sorted(SITE_PACKAGES))}"
        )
    return int(args.func(args))


if __name__ == "__main__":
    run(main)
