"""The checkpoint gate of a checkpoint on the object store: the proxy holds S3A's "rename" of a checkpoint
file, so a fault lands exactly at a micro-batch phase -- the same rules, the same harness side as the
preloaded gate of a local checkpoint (``stack/checkpoint_gate.py``; ``faults/gate_moments.py``).

Spark writes a checkpoint file as a temporary object and renames it (``offsets/.7.<uuid>.tmp`` to
``offsets/7``); on S3A a rename is a COPY of the object to its new key, then a DELETE of the old one. So

- ``<log> before N`` holds the COPY onto ``<log>/N`` (``state``: onto a state store file of version N,
  ``N.delta`` / ``N.changelog`` / ``N.zip``) before the store sees it: the temporary object is written,
  the file is not there -- the moment *written, not yet renamed*;
- ``<log> after N`` holds the answer to the DELETE of that file's temporary object: the rename is done,
  the writer does not know it yet.

A held request whose client died meanwhile (the fault killed it) is dropped when released: the store never
sees it, as a killed JVM's rename never happens. ``task`` (an executor's shuffle file, on local disk) is
not the store's: it is never held here.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from pytest_streamchaos.poll import poll
from pytest_streamchaos.protocols import Held
from pytest_streamchaos.stack.s3.http import alive
from pytest_streamchaos.stack.s3.ops import Request

#: the checkpoint logs whose renames the store's gate holds (the preloaded gate's ``task`` is local disk)
LOGS = ("commits", "offsets", "state")
WHENS = ("before", "after")
#: a held request lets go by itself after this long (a harness that never releases must not hang the job)
MAX_HOLD_S = 120.0


def checkpoint_file(key: str) -> tuple[str, int] | None:
    """``(log, number)`` of a checkpoint file's key: ``.../offsets/7`` -> ``("offsets", 7)``, a state store
    file ``.../state/0/3/8.delta`` -> ``("state", 8)``; None for anything else."""
    parts = key.rstrip("/").split("/")
    name, parent = parts[-1], parts[-2] if len(parts) > 1 else ""
    if parent in ("commits", "offsets") and name.isdigit():
        return parent, int(name)
    if "state" in parts[:-1] and not name.startswith("."):
        head = name.split(".", 1)[0].split("_", 1)[0]
        if head.isdigit() and name.endswith((".delta", ".changelog", ".zip", ".snapshot")):
            return "state", int(head)
    return None


def temporary_of(key: str) -> str | None:
    """The key a temporary object stands for (``.../offsets/.7.<uuid>.tmp`` -> ``.../offsets/7``), None when
    ``key`` is not Spark's temporary name of a checkpoint file."""
    head, _, name = key.rpartition("/")
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    final = name[1:-4].rsplit(".", 1)[0]  # ".<name>.<uuid>.tmp"
    return f"{head}/{final}" if head else final


@dataclass(frozen=True)
class ProxyHold:
    """A request the gate holds: where (``log`` entry ``batch``, ``when``), who (``pid``: the client's process,
    0 when it could not be told), since when (``t``) and the object (``path``)."""

    log: str
    when: str
    batch: int
    pid: int
    t: float
    path: str
    tid: int = 0
    thread: str = "?"

    @property
    def in_task(self) -> bool | None:
        """Unknown: a request does not say which thread sent it."""
        return None


