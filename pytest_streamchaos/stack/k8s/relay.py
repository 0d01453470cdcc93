"""The host's half of the pods' way to the job's Kafka (issue 51): a TCP relay from the cluster bridge's address
on this host (``<gateway>:<port>``) to ``127.0.0.1:<port>``, one listener per port, in threads of this process
(they end with it). The pod's half is in the Spark image's entrypoint: ``127.0.0.1:<port>`` in the pod forwarded
to ``<gateway>:<port>``. So a job that hard-codes ``localhost:9092``, and the ``127.0.0.1:<port>`` addresses
Kafka advertises, work unchanged from an executor pod; the packets stay on the bridge and the loopback, and the
Toxiproxy between the job and the brokers stays in the path (network faults on the job's links still act)."""

from __future__ import annotations

import socket
import threading

from pytest_streamchaos.machine.ports import HOST


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
    """Listeners on ``address`` (the bridge's gateway) relaying each port to the same port of the loopback."""

    def __init__(self, address: str) -> None:
        self.address = address
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
                upstream = socket.create_connection((HOST, port), timeout=10)
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
