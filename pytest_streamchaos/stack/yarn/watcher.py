"""YARN's own events on a run's timeline, read from its REST API (so the same on an attached cluster).

A background thread polls the ResourceManager (``/info``, ``/nodes``, the watched applications, their
attempts and running containers) and, for the exit status of a container that completed, the
NodeManager that ran it (``/ws/v1/node/containers``: the RM lists running containers only). Each change
becomes one event, stamped when it was first observed (``recorder.record``, on ``time.time``; YARN's own
time, where it has one, in ``detail["yarn_time"]``, in seconds):

========================= ============== =====================================================
kind                      target         detail
========================= ============== =====================================================
``yarn_rm_started``       resourcemanager a new RM process serves (after a restart: ``id``)
``yarn_node_<state>``     node id        a node entered ``state`` (``lost``, ``running``, ...)
``yarn_app_<state>``      app id         the application entered ``state`` (``accepted`` ...)
``yarn_attempt_started``  app id         ``attempt``, ``am_container``, ``node``
``yarn_attempt_ended``    app id         ``attempt``, ``state``, ``diagnostics``
``yarn_container_started`` container id  ``app``, ``node``, ``am``
``yarn_container_completed`` container id ``app``, ``node``, ``am``, ``exit_status`` (None when
                                         its node was lost before it said), ``diagnostics``
========================= ============== =====================================================

The state at :meth:`YarnWatcher.start` is the baseline: only changes after it are recorded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.events import Records
from pytest_streamchaos.poll import Every
from pytest_streamchaos.stack.service import Service
from pytest_streamchaos.stack.yarn import YarnKind
from pytest_streamchaos.stack.yarn.rest import (
    AppAttempt,
    ResourceManagerApi,
    YarnApiError,
    YarnContainer,
    nm_containers,
)

#: node states in which the RM does not know a node's containers yet (after its own restart: not registered)
_UNSETTLED = (None, "NEW", "REBOOTED")
#: NodeManager container states that mean it has finished (its exit code is known)
_NM_DONE = ("EXITED_WITH_SUCCESS", "EXITED_WITH_FAILURE", "CONTAINER_CLEANEDUP_AFTER_KILL", "DONE", "COMPLETE")


@dataclass
class _Seen:
    """What the watcher knew after its last poll."""

    rm_id: int | None = None
    nodes: dict[str, str] = field(default_factory=dict)  #: node id -> state
    node_http: dict[str, str] = field(default_factory=dict)  #: node id -> its web address
    apps: dict[str, str] = field(default_factory=dict)  #: app id -> state
    attempts: dict[str, dict[int, AppAttempt]] = field(default_factory=dict)  #: app id -> number -> attempt
    running: dict[str, YarnContainer] = field(default_factory=dict)  #: container id -> container
    exits: dict[str, tuple[int | None, str, float]] = field(default_factory=dict)  #: id -> (exit, diag, seen at)


#: one event a poll saw: its kind, target and detail (``observed_at``: when, on ``time.time``)
Seen = tuple[YarnKind, str, dict[str, Any]]

class YarnWatcher(Service):
    """Records YARN's events for the applications with ``app_ids`` or carrying ``tag`` (see the module
    docstring), polling every ``interval`` seconds."""

    def __init__(self, api: ResourceManagerApi, recorder: Records, *, app_ids: tuple[str, ...] = (), tag: str = "",
                 interval: float = 0.5) -> None:
        self.api, self.recorder, self.interval = api, recorder, interval
        self.app_ids, self.tag = tuple(app_ids), tag
        self._seen = _Seen()
        self._baseline = True
        self._polling = Every(self.poll_once, interval, "yarn-watcher")

    def start(self) -> YarnWatcher:
        """Take the baseline (nothing recorded) and start polling."""
        self.poll_once()
        self._polling.start()
        return self

    def stop(self) -> None:
        """Stop polling (idempotent), after one last look."""
        if self._polling.stop():
            self.poll_once()

    def poll_once(self) -> list[Seen]:
        """One observation; records and returns the (kind, target, detail) events it saw."""
        events: list[Seen] = []
        try:
            self._rm(events)
            self._nodes(events)
            for app_id in self._watched():
                self._app(app_id, events)
        except YarnApiError:
            pass  # the RM is down or paused: what it would say is seen once it answers again
        if self._baseline:
            self._baseline = False
            return []
        for kind, target, detail in events:
            seen = {k: v for k, v in detail.items() if k != "observed_at"}
            self.recorder.record(kind, target, t=detail.get("observed_at"), **seen)
        return events

    # -- the parts ---------------------------------------------------------------------------------
    def _rm(self, events: list[Seen]) -> None:
        info = self.api.info()
        if info.id != self._seen.rm_id:
            events.append((YarnKind.YARN_RM_STARTED, "resourcemanager",
                           {"id": info.id, "yarn_time": info.started_on / 1000}))
            self._seen.nodes.clear()  # a new RM knows no node until it registers again
        self._seen.rm_id = info.id

    def _nodes(self, events: list[Seen]) -> None:
        for node in self.api.nodes():
            before = self._seen.nodes.get(node.id)
            if node.state != before and node.state != "NEW":
                events.append((YarnKind.node(node.state), node.id,
                               {"from": before, "health": node.health_report}))
            self._seen.nodes[node.id] = node.state
            self._seen.node_http[node.id] = node.http_address

    def _watched(self) -> list[str]:
        ids = list(self.app_ids)
        if self.tag:
            ids += [a.id for a in self.api.apps(tag=self.tag) if a.id not in ids]
        return ids

    def _app(self, app_id: str, events: list[Seen]) -> None:
        app = self.api.app(app_id)
        if app.state != self._seen.apps.get(app_id):
            events.append((YarnKind.app(app.state), app_id, {"final_status": app.final_status}))
        self._seen.apps[app_id] = app.state
        known = self._seen.attempts.setdefault(app_id, {})
        for att in self.api.attempts(app_id):
            old = known.get(att.number)
            if old is None:
                events.append((YarnKind.YARN_ATTEMPT_STARTED, app_id, {
                    "attempt": att.number, "am_container": att.am_container_id, "node": att.node_id,
                    "yarn_time": att.start_time / 1000}))
            if att.finished_time and not (old and old.finished_time):
                events.append((YarnKind.YARN_ATTEMPT_ENDED, app_id, {"attempt": att.number, "state": att.state,
                                                              "diagnostics": att.diagnostics[:500],
                                                              "yarn_time": att.finished_time / 1000}))
            known[att.number] = att
            if not att.finished_time:
                self._containers(app_id, att, events)
        if not app.live:  # a finished application's containers are all gone
            self._containers_gone(app_id, set(), events)

    def _containers(self, app_id: str, att: AppAttempt, events: list[Seen]) -> None:
        running = {c.id: c for c in self.api.containers(app_id, att.attempt_id)}
        for cid, c in running.items():
            if cid not in self._seen.running:
                events.append((YarnKind.YARN_CONTAINER_STARTED, cid, {"app": app_id, "node": c.node_id,
                                                               "am": cid == att.am_container_id}))
        self._seen.running.update(running)
        self._note_exits(app_id)
        self._containers_gone(app_id, set(running), events, attempt=att.attempt_id)

    def _containers_gone(self, app_id: str, running: set[str], events: list, attempt: str | None = None) -> None:
        """Containers of ``app_id`` (of ``attempt``, or of any once the attempt ended) that are no longer running."""
        for cid, c in list(self._seen.running.items()):
            if c.app_id != app_id or cid in running or (attempt is not None and c.attempt_id != attempt
                                                        and not self._attempt_ended(app_id, c.attempt_id)):
                continue
            if cid not in self._seen.exits and self._seen.nodes.get(c.node_id) in _UNSETTLED and attempt is not None:
                continue  # its node has not (re-)registered with this RM: the RM cannot list its containers yet
            del self._seen.running[cid]
            exit_status, diag, seen_at = self._seen.exits.pop(cid, (None, "", time.time()))
            am = any(a.am_container_id == cid for a in self._seen.attempts.get(app_id, {}).values())
            events.append((YarnKind.YARN_CONTAINER_COMPLETED, cid, {"app": app_id, "node": c.node_id, "am": am,
                                                             "exit_status": exit_status, "diagnostics": diag[:300],
                                                             "observed_at": seen_at}))

    def _attempt_ended(self, app_id: str, attempt_id: str) -> bool:
        return any(a.attempt_id == attempt_id and a.finished_time for a in self._seen.attempts.get(app_id, {}).values())

    def _note_exits(self, app_id: str) -> None:
        """The exit status of every running container of ``app_id`` whose NodeManager already reports it
        finished (the RM may list it a heartbeat longer)."""
        nodes = {c.node_id for c in self._seen.running.values() if c.app_id == app_id}
        for node in nodes:
            addr = self._seen.node_http.get(node)
            if not addr or self._seen.nodes.get(node) != "RUNNING":
                continue
            try:
                listed = nm_containers(addr)
            except YarnApiError:
                continue
            for c in listed:
                if c.id in self._seen.running and c.state in _NM_DONE and c.id not in self._seen.exits:
                    self._seen.exits[c.id] = (c.exit_status, c.diagnostics, time.time())