class ProxyGate:
    """Arm / wait / release / disarm, as the preloaded gate's harness side (``faults.gate_moments.Gate``); the
    proxy calls :meth:`before` and :meth:`after` on each request."""

    def __init__(self) -> None:
        self.holds: list[Held] = []  #: every hold the moment detectors reported, in order
        self.dropped = 0  #: held requests whose client died meanwhile: never relayed to the store
        self._cond = threading.Condition()
        self._rule: tuple[str, str, int] | None = None
        self._scope = ""  #: ``bucket/key/`` of the armed query's checkpoint ("" any)
        self._held: ProxyHold | None = None
        self._released = False

    def arm(self, log: str, when: str, min_batch: int, scope: str | None = None) -> None:
        """Hold the next rename of ``log``'s entry ``>= min_batch``, ``when`` before or after it, and given the
        ``scope`` (the query's checkpoint, ``s3a://bucket/key``) only one below it; a request held by an
        earlier arming goes on."""
        if log not in LOGS or when not in WHENS or min_batch < 0:
            raise ValueError(f"gate rule {log} {when} {min_batch}: log one of {LOGS} (the store's; a task's "
                             f"shuffle files are on local disk), when one of {WHENS}, min_batch >= 0")
        prefix = scope.split("://", 1)[1].strip("/") + "/" if scope and "://" in scope else ""
        with self._cond:
            self._rule, self._held, self._released = (log, when, min_batch), None, False
            self._scope = prefix
            self._cond.notify_all()

    def held(self) -> ProxyHold | None:
        with self._cond:
            return self._held

    def wait_held(self, timeout: float, stop: threading.Event | None = None) -> ProxyHold | None:
        """The hold of this arming once a request is held; None when ``stop`` is set or ``timeout`` passes."""
        def found() -> ProxyHold | bool | None:
            return True if stop is not None and stop.is_set() else self.held()

        try:
            got = poll(found, timeout, lambda _: TimeoutError(), interval=0.002, clock=time.time)
        except TimeoutError:
            return None
        return got if isinstance(got, ProxyHold) else None

    def release(self) -> None:
        """Let the held request go on (the rule stays armed and spent)."""
        with self._cond:
            self._released = True
            self._cond.notify_all()

    def disarm(self) -> None:
        """No rule, nothing held: requests pass through."""
        with self._cond:
            self._rule, self._held, self._released = None, None, True
            self._cond.notify_all()

    def close(self) -> None:
        """Disarmed, its holds forgotten: the proxy's gate serves the session's next run."""
        self.disarm()
        self.holds.clear()

    # -- the proxy's side -----------------------------------------------------------------------------
    def before(self, request: Request, client: socket.socket) -> bool:
        """Hold a COPY onto the armed log's file; whether to relay the request (False: its client died while
        it was held)."""
        if request.op != "COPY":
            return True
        return self._maybe_hold("before", request.key, request, client)

    def after(self, request: Request, client: socket.socket) -> None:
        """Hold the answer to the DELETE of the armed log's temporary object (the rename is done)."""
        final = temporary_of(request.key) if request.op == "DELETE" else None
        if final is not None:
            self._maybe_hold("after", final, request, client)

    def _maybe_hold(self, when: str, key: str, request: Request, client: socket.socket) -> bool:
        found = checkpoint_file(key)
        with self._cond:
            rule = self._rule
            if (rule is None or found is None or self._held is not None or rule[1] != when
                    or found[0] != rule[0] or found[1] < rule[2]
                    or not f"{request.bucket}/{key}".startswith(self._scope)):
                return True
            self._held = ProxyHold(found[0], when, found[1], _peer_pid(client), time.time(), f"{request.bucket}/{key}")
            self._released = False
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._released, timeout=MAX_HOLD_S)
        if alive(client):
            return True
        with self._cond:
            self.dropped += 1
        return False


def same_end(addr: tuple[str, int], end: tuple[str, int]) -> bool:
    """Whether a socket's address (``ip``, ``port``; IPv6's v4-mapped form too) is ``end``."""
    return addr[1] == end[1] and addr[0].removeprefix("::ffff:") == end[0]


def _peer_pid(client: socket.socket) -> int:
    """The process on the other end of a loopback connection (0 when it cannot be told): the one whose socket
    goes from the peer's address to ours -- the peer's address alone is not enough, Linux gives one local port
    to several connections to different remote ends (a JVM's to another server was taken for the client's)."""
    try:
        import psutil

        peer, ours = client.getpeername()[:2], client.getsockname()[:2]
        for c in psutil.net_connections("tcp"):  # a JVM's socket is IPv6, its address v4-mapped (::ffff:127.0.0.1)
            if c.pid and c.laddr and c.raddr and same_end(c.laddr, peer) and same_end(c.raddr, ours):
                return int(c.pid)
    except Exception:  # psutil without the rights, a socket gone: the hold is still a hold
        return 0
    return 0
