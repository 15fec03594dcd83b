"""`free_port()`: a TCP port that is free on this machine now (for rendezvous, test servers, local clusters);
`origin(url)`: its scheme://host[:port]."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on `host` ("" = every interface). Another process may take it before it is
    bound again, so use it at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def origin(url: str) -> str:
    """scheme://host[:port] of `url`; "" when it has no host (about:blank, data:, a relative path)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
