"""Kubernetes' own events of a job's pods on its timeline (issue 51), by polling the API server: a pod created,
Running, terminating (its deletion asked for), gone, or ended (its phase and its container's exit code and
reason: ``OOMKilled``, ``Error``), and the Kubernetes events of those pods (``Killing``, ``Started``, ...)."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

from pytest_streamchaos.events import StrEnum
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.k8s import K8sKind
from pytest_streamchaos.stack.k8s.api import Api, ApiError

NAMESPACE = "default"


def pods(api: Api, selector: str) -> list[dict[str, Any]]:
    """The pods of ``selector`` (a label selector) now."""
    query = urllib.parse.urlencode({"labelSelector": selector})
    return list(api.get(f"/api/v1/namespaces/{NAMESPACE}/pods?{query}").get("items", []))


def pod_ended(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The pod's end (its phase, its container's exit code and reason: ``OOMKilled``, ``Error``), None before."""
    status = pod.get("status", {})
    phase = status.get("phase", "Pending")
    container: dict[str, Any] = next(iter(status.get("containerStatuses") or []), {})
    ended = container.get("state", {}).get("terminated")
    if phase in ("Succeeded", "Failed") or ended:
        return {"phase": phase, "exit_code": (ended or {}).get("exitCode"),
                "reason": (ended or {}).get("reason", status.get("reason", ""))}
    return None


def disruption(pod: dict[str, Any] | None) -> str | None:
    """The reason of the pod's ``DisruptionTarget`` condition (an eviction: ``EvictionByEvictionAPI``), or None."""
    for cond in (pod or {}).get("status", {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return str(cond.get("reason", ""))
    return None


def _state(pod: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    status = pod.get("status", {})
    phase = status.get("phase", "Pending")
    if pod["metadata"].get("deletionTimestamp"):
        why = disruption(pod)
        return "terminating", {} if why is None else {"disruption": why}
    ended = pod_ended(pod)
    if ended is not None:
        return "ended", ended
    if phase == "Running":
        return "running", {"ip": status.get("podIP", "")}
    return "created", {}


_KIND = {"created": K8sKind.K8S_POD_CREATED, "running": K8sKind.K8S_POD_RUNNING,
         "terminating": K8sKind.K8S_POD_TERMINATING, "ended": K8sKind.K8S_POD_ENDED}


class PodWatcher:
    """Polls the pods of ``selector`` every ``interval`` seconds and records what changed with ``record``
    (``record(kind, target, **detail)``); a thread of its own until :meth:`stop`."""

    def __init__(self, api: Api, selector: str, record: Callable[..., Any], interval: float = 0.25) -> None:
        self.api, self.selector, self.record, self.interval = api, selector, record, interval
        self.states: dict[str, str] = {}
        self._events: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> PodWatcher:
        self._thread = threading.Thread(target=self._run, daemon=True, name="streamchaos-k8s-pods")
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except ApiError:
                pass  # the API server between lives: the next poll sees what changed

    def poll(self) -> None:
        seen = {}
        for pod in pods(self.api, self.selector):
            name = pod["metadata"]["name"]
            state, detail = _state(pod)
            seen[name] = state
            if self.states.get(name) != state:
                # a pod whose container ended and that was deleted at once (Spark deletes a failed executor's
                # pod) is first seen terminating: its end (an OOMKilled) is on the timeline all the same
                end = pod_ended(pod) if state == "terminating" and self.states.get(name) != "ended" else None
                if end is not None:
                    self.record(K8sKind.K8S_POD_ENDED, name, pod=name, **end)
                self.record(_KIND[state], name, pod=name, **detail)
        for name in set(self.states) - set(seen):
            if self.states[name] != "gone":
                self.record(K8sKind.K8S_POD_GONE, name, pod=name)
                seen[name] = "gone"
        self.states.update(seen)
        self._pod_events()

    def _pod_events(self) -> None:
        items = self.api.get(f"/api/v1/namespaces/{NAMESPACE}/events").get("items", [])
        for ev in items:
            obj = ev.get("involvedObject", {})
            uid = ev["metadata"].get("uid", "")
            if obj.get("kind") != "Pod" or obj.get("name") not in self.states or uid in self._events:
                continue
            self._events.add(uid)
            self.record(K8sKind.K8S_EVENT, obj["name"], pod=obj["name"], reason=ev.get("reason", ""),
                        message=ev.get("message", "")[:200], source=ev.get("source", {}).get("component", ""))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


class Timeline:
    """A recorder into a job's timeline list (``record(kind, target, **detail)``)."""

    def __init__(self, events: list[TimelineEvent]) -> None:
        self.events = events

    def record(self, kind: StrEnum, target: str = "", **detail: object) -> TimelineEvent:
        ev = TimelineEvent(time.time(), kind, target, detail)
        self.events.append(ev)
        return ev
