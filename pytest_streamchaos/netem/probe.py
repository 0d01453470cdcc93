"""Probes across a faulted link: is a network fault acting, and how much?

A rule that is installed is not a fault in effect: the NFQUEUE delayer may die (its rule's
``--queue-bypass`` then lets packets through undelayed), a rule may be flushed by someone else. The
probes here time TCP connects to the target's port on 127.0.0.1 (or, for a fault in a container's
network namespace, to the target's address from inside that namespace), which cross exactly the path
the fault's rules match (packets to and from that port): a SYN and its SYN-ACK (or RST, when nothing
listens) are one round trip of the link.

Through a proxy a connect proves nothing (the proxy answers it itself, whatever its toxics), so
:func:`exchange` times a request and its whole reply instead: a Kafka ApiVersions request, which any
broker answers and an echo server returns as it is.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable
from typing import TypeVar

CLONE_NEWNET = 0x40000000


def enter_netns(netns: str) -> None:
    """Move the *calling thread* into network namespace ``netns`` (a process's network-namespace
    file): sockets it opens afterwards live there. Only for a thread of its own (the probes' threads
    end after one probe)."""
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


R = TypeVar("R")


def _concurrently(fn: Callable[[], R], n: int, timeout: float, netns: str | None = None) -> list[R]:
    """``fn()`` in ``n`` threads at once (each in ``netns`` if given); the results that came back
    within ``timeout`` + 5 s."""
    results: list[R] = []
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


# -- request / response probes (through a proxy, which answers a connect itself) ------------------------

#: Kafka's ApiVersions request (API key 18), version 0: every Kafka broker answers it, before any
#: authentication and whatever its version
KAFKA_API_VERSIONS = 18


def kafka_api_versions_v0(correlation_id: int = 1, client_id: str = "streamchaos-probe") -> bytes:
    """A complete Kafka ApiVersions v0 request: ``int32`` size of what follows, then request header v1
    (``int16`` api_key 18, ``int16`` api_version 0, ``int32`` correlation_id, ``int16``-length
    client_id) and an empty v0 body. The broker's answer is one frame the same way: ``int32`` size,
    then the correlation id and the API list. An echo server's answer (the request itself) is such a
    frame too, so one probe serves a broker and the tests' echo servers alike."""
    cid = client_id.encode()
    header = struct.pack(">hhih", KAFKA_API_VERSIONS, 0, correlation_id, len(cid)) + cid
    return struct.pack(">i", len(header)) + header


def exchange(port: int, request: bytes | None = None, timeout: float = 2.0,
             host: str = "127.0.0.1") -> tuple[str, float]:
    """Connect to ``host:port``, send ``request`` (default :func:`kafka_api_versions_v0`) and read one
    size-prefixed frame back. Returns ``(outcome, ms)``: ``"reply"`` with the milliseconds from the
    send to the whole reply (the connect is not counted: a proxy accepts it itself), or ``"refused"``,
    ``"reset"``, ``"closed"`` (EOF before a whole frame), ``"timeout"`` with the time until then."""
    outcome, _, ms = ask(port, request, timeout, host)
    return outcome, ms


def ask(port: int, request: bytes | None = None, timeout: float = 2.0,
        host: str = "127.0.0.1") -> tuple[str, bytes | None, float]:
    """:func:`exchange` with the reply: ``(outcome, frame, ms)``, ``frame`` the reply's bytes after its size
    (None unless the outcome is ``"reply"``)."""
    request = kafka_api_versions_v0() if request is None else request
    t = time.perf_counter()
    frame = None
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t = time.perf_counter()
            s.sendall(request)
            frame = _read_frame(s)
            outcome = "reply" if frame is not None else "closed"
    except ConnectionRefusedError:
        outcome = "refused"
    except (ConnectionResetError, BrokenPipeError):
        outcome = "reset"
    except TimeoutError:
        outcome = "timeout"
    return outcome, frame, (time.perf_counter() - t) * 1000.0


def _read_frame(s: socket.socket) -> bytes | None:
    """Read an ``int32`` size and that many bytes; None on EOF before the end."""
    def read(n: int) -> bytes | None:
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    size = read(4)
    return None if size is None else read(struct.unpack(">i", size)[0])


#: Kafka's Metadata request (API key 3); version 4, the oldest a Kafka 4 broker answers (KIP-896 removed 0-3)
KAFKA_METADATA = 3


def kafka_metadata_v4(correlation_id: int = 2, client_id: str = "streamchaos-probe") -> bytes:
    """A Metadata v4 request for no topic (the brokers only): header v1 as in :func:`kafka_api_versions_v0`,
    then an empty ``topics`` array and ``allow_auto_topic_creation`` false."""
    cid = client_id.encode()
    body = struct.pack(">hhih", KAFKA_METADATA, 4, correlation_id, len(cid)) + cid + struct.pack(">ib", 0, 0)
    return struct.pack(">i", len(body)) + body


def metadata_brokers(frame: bytes) -> list[tuple[int, str, int]]:
    """``(node id, host, port)`` of every broker a Metadata v4 reply (``frame``, after its size) advertises:
    response header v0 (correlation id), ``throttle_time_ms``, then the brokers array (node id, host, port,
    nullable rack). ValueError when the frame is not one."""
    try:
        pos, brokers = 8, []
        (n,) = struct.unpack_from(">i", frame, pos)
        pos += 4
        for _ in range(n):
            node, length = struct.unpack_from(">ih", frame, pos)
            host = frame[pos + 6:pos + 6 + length].decode()
            pos += 6 + length
            port, rack = struct.unpack_from(">ih", frame, pos)
            pos += 6 + max(rack, 0)
            brokers.append((node, host, port))
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"not a Kafka Metadata v4 reply ({exc})") from None
    return brokers


def exchanges(port: int, n: int = 3, timeout: float = 2.0, host: str = "127.0.0.1",
              request: bytes | None = None) -> list[tuple[str, float]]:
    """:func:`exchange` ``n`` times at once (a long delay costs one round trip, not ``n``)."""
    return [r for r in _concurrently(lambda: exchange(port, request, timeout, host), n, timeout)
            if r is not None]
