"""Proxy-based links: a small Toxiproxy-like TCP proxy (the real Toxiproxy: :mod:`.toxiproxy`).

A proxy is a node of the stack (the fixed bootstrap port of the embedded broker is one) and a fault
mechanism (link faults without privileges); it lives with the stack so both can use it.

Unlike the packet-level faults in :mod:`.network`, a proxy is not transparent: clients must connect
to the proxy's port instead of the target's (the stack wires that, e.g. a broker's advertised
listener). In exchange it needs no privileges and no kernel features - the fallback when neither
netem nor NFQUEUE is there. Its interface is :class:`Link`::

    with TcpProxy(upstream_port=broker_port) as link:
        connect_to(link.port)
        link.set_latency(200)          # every chunk server->client arrives 200 ms later
        link.set_bandwidth(800)        # kbit/s
        link.set_timeout(0)            # data stops flowing (held) until clear()
        link.disable()                 # close connections, refuse new ones; enable() undoes
        link.clear()                   # no toxics

``stream``: ``"downstream"`` (server -> client, the default as in Toxiproxy), ``"upstream"`` or ``"both"``.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from dataclasses import dataclass

from pytest_streamchaos.stack.base import NetFaultError

STREAMS = ("downstream", "upstream", "both")


def _streams(stream: str) -> tuple[str, ...]:
    if stream not in STREAMS:
        raise ValueError(f"stream={stream!r} must be one of {STREAMS}")
    return ("downstream", "upstream") if stream == "both" else (stream,)


@dataclass
class _Toxics:
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    kbit: float | None = None
    timeout_ms: float | None = None  #: None: data flows; 0: held until cleared; >0: close after that


class Link:
    """Interface of a proxied link with toxics (see module docstring)."""

    host = "127.0.0.1"
    port: int

    def set_latency(self, ms: float, jitter_ms: float = 0.0, stream: str = "downstream") -> None:
        raise NotImplementedError

    def set_bandwidth(self, kbit: float | None, stream: str = "downstream") -> None:
        raise NotImplementedError

    def set_timeout(self, ms: float | None, stream: str = "downstream") -> None:
        raise NotImplementedError

    def disable(self) -> None:
        raise NotImplementedError

    def enable(self) -> None:
        raise NotImplementedError

    def clear(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class TcpProxy(Link):
    """An asyncio TCP proxy on 127.0.0.1 with latency, bandwidth and timeout toxics, in its own thread."""

    CHUNK = 16384

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", listen_port: int = 0,
                 seed: int | None = None, listen_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, int(upstream_port))
        self.listen_host = listen_host  # not 127.0.0.1 only inside a container (the embedded broker's)
        self.toxics = {"downstream": _Toxics(), "upstream": _Toxics()}
        self._rng = random.Random(seed)
        self._enabled = True
        self._conns: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._flow = {s: asyncio.Event() for s in self.toxics}  # set <=> data may flow
        for ev in self._flow.values():
            ev.set()
        ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._run, args=(listen_port, ready), daemon=True,
                                        name=f"tcpproxy->{upstream_port}")
        self._error: BaseException | None = None
        self._thread.start()
        if not ready.wait(10) or self._error:
            raise NetFaultError(f"TcpProxy to {self.upstream} did not start: {self._error}")

    # -- loop side -------------------------------------------------------------------------------
    def _run(self, listen_port: int, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._handle, self.listen_host, listen_port))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # reported to the constructor
            self._error = exc
            ready.set()
            return
        ready.set()
        self._loop.run_forever()
        # Finish every connection task here: a coroutine left pending would be finalised later by
        # the garbage collector, in whatever the main thread is doing, against a closed loop.
        pending = asyncio.all_tasks(self._loop)
        for t in pending:
            t.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    async def _handle(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        if not self._enabled:
            cwriter.close()
            return
        try:
            sreader, swriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        self._conns.update((cwriter, swriter))
        try:
            await asyncio.gather(self._pipe(creader, swriter, "upstream"),
                                 self._pipe(sreader, cwriter, "downstream"))
        finally:
            for w in (cwriter, swriter):
                self._conns.discard(w)
                w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def read() -> None:
            try:
                while data := await reader.read(self.CHUNK):
                    t = self.toxics[stream]
                    hold = max(0.0, t.latency_ms + (self._rng.uniform(-t.jitter_ms, t.jitter_ms)
                                                    if t.jitter_ms else 0.0)) / 1000
                    await queue.put((time.monotonic() + hold, data))
            except (ConnectionError, OSError):
                pass
            await queue.put((0.0, b""))

        async def write() -> None:
            try:
                while True:
                    release, data = await queue.get()
                    if not data:
                        break
                    await self._flow[stream].wait()  # timeout toxic: held until cleared
                    delay = release - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    writer.write(data)
                    await writer.drain()
                    kbit = self.toxics[stream].kbit
                    if kbit:  # pace: the link carries len(data) bytes in this long
                        await asyncio.sleep(len(data) * 8 / (kbit * 1000))
                if writer.can_write_eof():
                    writer.write_eof()
            except (ConnectionError, OSError):
                pass

        await asyncio.gather(read(), write())

    def _close_all(self) -> None:
        for w in list(self._conns):
            w.transport.abort()
        self._conns.clear()

    def _call(self, fn, *args) -> None:
        self._loop.call_soon_threadsafe(fn, *args)

    # -- toxics ----------------------------------------------------------------------------------
    def set_latency(self, ms: float, jitter_ms: float = 0.0, stream: str = "downstream") -> None:
        for s in _streams(stream):
            self.toxics[s].latency_ms, self.toxics[s].jitter_ms = float(ms), float(jitter_ms)

    def set_bandwidth(self, kbit: float | None, stream: str = "downstream") -> None:
        for s in _streams(stream):
            self.toxics[s].kbit = kbit

    def set_timeout(self, ms: float | None, stream: str = "downstream") -> None:
        for s in _streams(stream):
            self.toxics[s].timeout_ms = ms
            self._call(self._flow[s].set if ms is None else self._flow[s].clear)
        if ms:
            self._loop.call_soon_threadsafe(self._loop.call_later, ms / 1000, self._close_all)

    def disable(self) -> None:
        self._enabled = False
        self._call(self._close_all)

    def enable(self) -> None:
        self._enabled = True

    def clear(self) -> None:
        for s in self.toxics:
            self.toxics[s] = _Toxics()
            self._call(self._flow[s].set)
        self.enable()

    def stop(self) -> None:
        """Close every connection and the listener; idempotent."""
        if not self._loop.is_closed() and self._loop.is_running():
            def shutdown() -> None:
                self._close_all()
                if self._server is not None:
                    self._server.close()
                self._loop.stop()

            self._call(shutdown)
            self._thread.join(10)
