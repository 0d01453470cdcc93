"""Free TCP ports on 127.0.0.1, never handed out twice in one session (its :class:`PortRegistry`).

Ports are picked at random *below* the kernel's ephemeral range (``ip_local_port_range``): a port from
inside it could be taken by some process's outgoing connection between our check and the server's
bind, which the kernel never does below the range. Random picks also make a clash between two
pytest sessions running side by side unlikely. Each candidate is checked by binding it.
"""

from __future__ import annotations

import random
import socket
import threading

HOST = "127.0.0.1"
_LOW = 15000  #: lowest port we pick (above common service ports)


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_is_free(port: int, host: str = HOST) -> bool:
    """Whether ``host:port`` can be bound right now (no SO_REUSEADDR: a TIME_WAIT port counts as busy)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class PortRegistry:
    """The ports one session handed out (:class:`~pytest_streamchaos.stack.host.Host`'s): each free when handed
    out, none twice."""

    def __init__(self) -> None:
        self._handed_out: set[int] = set()
        self._lock = threading.Lock()

    def free(self, host: str = HOST) -> int:
        """A port free on ``host`` right now and not handed out before by this registry."""
        with self._lock:
            high = _ephemeral_low()
            rng = random.Random()
            if high - _LOW > 1000:
                for _ in range(500):
                    port = rng.randrange(_LOW, high)
                    if port not in self._handed_out and port_is_free(port, host):
                        self._handed_out.add(port)
                        return port
            # Fallback (tiny or odd port range): let the kernel choose.
            for _ in range(100):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind((host, 0))
                    port = s.getsockname()[1]
                if port not in self._handed_out:
                    self._handed_out.add(port)
                    return port
        raise RuntimeError(f"no free TCP port found on {host}")

    def free_many(self, n: int, host: str = HOST) -> list[int]:
        """``n`` distinct free ports (see :meth:`free`)."""
        return [self.free(host) for _ in range(n)]

    def reserve(self, port: int) -> None:
        """Mark a fixed, user-chosen port as taken so :meth:`free` never returns it."""
        with self._lock:
            self._handed_out.add(port)

    def handed_out(self) -> frozenset[int]:
        """Every port handed out or reserved so far."""
        with self._lock:
            return frozenset(self._handed_out)


def port_holder(port: int, host: str = HOST) -> str | None:
    """Who listens on ``host:port``: ``"pid 123 (java)"``, ``"an unknown process"`` when the kernel
    does not tell us (another user's process), or None when nothing listens there (a port in
    TIME_WAIT only is not held: servers bind it with SO_REUSEADDR)."""
    import psutil

    try:
        conns = psutil.net_connections("tcp")
    except (psutil.Error, OSError):
        return None if port_is_free(port, host) else "an unknown process"
    for c in conns:
        listening = c.status == psutil.CONN_LISTEN and c.laddr
        if listening and c.laddr.port == port and c.laddr.ip in (host, "0.0.0.0", "::"):
            if c.pid is None:
                return "an unknown process"
            try:
                return f"pid {c.pid} ({psutil.Process(c.pid).name()})"
            except psutil.Error:
                return f"pid {c.pid}"
    return None
