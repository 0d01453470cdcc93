"""The pods' way to the host's Kafka (the relay: the bridge's address to the same port of the loopback) and the
pod watcher's reading of the API server's pod list (synthetic answers of the shape the API server gives)."""

from __future__ import annotations

import socket
import threading

from pytest_streamchaos.stack.k8s import K8sKind
from pytest_streamchaos.stack.k8s.relay import Relay
from pytest_streamchaos.stack.k8s.watcher import PodWatcher


def test_the_relay_carries_a_connection_to_the_same_port_of_the_loopback() -> None:
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(1)
    port = upstream.getsockname()[1]

    def echo() -> None:
        conn, _ = upstream.accept()
        with conn:
            conn.sendall(conn.recv(100).upper())

    threading.Thread(target=echo, daemon=True).start()
    relay = Relay("127.0.0.2")  # stands in for the bridge's address: another address of this host
    try:
        relay.add(port)
        relay.add(port)  # once only
        with socket.create_connection(("127.0.0.2", port), timeout=5) as client:
            client.sendall(b"orders")
            assert client.recv(100) == b"ORDERS"
    finally:
        relay.stop()
        upstream.close()
    assert not relay.listeners


class _Api:
    def __init__(self) -> None:
        self.pods: list[dict] = []
        self.events: list[dict] = []

    def get(self, path: str) -> dict:
        return {"items": self.pods if "/pods" in path else self.events}


def _pod(name: str, phase: str, **extra: object) -> dict:
    return {"metadata": {"name": name, **extra.pop("meta", {})}, "status": {"phase": phase, **extra}}


def test_the_watcher_records_each_change_of_a_pod_once() -> None:
    api, seen = _Api(), []
    watcher = PodWatcher(api, "streamchaos-job=t", lambda kind, target, **d: seen.append((kind, target, d)))  # type: ignore[arg-type]
    api.pods = [_pod("exec-1", "Pending")]
    watcher.poll()
    api.pods = [_pod("exec-1", "Running", podIP="10.244.0.5")]
    watcher.poll()
    watcher.poll()
    api.pods = [_pod("exec-1", "Running", meta={"deletionTimestamp": "now"})]
    api.events = [{"metadata": {"uid": "e1"}, "involvedObject": {"kind": "Pod", "name": "exec-1"},
                   "reason": "Killing", "message": "Stopping container spark-kubernetes-executor",
                   "source": {"component": "kubelet"}}]
    watcher.poll()
    api.pods = [_pod("exec-2", "Failed", containerStatuses=[{"state": {"terminated": {"exitCode": 137,
                                                                                      "reason": "OOMKilled"}}}])]
    watcher.poll()
    kinds = [(k, t) for k, t, _ in seen]
    assert kinds == [(K8sKind.K8S_POD_CREATED, "exec-1"), (K8sKind.K8S_POD_RUNNING, "exec-1"),
                     (K8sKind.K8S_POD_TERMINATING, "exec-1"), (K8sKind.K8S_EVENT, "exec-1"),
                     (K8sKind.K8S_POD_ENDED, "exec-2"), (K8sKind.K8S_POD_GONE, "exec-1")]
    assert seen[3][2]["reason"] == "Killing" and seen[4][2]["exit_code"] == 137 and seen[4][2]["reason"] == "OOMKilled"
