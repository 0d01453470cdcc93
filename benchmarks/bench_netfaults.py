"""Network fault layer: NFQUEUE delayer accuracy and throughput, inject/heal cost.

    python benchmarks/bench_netfaults.py [--quick]

Needs root (iptables, tc). Prints the numbers and writes benchmarks/results/netfaults.json.
Measured on loopback:
- delay accuracy: median / p99 of (RTT with delay - baseline RTT - configured delay) per delay;
- delayer packet rate: 64-byte UDP datagrams sent as fast as possible through a 5 ms delay,
  datagrams/s delivered vs. without the fault, and the delayer's own lateness statistics;
- TCP bulk throughput through the delayer (lo's 64 KiB MTU makes packets large);
- wall time of inject + heal per fault type.
"""

from __future__ import annotations

import argparse
import json
import platform
import socket
import statistics
import threading
import time
from pathlib import Path

from pytest_streamchaos.netem.features import network_features
from pytest_streamchaos.netem.rules import BandwidthLimit, NetworkDelay, PacketLoss, Partition

RESULTS = Path(__file__).parent / "results" / "netfaults.json"


class Echo:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _serve(c: socket.socket) -> None:
        with c:
            try:
                while d := c.recv(1 << 20):
                    c.sendall(d)
            except OSError:
                pass


def rtts(port: int, n: int) -> list[float]:
    out = []
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            t = time.perf_counter()
            c.sendall(b"p")
            c.recv(8)
            out.append((time.perf_counter() - t) * 1000)
    return out


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * len(s)))], 3)


def delay_accuracy(port: int, quick: bool) -> list[dict]:
    base = statistics.median(rtts(port, 50))
    rows = []
    for ms, n in ((10, 100), (50, 40), (200, 15)):
        if quick:
            n = max(5, n // 4)
        with NetworkDelay([port], ms=ms) as f:
            r = rtts(port, n)
        err = [x - base - ms for x in r]
        rows.append({"delay_ms": ms, "pings": n, "baseline_rtt_ms": round(base, 3),
                     "err_ms_median": round(statistics.median(err), 3), "err_ms_p99": pct(err, 0.99),
                     "err_ms_min": round(min(err), 3), "delayer": f.stats})
        print(f"delay {ms:4d} ms: added error median {rows[-1]['err_ms_median']:+.2f} ms, "
              f"p99 {rows[-1]['err_ms_p99']:+.2f} ms (baseline RTT {base:.3f} ms)")
    return rows


def udp_rate(n: int, fault_ms: float | None) -> dict:
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sink.bind(("127.0.0.1", 0))
    sink.settimeout(1.0)
    port = sink.getsockname()[1]
    got = [0, 0.0]

    def recv() -> None:
        try:
            while got[0] < n:
                sink.recv(128)
                got[0] += 1
                got[1] = time.perf_counter()
        except (TimeoutError, OSError):
            pass

    fault = NetworkDelay([port], ms=fault_ms, direction="to", proto="udp") if fault_ms is not None else None
    if fault:
        fault.inject()
    try:
        th = threading.Thread(target=recv)
        th.start()
        payload = b"x" * 64
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            t0 = time.perf_counter()
            for _ in range(n):
                s.sendto(payload, ("127.0.0.1", port))
            send_s = time.perf_counter() - t0
        th.join(60)
    finally:
        if fault:
            fault.heal()
        sink.close()
    span = max(1e-9, got[1] - t0)
    out = {"sent": n, "delivered": got[0], "send_pps": round(n / send_s), "delivered_pps": round(got[0] / span),
           "delay_ms": fault_ms, "delayer": fault.stats if fault else None}
    print(f"UDP 64 B, delay {fault_ms}: sent {out['send_pps']}/s, delivered {got[0]}/{n} "
          f"at {out['delivered_pps']}/s" + (f", delayer {fault.stats}" if fault else ""))
    return out


def tcp_bulk(port: int, nbytes: int, fault_ms: float | None) -> dict:
    fault = NetworkDelay([port], ms=fault_ms, direction="both") if fault_ms is not None else None
    if fault:
        fault.inject()
    try:
        with socket.create_connection(("127.0.0.1", port)) as c:
            chunk = b"b" * (1 << 20)
            got = 0
            t = time.perf_counter()

            def send() -> None:
                for _ in range(nbytes // len(chunk)):
                    c.sendall(chunk)

            th = threading.Thread(target=send)
            th.start()
            while got < nbytes:
                got += len(c.recv(1 << 20))
            th.join()
            took = time.perf_counter() - t
    finally:
        if fault:
            fault.heal()
    out = {"bytes": nbytes, "seconds": round(took, 3), "MB_per_s": round(nbytes / took / 1e6, 1),
           "delay_ms_each_way": fault_ms, "delayer": fault.stats if fault else None}
    print(f"TCP echo {nbytes >> 20} MiB, delay {fault_ms}: {out['MB_per_s']} MB/s")
    return out


def inject_heal_cost(port: int) -> dict:
    caps = network_features()
    faults = {"partition": lambda: Partition([port]), "loss_10pct": lambda: PacketLoss([port], 10),
              "delay_nfqueue": lambda: NetworkDelay([port], ms=10)}
    if not caps.missing("shaping", "bandwidth_limit"):
        faults["bandwidth"] = lambda: BandwidthLimit([port], kbit=1000)
    out = {}
    for name, make in faults.items():
        f = make()
        t = time.perf_counter()
        f.inject()
        t1 = time.perf_counter()
        f.heal()
        t2 = time.perf_counter()
        out[name] = {"inject_ms": round((t1 - t) * 1000, 1), "heal_ms": round((t2 - t1) * 1000, 1)}
        print(f"{name}: inject {out[name]['inject_ms']} ms, heal {out[name]['heal_ms']} ms")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    caps = network_features()
    reason = caps.missing("nfqueue", "NFQUEUE delay")
    if reason:
        raise SystemExit(f"bench_netfaults: {reason}")
    echo = Echo()
    n_udp = 20_000 if a.quick else 100_000
    result = {
        "host": {"python": platform.python_version(), "kernel": platform.release(),
                 "delay_backend": caps.delay_backend},
        "inject_heal": inject_heal_cost(echo.port),
        "delay_accuracy": delay_accuracy(echo.port, a.quick),
        "udp_rate": [udp_rate(n_udp, None), udp_rate(n_udp, 5.0)],
        "tcp_bulk": [tcp_bulk(echo.port, 64 << 20, None), tcp_bulk(echo.port, 64 << 20, 1.0)],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
