"""Why a Spark Connect client finds its restarted server at its 17 s retry, or only at its 68 s one.

pyspark's Connect client retries a call its server broke (``DefaultPolicy``: 0.05, 0.25, 1.05, 4.25, 17.05,
68.25 s after the break, the long waits jittered by up to 0.5 s). Each retry is a call on the client's gRPC
channel, and gRPC reconnects that channel on a schedule of its own (a 1 s backoff growing x1.6 per failed
attempt, each +-20 %); a call made while the channel waits for its next attempt fails at once
(``UNAVAILABLE``) without reaching any server. So a server that is back before the 17 s retry is found there
only if the channel's own reconnect attempt came between the server's return and the retry.

Measured without Spark, so that nothing else decides it: each trial is a gRPC server process on 127.0.0.1
holding a client's in-flight call (a running query's ``awaitTermination``), killed by SIGKILL as
``kill_connect_server`` kills the server, and started again ``back`` seconds later on the same port; the client
retries with pyspark's own ``Retrying(DefaultPolicy())`` on a channel pyspark's ``DefaultChannelBuilder`` built.
Per trial: the retry that reached the new server (seconds after the kill) and the channel's state changes (its
reconnect attempts). Prints, per back time, how many trials were found at the 17 s retry and how many later,
and writes ``benchmarks/results/connect_retry.json``:

    python benchmarks/bench_connect_retry.py --back 10 11.6 13 15 --trials 10
    python benchmarks/bench_connect_retry.py --back 11.6 15 18 --channel-option grpc.max_reconnect_backoff_ms=2000
    python benchmarks/bench_connect_retry.py --back 11.6 15 18 30 --client-max-backoff-ms 5000 \
        --channel-option grpc.max_reconnect_backoff_ms=2000
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from pyspark.sql.connect.client.core import DefaultChannelBuilder
from pyspark.sql.connect.client.retries import DefaultPolicy, Retrying

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from pytest_streamchaos.machine.ports import PortRegistry  # noqa: E402
from pytest_streamchaos.poll import wait_for  # noqa: E402  (after the path: run as a script)

#: one gRPC method: "hold" keeps the call until the process dies, "answer" returns at once
SERVER = """
import sys, time, grpc
from concurrent import futures
port, mode = int(sys.argv[1]), sys.argv[2]
def call(request, context):
    if mode == "hold":
        print("held", flush=True)
        time.sleep(3600)  # the running query's awaitTermination: held until this process is killed
    return b"reached"
