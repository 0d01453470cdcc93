"""User-space packet delayer for hosts without netem: holds each packet of an NFQUEUE for
``delay ± jitter`` ms, then accepts it unchanged (real packets, transparent to TCP).

Run as its own process (``python -m pytest_streamchaos.netem.nfq_delayer --queue N --delay-ms D``),
not a thread of pytest: it then has a core of its own instead of fighting the test for the GIL, and
if it dies the iptables rule's ``--queue-bypass`` lets packets through instead of blackholing them.

One thread does everything (libnetfilter_queue handles are not thread-safe): ``select`` on the queue's
netlink fd with a timeout until the next release, ``run(block=False)`` to take in new packets, then
accept every packet that is due. Packets are held as ``Packet`` objects (no payload copy: COPY_META).
Without ``--reorder`` release times are clamped to be non-decreasing, so packets leave in arrival
order (per flow as well) even with jitter - a jittery link that does not reorder, like netem with a
rate. On SIGTERM/SIGINT every held packet is accepted at once, the queue unbound, and a JSON line of
statistics printed on stdout.

Protocol with the parent: prints ``ready <queue>`` once bound; dies with the parent (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import heapq
import json
import os
import random
import select
import signal
import sys
import time
import warnings

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if parent_pid and os.getppid() != parent_pid:  # parent died before prctl took effect
        sys.exit(3)


class Delayer:
    """Holds packets until their release time. ``clock`` and ``rng`` are injectable for tests."""

    def __init__(self, delay_ms: float, jitter_ms: float = 0.0, reorder: bool = False, seed: int | None = None,
                 clock=time.monotonic) -> None:
        self.delay = delay_ms / 1000.0
        self.jitter = jitter_ms / 1000.0
        self.reorder = reorder
        self.rng = random.Random(seed)
        self.clock = clock
        self._fifo: collections.deque = collections.deque()
        self._heap: list = []
        self._seq = 0
        self._last_release = 0.0
        self.received = 0
        self.released = 0
        self.max_held = 0
        self.lateness: list[float] = []  #: release time minus target, seconds (sampled)
        self.lateness_max = 0.0

    def hold_time(self) -> float:
        if not self.jitter:
            return self.delay
        return max(0.0, self.delay + self.rng.uniform(-self.jitter, self.jitter))

    def push(self, pkt) -> None:
        """Take in a packet (called from the NetfilterQueue callback)."""
        t = self.clock() + self.hold_time()
        self.received += 1
        if self.reorder:
            self._seq += 1
            heapq.heappush(self._heap, (t, self._seq, pkt))
        else:
            t = max(t, self._last_release)
            self._last_release = t
            self._fifo.append((t, pkt))
        held = len(self._fifo) + len(self._heap)
        if held > self.max_held:
            self.max_held = held

    def next_due(self) -> float | None:
        if self.reorder:
            return self._heap[0][0] if self._heap else None
        return self._fifo[0][0] if self._fifo else None

    def release_due(self, accept=lambda p: p.accept(), flush: bool = False) -> int:
        """Accept every packet whose time has come (all of them with ``flush``); return how many."""
        n = 0
        now = self.clock()
        while True:
            due = self.next_due()
            if due is None or (due > now and not flush):
                break
            if self.reorder:
                _, _, pkt = heapq.heappop(self._heap)
            else:
                _, pkt = self._fifo.popleft()
            accept(pkt)
            n += 1
            if not flush:
                late = now - due
                if late > self.lateness_max:
                    self.lateness_max = late
                if len(self.lateness) < 200_000:
                    self.lateness.append(late)
            now = self.clock() if n % 64 == 0 else now
        self.released += n
        return n

    def stats(self) -> dict:
        lat = sorted(self.lateness)

        def pct(q: float) -> float:
            return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 3) if lat else 0.0

        return {"received": self.received, "released": self.released, "max_held": self.max_held,
                "late_ms_p50": pct(0.5), "late_ms_p99": pct(0.99),
                "late_ms_max": round(self.lateness_max * 1000, 3)}


def serve(queue_num: int, delayer: Delayer, max_len: int = 20000) -> dict:
    """Bind ``queue_num`` and delay its packets until SIGTERM/SIGINT; return the statistics."""
    from netfilterqueue import COPY_META, NetfilterQueue

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    # Self-pipe: a signal makes the pipe readable, so select() returns at once instead of
    # sleeping out its timeout (PEP 475 retries select after the handler).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    q = NetfilterQueue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "socket rcvbuf limit" - harmless here
        q.bind(queue_num, delayer.push, max_len=max_len, mode=COPY_META)
    fd = q.get_fd()
    print(f"ready {queue_num}", flush=True)
    try:
        while not stop:
            due = delayer.next_due()
            timeout = 0.2 if due is None else max(0.0, min(0.2, due - delayer.clock()))
            try:
                readable, _, _ = select.select([fd, wake_r], [], [], timeout)
            except InterruptedError:
                continue
            if fd in readable:
                q.run(block=False)
            delayer.release_due()
    finally:
        delayer.release_due(flush=True)  # heal: nothing held is lost
        q.unbind()
    return delayer.stats()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queue", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, required=True)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--reorder", action="store_true", help="let jitter reorder packets")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-len", type=int, default=20000, help="kernel queue length (packets held)")
    ap.add_argument("--parent-pid", type=int, default=0)
    a = ap.parse_args(argv)
    _die_with_parent(a.parent_pid)
    stats = serve(a.queue, Delayer(a.delay_ms, a.jitter_ms, a.reorder, a.seed), a.max_len)
    print(json.dumps(stats), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
