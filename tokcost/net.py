"""Network access, bounded: every call has a timeout and goes through the proxy the
environment names (``HTTPS_PROXY``, ``NO_PROXY``), as the libraries that download do."""

from __future__ import annotations

import socket
import urllib.request
from urllib.parse import urlparse

TIMEOUT = 10.0  # seconds for a connection, and for each read of an answer


def reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether a connection to ``url``'s host and port (or to its proxy) opens in time."""
    parts = urlparse(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        parts = urlparse(proxy if "://" in proxy else f"http://{proxy}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def fetch(url: str, max_bytes: int, timeout: float = TIMEOUT) -> bytes:
    """The body at ``url`` (OSError past ``max_bytes``, a failure or a silent server)."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        data: bytes = answer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"{url} holds more than {max_bytes:,} bytes")
    return data