handler = grpc.method_handlers_generic_handler("t.T", {"Call": grpc.unary_unary_rpc_method_handler(call)})
server = grpc.server(futures.ThreadPoolExecutor(4))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port(f"127.0.0.1:{port}")
server.start()
print("listening", flush=True)
server.wait_for_termination()
"""


class Server:
    """A server process and the lines it printed (read by a thread, so a wait can poll them)."""

    def __init__(self, port: int, mode: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), mode], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def await_line(self, line: str, what: str) -> float:
        wait_for(lambda: line in self.lines, 30, what, last=lambda: self.lines)
        return time.monotonic()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


def trial(port: int, back: float, options: list[tuple[str, int]], policy: DefaultPolicy) -> dict[str, Any]:
    """One kill and return of the server under a held call; the times are seconds after the kill."""
    first = Server(port, "hold")
    channel = DefaultChannelBuilder(f"sc://127.0.0.1:{port}", channelOptions=options or None).toChannel()
    changes: list[tuple[float, str]] = []
    killed_at: list[float] = []
    channel.subscribe(lambda s: changes.append((time.monotonic(), s.name)), try_to_connect=False)
    call = channel.unary_unary("/t.T/Call")
    attempts: list[float] = []
    reached: list[float] = []

    def client() -> None:
        for attempt in Retrying(policy):
            with attempt:
                attempts.append(time.monotonic())
                call(b"x")
                reached.append(attempts[-1])

    servers = [first]
    try:
        first.await_line("listening", "the first server listening")
        threading.Thread(target=client, daemon=True).start()
        first.await_line("held", "the client's call held by the first server")
        first.kill()
        killed_at.append(time.monotonic())
        # the experiment's parameter, not a wait for a condition: the server comes back `back` s later
        time.sleep(max(0.0, killed_at[0] + back - time.monotonic()))
        second = Server(port, "answer")
        servers.append(second)
        listening = second.await_line("listening", "the restarted server listening") - killed_at[0]
        wait_for(lambda: reached, 150, "the client's retry reaching the restarted server",
                 last=lambda: [round(a - killed_at[0], 2) for a in attempts])
    finally:
        for s in servers:
            s.kill()
        channel.close()
    t0 = killed_at[0]
    return {"back": back, "listening": round(listening, 2), "reached": round(reached[0] - t0, 2),
            "retries": [round(a - t0, 2) for a in attempts[1:]],
            "channel": [(round(t - t0, 2), s) for t, s in changes if t >= t0]}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per back time: found at the 17 s retry (reached < 30 s) or later, and when the channel was ready again
    (gRPC reports a channel that keeps failing to connect as TRANSIENT_FAILURE throughout, so its attempts show
    only as the one that succeeded)."""
    at17 = [r for r in rows if r["reached"] < 30]
    ready = [next(t for t, s in r["channel"] if s == "READY") for r in rows]
    return {"back": rows[0]["back"], "trials": len(rows), "found_at_17s": len(at17),
            "found_later": len(rows) - len(at17),
            "reached_median": statistics.median(r["reached"] for r in rows),
            "channel_ready_s": sorted(round(t, 1) for t in ready),
            "retry_17s_at": sorted(round(next(a for a in r["retries"] if a > 10), 1) for r in rows)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--back", type=float, nargs="+", default=[10.0, 11.6, 13.0],
                    help="seconds after the kill at which the server listens again")
    ap.add_argument("--trials", type=int, default=10, help="trials per back time (run side by side)")
    ap.add_argument("--channel-option", action="append", default=[], metavar="KEY=MS",
                    help="a gRPC channel option for the client, e.g. grpc.max_reconnect_backoff_ms=2000 (what a job "
                         "passes through DefaultChannelBuilder(url, channelOptions=[...]))")
    ap.add_argument("--client-max-backoff-ms", type=int, default=None,
                    help="the client's retry policy's longest wait (DefaultPolicy's max_backoff, 60000): what a job "
                         "sets with spark.client.set_retry_policies([DefaultPolicy(max_backoff=...)])")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "connect_retry.json"))
    args = ap.parse_args()
    options = [(k, int(v)) for k, _, v in (o.partition("=") for o in args.channel_option)]
    ports = PortRegistry()
    rows: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def one(port: int, back: float) -> None:
        try:
            policy = DefaultPolicy() if args.client_max_backoff_ms is None else \
                DefaultPolicy(max_backoff=args.client_max_backoff_ms)
            rows.append(trial(port, back, options, policy))
        except BaseException as e:  # reported below, with the trial it ended
            errors.append(e)

    threads = []
    for back in args.back:
        for _ in range(args.trials):
            threads.append(threading.Thread(target=one, args=(ports.free(), back)))
            threads[-1].start()
            time.sleep(0.3)  # staggered starts: thirty Python servers at once would load 2 cores for seconds
    for t in threads:
        t.join()
    for e in errors:
        print(f"trial failed: {e}", file=sys.stderr)
    sums = [summary([r for r in rows if r["back"] == b]) for b in args.back if any(r["back"] == b for r in rows)]
    print(f"grpcio {grpc.__version__}; the client's retry policy's max backoff "
          f"{args.client_max_backoff_ms or 60000} ms; channel options {options or 'none'}; "
          f"{len(rows)} trials")
    print("back s | trials | found at 17 s | found later | median reached s | channel ready again (s) "
          "| the client's 17 s retry (s)")
    for s in sums:
        print(f"{s['back']:6} | {s['trials']:6} | {s['found_at_17s']:13} | {s['found_later']:11} | "
              f"{round(s['reached_median'], 2):16} | {s['channel_ready_s']} | {s['retry_17s_at']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    report = {"grpcio": grpc.__version__, "channel_options": options,
              "client_max_backoff_ms": args.client_max_backoff_ms or 60000, "summary": sums, "trials": rows}
    Path(args.out).write_text(json.dumps(report, indent=1))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
