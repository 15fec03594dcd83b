"""The bundled sites for a bench: a private data folder (so the benches' sandboxes never mix with a running demo's),
seeded by copying the cached seed files instead of seeding again, on OS-chosen free ports.

    with bundled_sites() as srv:        # srv is a started sites.server.SiteServer
        srv.urls["shopping"], srv.new_sandbox(), srv.auth_dir
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def bundled_sites(base_port: int = 0, sites: list[str] | None = None) -> Iterator[object]:
    from sites.server import SiteServer, default_data_dir

    with tempfile.TemporaryDirectory(prefix="bench-sites-") as tmp:
        cached = Path(default_data_dir()) / "seed"
        # seeds are content-addressed (sites.server.seed_version): a copy is a valid cache
        if cached.is_dir():
            shutil.copytree(cached, Path(tmp) / "seed", ignore=shutil.ignore_patterns(".*", "*.tmp"))
        with SiteServer(base_port=base_port, data_dir=tmp, sites=sites) as srv:
            yield srv
