"""Probes across a faulted link: is a network fault acting, and how much?

A rule that is installed is not a fault in effect: the NFQUEUE delayer may die (its rule's
``--queue-bypass`` then lets packets through undelayed), a rule may be flushed by someone else. The
probes here time TCP connects to the target's port on 127.0.0.1 (or, for a fault in a container's
network namespace, to the target's address from inside that namespace), which cross exactly the path
the fault's rules match (packets to and from that port): a SYN and its SYN-ACK (or RST, when nothing
listens) are one round trip of the link.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import statistics
import threading
import time

CLONE_NEWNET = 0x40000000


def enter_netns(netns: str) -> None:
    """Move the *calling thread* into network namespace ``netns`` (``/proc/<pid>/ns/net``): sockets it
    opens afterwards live there. Only for a thread of its own (the probes' threads end after one probe)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(netns, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({netns}): {os.strerror(err)}")
    finally:
        os.close(fd)


def connect_ms(port: int, timeout: float, mark: int | None = None, host: str = "127.0.0.1") -> float | None:
    """Milliseconds until ``host``:``port`` answered a TCP connect (accepted or refused), or None
    when nothing came back within ``timeout`` seconds (the SYN or its answer was dropped). ``mark``:
    the socket's ``SO_MARK``, so the probe's connection counts as the job's (a fault scoped to the
    job's connections then acts on it)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if mark is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
    s.settimeout(timeout)
    t = time.perf_counter()
    try:
        s.connect((host, port))
    except ConnectionRefusedError:
        pass  # a RST is an answer: it crossed the link as well
    except OSError as exc:
        if isinstance(exc, TimeoutError) or exc.errno in (errno.ETIMEDOUT, errno.EAGAIN):
            return None
        raise
    finally:
        s.close()
    return (time.perf_counter() - t) * 1000.0


def round_trip_ms(port: int, n: int = 3, timeout: float = 10.0, mark: int | None = None,
                  host: str = "127.0.0.1", netns: str | None = None) -> float | None:
    """Median connect time over ``n`` concurrent probes (None if none was answered): concurrent, so
    that probing a long delay takes one round trip, not ``n``. ``netns``: probe from that namespace."""
    got = [m for m in _concurrently(lambda: connect_ms(port, timeout, mark, host), n, timeout, netns)
           if m is not None]
    return statistics.median(got) if got else None


def _concurrently(fn, n: int, timeout: float, netns: str | None = None) -> list[float | None]:
    """``fn()`` in ``n`` threads at once (each in ``netns`` if given); the results that came back
    within ``timeout`` + 5 s."""
    results: list[float | None] = []
    lock = threading.Lock()

    def one() -> None:
        if netns is not None:
            enter_netns(netns)
        r = fn()
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout + 5)
    with lock:
        return list(results)


def unanswered_fraction(port: int, n: int = 40, timeout: float = 0.8, mark: int | None = None,
                        host: str = "127.0.0.1", netns: str | None = None) -> float:
    """Fraction of ``n`` concurrent connects without an answer within ``timeout`` s (the first SYN
    or its answer lost: the kernel's first retransmission comes only after 1 s)."""
    results = _concurrently(lambda: connect_ms(port, timeout, mark, host), n, timeout, netns)
    return sum(r is None for r in results) / max(1, len(results))


def loss_from_unanswered(unanswered: float) -> float:
    """Per-packet loss from the fraction of unanswered connects: a connect needs two packets (SYN,
    SYN-ACK) through a link that drops each with probability p, so unanswered = 1 - (1 - p)^2."""
    return 1.0 - (1.0 - min(max(unanswered, 0.0), 1.0)) ** 0.5
