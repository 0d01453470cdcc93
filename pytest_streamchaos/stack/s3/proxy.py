"""The job's door to the object store: a small HTTP reverse proxy that relays every S3 request byte for byte
(:mod:`.http`: the signed headers, the bodies, chunked and ``aws-chunked`` uploads pass untouched), and can

- refuse a share of the requests of some operations (:class:`ErrorRule`: ``503 SlowDown`` on 30 % of PUTs),
  answering with S3's own error document, never reaching the store -- and count what the client did next:
  a refused request sent again is a **retry** (S3A's, or its SDK's);
- hold a checkpoint file's "rename" (:mod:`.gate`: S3A renames by a COPY and a DELETE) while a fault fires.

It runs in the harness's process, one thread per connection, listening on a port of the session's
registry; only the job is given its port (``fs.s3a.endpoint``), the harness reads the store directly.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pytest_streamchaos.stack.s3.gate import ProxyGate
from pytest_streamchaos.stack.s3.http import Closed, Head, Reader, relay_body
from pytest_streamchaos.stack.s3.ops import CODES, OPS, Request, classify, error_response
from pytest_streamchaos.stack.service import Service

#: how long a refused request counts as retried when it comes again (S3A's backoff is under a minute)
RETRY_WINDOW_S = 120.0


@dataclass
class ErrorRule:
    """Refuse a ``rate`` share of the requests of ``ops`` with ``status`` and S3's ``code`` (``seed``: the
    draw, so a test's run is repeatable: one number per matched request, in the order they come, so that
    ``refused`` is :func:`refusals` of ``seed``, ``rate`` and ``matched``). What it did is in its counters, by
    operation."""

    status: int
    ops: frozenset[str]
    rate: float
    code: str = ""
    seed: int = 0
    matched: Counter[str] = field(default_factory=Counter)  #: requests of its operations seen while on
    refused: Counter[str] = field(default_factory=Counter)
    retried: Counter[str] = field(default_factory=Counter)  #: refused requests the client sent again
    retry_delays: list[float] = field(default_factory=list)  #: seconds from a refusal to its retry

    def __post_init__(self) -> None:
        unknown = sorted(set(self.ops) - set(OPS))
        if unknown or not self.ops:
            raise ValueError(f"ops={sorted(self.ops)}: S3 operations are {', '.join(OPS)}")
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"rate={self.rate!r} must be in (0, 1]")
        self.code = self.code or CODES.get(self.status, "InternalError")
        self._rng = random.Random(self.seed)
        self._pending: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def decide(self, request: Request, target: str) -> bool:
        """Whether to refuse this request (counted); a request it refused before, sent again, is a retry."""
        key = (request.method, target)
        with self._lock:
            t = self._pending.pop(key, None)
            if t is not None and time.time() - t < RETRY_WINDOW_S:
                self.retried[request.op] += 1
                self.retry_delays.append(time.time() - t)
            if request.op not in self.ops:
                return False
            self.matched[request.op] += 1
            if self._rng.random() >= self.rate:
                return False
            self.refused[request.op] += 1
            self._pending[key] = time.time()
            return True

    def summary(self) -> dict[str, object]:
        """What it did, as plain data (a fault's event detail)."""
        delays = sorted(self.retry_delays)
        return {"status": self.status, "code": self.code, "ops": sorted(self.ops), "rate": self.rate,
                "seed": self.seed, "matched": dict(self.matched), "refused": dict(self.refused),
                "retried": dict(self.retried),
                "refused_total": sum(self.refused.values()), "retried_total": sum(self.retried.values()),
                "retry_delay_median_s": round(delays[len(delays) // 2], 3) if delays else None}


def refusals(seed: int, rate: float, matched: int) -> int:
    """How many of ``matched`` requests an :class:`ErrorRule` of ``seed`` and ``rate`` refuses: the draws below
    ``rate`` among its first ``matched`` (about ``rate * matched``; in a short window a seed's draws can fall
    well off it: seed 0 refuses 3 of the first 21 at rate 0.3)."""
    rng = random.Random(seed)
    return sum(rng.random() < rate for _ in range(matched))


class FaultProxy(Service):
    """The proxy (see the module docstring): listens on ``127.0.0.1:port`` and relays to ``upstream``
    (``host:port``: the store, or the Toxiproxy proxy in front of it); ``log_path``: one line per request."""

    def __init__(self, port: int, upstream: str, log_path: Path | None = None) -> None:
        self.port, self.upstream = port, upstream
        self.log_path = log_path
        self.gate = ProxyGate()
        self.rules: list[ErrorRule] = []
        self.seen: Counter[str] = Counter()  #: every request relayed or refused, by operation
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._log: Any = None

    def start(self) -> FaultProxy:
        if self._listener is not None:
            return self
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a", buffering=1)
        threading.Thread(target=self._accept, name=f"s3-proxy-{self.port}", daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening, let go of a held request, close every connection. Idempotent."""
        self.gate.close()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for c in conns:
            _close(c)
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- rules ---------------------------------------------------------------------------------------
    def add(self, rule: ErrorRule) -> ErrorRule:
        with self._lock:
            self.rules.append(rule)
        return rule

    def remove(self, rule: ErrorRule) -> None:
        with self._lock:
            if rule in self.rules:
                self.rules.remove(rule)

    def _refusal(self, request: Request, target: str) -> ErrorRule | None:
        with self._lock:
            rules = list(self.rules)
        hit = None
        for rule in rules:  # every rule sees the request (its retries are counted even when another refuses)
            if rule.decide(request, target) and hit is None:
                hit = rule
        return hit

    # -- connections ----------------------------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            listener = self._listener
            if listener is None:
                return
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self._conns.add(client)
            threading.Thread(target=self._serve, args=(client,), name="s3-proxy-conn", daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        reader = Reader(client)
        try:
            while True:
                try:
                    head = reader.head()
                except (Closed, ValueError):
                    return
                upstream, more = self._one(client, reader, head, upstream)
                if not more:
                    return
        except (OSError, Closed):
            # a peer went away mid-message (the store killed mid-response ends its reader with Closed): the client
            # sees its connection closed, as with a store
            return
        finally:
            for s in (client, upstream):
                if s is not None:
                    _close(s)
            with self._lock:
                self._conns.discard(client)

    def _one(self, client: socket.socket, reader: Reader, head: Head,
             upstream: socket.socket | None) -> tuple[socket.socket | None, bool]:
        """Relay (or refuse) one request and its response; the upstream connection and whether the client's
        connection carries another request."""
        path, query = head.path_and_query()
        request = classify(head.method, path, query, unquote(head.header("x-amz-copy-source")))
        with self._lock:
            self.seen[request.op] += 1
        rule = self._refusal(request, head.target)
        if rule is not None:
            self._note(request, rule.status, refused=True)
            expect = head.header("expect").lower() == "100-continue"
            close = expect or not head.keep_alive  # with Expect the body never comes: end the connection
            if not close:
                relay_body(reader, head, None)
            client.sendall(error_response(rule.status, rule.code, f"/{request.bucket}/{request.key}", close))
            return upstream, not close
        if not self.gate.before(request, client):
            return upstream, False  # held, and its client died meanwhile: the request never reaches the store
        if upstream is None:
            host, port = self.upstream.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)), timeout=None)
        up = Reader(upstream)
        upstream.sendall(head.raw)
        if head.header("expect").lower() == "100-continue":
            response = up.head()
            if response.status != 100:  # a final answer before the body: the body's fate is unknown, end here
                client.sendall(response.raw)
                relay_body(up, response, client, request=head)
                return upstream, False
            client.sendall(response.raw)
        relay_body(reader, head, upstream)
        response = up.head()
        while response.status == 100:  # an interim answer the client did not ask for
            client.sendall(response.raw)
            response = up.head()
        self.gate.after(request, client)
        self._note(request, response.status)
        client.sendall(response.raw)
        more = relay_body(up, response, client, request=head)
        return upstream, more and response.keep_alive and head.keep_alive

    def _note(self, request: Request, status: int, refused: bool = False) -> None:
        log = self._log
        if log is not None:
            try:
                log.write(f"{time.time():.3f} {status}{' refused' if refused else ''} {request.what}\n")
            except ValueError:  # closed by stop() meanwhile
                pass


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
