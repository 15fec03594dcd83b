"""Request metrics of one site, on its own prometheus_client registry (several sites share a process)."""

from __future__ import annotations

from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from sites.sandbox import SandboxStore

# Page loads of these sites take milliseconds; the buckets resolve that range and still catch slow outliers.
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class SiteMetrics:
    def __init__(self, site: str, store: SandboxStore) -> None:
        self.site = site
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "wa_site_request_seconds",
            "Request latency of a bundled site",
            ["site", "method"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "wa_site_errors",
            "Responses with status >= 400 of a bundled site",
            ["site", "status"],
            registry=self.registry,
        )
        self.sandboxes = Gauge(
            "wa_site_live_sandboxes",
            "Live sandboxes of the server hosting this site",
            ["site"],
            registry=self.registry,
        )
        self.sandboxes.labels(site=site).set_function(lambda: len(store))

    def observe(self, request: Any, status: int, seconds: float) -> None:
        if request.path == "/metrics":
            return  # scrapes would otherwise dominate the latency histogram
        self.latency.labels(site=self.site, method=request.method).observe(seconds)
        if status >= 400:
            self.errors.labels(site=self.site, status=str(status)).inc()

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
