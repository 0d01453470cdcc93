"""The pods' way to the job's Kafka (issue 51): a TCP relay of ports from one address to the same ports of another, one
listener per port, in threads of its process (they end with it). Both halves are this module: on the host, the
cluster bridge's address (``<gateway>:<port>``) to ``127.0.0.1:<port>``; in an executor pod (the Spark image carries
this file beside its entrypoint, which imports it), ``127.0.0.1:<port>`` to ``<gateway>:<port>``. So a job that
hard-codes ``localhost:9092``, and the ``127.0.0.1:<port>`` addresses Kafka advertises, work unchanged from an
executor pod; the packets stay on the bridge and the loopback, and the Toxiproxy between the job and the brokers
stays in the path (network faults on the job's links still act). Standard library only: it runs in the image's
Python, where this package is not."""

from __future__ import annotations

import socket
import threading

LOOPBACK = "127.0.0.1"


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        src.close()  # each socket is the source of one pipe: closed once


class Relay:
    """Listeners on ``address`` relaying each port to the same port of ``upstream`` (default: the loopback)."""

    def __init__(self, address: str, upstream: str = LOOPBACK) -> None:
        self.address, self.upstream = address, upstream
        self.listeners: dict[int, socket.socket] = {}
        self._lock = threading.Lock()

    def add(self, port: int) -> None:
        """Relay ``port`` (once; a second call does nothing)."""
        with self._lock:
            if port in self.listeners:
                return
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.address, port))
            listener.listen(128)
            self.listeners[port] = listener
        threading.Thread(target=self._serve, args=(listener, port), daemon=True,
                         name=f"streamchaos-k8s-relay-{port}").start()

    def _serve(self, listener: socket.socket, port: int) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            try:
                upstream = socket.create_connection((self.upstream, port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()

    def stop(self) -> None:
        """Close every listener (the relayed connections end with their peers)."""
        with self._lock:
            for listener in self.listeners.values():
                try:
                    listener.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                listener.close()
            self.listeners.clear()
