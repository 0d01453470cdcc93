"""YARN's REST API as the plugin reads and drives it: the ResourceManager's ``/ws/v1/cluster/...`` and
a NodeManager's ``/ws/v1/node/...``.

The ``parse_*`` functions are pure (JSON in, frozen records out; ``tests/unit/test_yarn_rest.py`` feeds
them documents a real Hadoop 3.5.0 answered). :class:`ResourceManagerApi` does the HTTP: reads, and the
two things YARN lets a client do to a running application that the faults use -- signal one of its
containers (``POST /ws/v1/cluster/containers/{id}/signal/{command}``: the REST face of the client
protocol's ``signalToContainer``, what ``yarn container -signal`` calls) and kill it
(``PUT /ws/v1/cluster/apps/{id}/state``). Writes go as the user ``user.name`` names (YARN's "simple"
authentication); a cluster with ACLs or Kerberos refuses them, and the error says so.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_streamchaos.stack.base import StackError

#: how long one request may take (a paused ResourceManager accepts the connection and never answers)
TIMEOUT_S = 2.0
#: the commands YARN's SignalContainerCommand knows: SIGTERM, SIGKILL, SIGQUIT (a thread dump)
SIGNAL_COMMANDS = ("GRACEFUL_SHUTDOWN", "FORCEFUL_SHUTDOWN", "OUTPUT_THREAD_DUMP")
#: application states in which it still holds (or waits for) containers
LIVE_APP_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")

# No proxy for the cluster's own addresses, whatever the environment says.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class YarnApiError(StackError):
    """YARN's REST API refused a request or answered something unexpected; the message says which."""


class YarnUnreachable(YarnApiError):
    """Nothing answered at the address (down, paused, or not a YARN daemon)."""


@dataclass(frozen=True)
class ClusterInfo:
    """``/ws/v1/cluster/info``."""

    id: int  #: the RM's start time in ms: a restarted RM has a new one
    state: str  #: ``STARTED`` once it serves
    ha_state: str  #: ``ACTIVE`` / ``STANDBY`` (``ACTIVE`` without HA)
    version: str  #: e.g. ``3.5.0``
    started_on: int  #: ms since the epoch


@dataclass(frozen=True)
class YarnNode:
    """One NodeManager as the RM sees it (``/ws/v1/cluster/nodes``)."""

    id: str  #: ``host:port`` of its container-manager RPC: YARN's NodeId
    state: str  #: ``NEW``, ``RUNNING``, ``UNHEALTHY``, ``LOST``, ``SHUTDOWN``, ``DECOMMISSIONED`` ...
    http_address: str  #: ``host:port`` of its web server
    containers: int  #: running containers
    used_mb: int
    available_mb: int
    health_report: str = ""

    @property
    def serving(self) -> bool:
        """RUNNING with its memory announced: the RM can place containers on it. A NodeManager is counted
        RUNNING as it registers, and its resources show in the RM's answer a heartbeat later (seen once as
        0 MB available right after the start)."""
        return self.state == "RUNNING" and self.available_mb + self.used_mb > 0


@dataclass(frozen=True)
class YarnApp:
    """One application (``/ws/v1/cluster/apps``)."""

    id: str  #: ``application_<cluster ts>_<n>``
    name: str
    state: str  #: ``NEW`` .. ``ACCEPTED``, ``RUNNING``, ``FINISHED``, ``FAILED``, ``KILLED``
    final_status: str  #: ``UNDEFINED`` while running, then ``SUCCEEDED`` / ``FAILED`` / ``KILLED``
    tags: tuple[str, ...] = ()
    running_containers: int = 0
    started_time: int = 0
    diagnostics: str = ""

    @property
    def live(self) -> bool:
        return self.state in LIVE_APP_STATES


@dataclass(frozen=True)
class AppAttempt:
    """One attempt of an application: an ApplicationMaster's life (``/apps/{id}/appattempts``)."""

    number: int  #: 1, 2, ...
    attempt_id: str  #: ``appattempt_<cluster ts>_<n>_<number, 6 digits>``
    am_container_id: str  #: the AM's container
    node_id: str
    start_time: int  #: ms since the epoch
    finished_time: int = 0  #: 0 while it runs
    state: str = ""  #: ``RUNNING``, ``FAILED``, ``FINISHED`` ... (empty on YARNs that do not say)
    diagnostics: str = ""


@dataclass(frozen=True)
class YarnContainer:
    """A running container of an attempt as the RM reports it, or any container as its NodeManager does."""

    id: str  #: ``container_<cluster ts>_<app>_<attempt>_<n>`` (``container_e<epoch>_...`` after an RM restart)
    node_id: str
    state: str  #: RM: ``RUNNING`` ...; NM: ``RUNNING``, ``KILLING``, ``EXITED_WITH_FAILURE``, ``DONE`` ...
    exit_status: int | None = None  #: once completed (137: SIGKILL; -100: its node was lost ...)
    memory_mb: int = 0
    diagnostics: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def number(self) -> int:
        """The container's sequence number in its attempt (1: the ApplicationMaster)."""
        return int(self.id.rsplit("_", 1)[1])

    def _id_parts(self) -> list[str]:
        """``[cluster ts, app, attempt, number]`` of the id (an RM epoch part ``e<k>`` left out)."""
        return [p for p in self.id.split("_")[1:] if not p.startswith("e")]

    @property
    def app_id(self) -> str:
        """``application_<ts>_<n>`` the container belongs to."""
        ts, app = self._id_parts()[:2]
        return f"application_{ts}_{app}"

    @property
    def attempt_id(self) -> str:
        """``appattempt_<ts>_<n>_<attempt>`` the container belongs to."""
        ts, app, attempt = self._id_parts()[:3]
        return f"appattempt_{ts}_{app}_{int(attempt):06d}"


# -- parsing (pure) ---------------------------------------------------------------------------------

def _items(doc: Mapping[str, Any] | None, outer: str, inner: str) -> list[dict[str, Any]]:
    """``doc[outer][inner]`` as a list. YARN writes ``{}``, ``{outer: {}}`` or ``null`` for none, may send
    one element as an object instead of a list, and leaves the outer wrapper out on some resources
    (3.5.0's attempt containers: ``{"container": [...]}``)."""
    doc = doc or {}
    box = doc.get(outer) or ({inner: doc[inner]} if inner in doc else {})
    items = box.get(inner) if isinstance(box, Mapping) else box
    if items is None:
        return []
    return [dict(items)] if isinstance(items, Mapping) else list(items)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def parse_info(doc: Mapping[str, Any]) -> ClusterInfo:
    """``/ws/v1/cluster/info``."""
    info = doc.get("clusterInfo")
    if not isinstance(info, Mapping):
        raise YarnApiError(f"no clusterInfo in the answer: {str(doc)[:200]}")
    return ClusterInfo(_int(info.get("id")), str(info.get("state", "")), str(info.get("haState", "ACTIVE")),
                       str(info.get("resourceManagerVersion", "")), _int(info.get("startedOn")))


def parse_nodes(doc: Mapping[str, Any]) -> list[YarnNode]:
    """``/ws/v1/cluster/nodes``."""
    return [YarnNode(str(n.get("id")), str(n.get("state")), str(n.get("nodeHTTPAddress", "")),
                     _int(n.get("numContainers")), _int(n.get("usedMemoryMB")), _int(n.get("availMemoryMB")),
                     str(n.get("healthReport") or "")) for n in _items(doc, "nodes", "node")]


def _app(a: Mapping[str, Any]) -> YarnApp:
    tags = a.get("applicationTags") or ""
    return YarnApp(str(a.get("id")), str(a.get("name", "")), str(a.get("state", "")), str(a.get("finalStatus", "")),
                   tuple(t for t in str(tags).split(",") if t), _int(a.get("runningContainers")),
                   _int(a.get("startedTime")), str(a.get("diagnostics") or ""))


def parse_apps(doc: Mapping[str, Any]) -> list[YarnApp]:
    """``/ws/v1/cluster/apps``."""
    return [_app(a) for a in _items(doc, "apps", "app")]


def parse_app(doc: Mapping[str, Any]) -> YarnApp:
    """``/ws/v1/cluster/apps/{id}``."""
    app = doc.get("app")
    if not isinstance(app, Mapping):
        raise YarnApiError(f"no app in the answer: {str(doc)[:200]}")
    return _app(app)


def parse_attempts(doc: Mapping[str, Any]) -> list[AppAttempt]:
    """``/ws/v1/cluster/apps/{id}/appattempts``, by attempt number."""
    found = [AppAttempt(_int(a.get("id")), str(a.get("appAttemptId", "")), str(a.get("containerId", "")),
                        str(a.get("nodeId", "")), _int(a.get("startTime")), _int(a.get("finishedTime")),
                        str(a.get("appAttemptState", "")), str(a.get("diagnostics") or ""))
             for a in _items(doc, "appAttempts", "appAttempt")]
    return sorted(found, key=lambda a: a.number)


def parse_rm_containers(doc: Mapping[str, Any]) -> list[YarnContainer]:
    """``/ws/v1/cluster/apps/{id}/appattempts/{attempt}/containers``: the attempt's running containers."""
    return [YarnContainer(str(c.get("containerId")), str(c.get("assignedNodeId") or c.get("nodeId") or ""),
                          str(c.get("containerState", "")),
                          # the RM writes 0 while a container runs: only a completed one has an exit status
                          _exit_status(c.get("containerExitStatus")) if c.get("containerState") == "COMPLETE" else None,
                          _int(c.get("allocatedMB")), str(c.get("diagnosticsInfo") or ""), dict(c))
            for c in _items(doc, "containers", "container")]


def _exit_status(value: object) -> int | None:
    """YARN's exit status, None while the container runs (YARN writes its INVALID, -1000, for that)."""
    status = _int(value, -1000)
    return None if status == -1000 else status


def parse_nm_containers(doc: Mapping[str, Any]) -> list[YarnContainer]:
    """A NodeManager's ``/ws/v1/node/containers``: the containers it runs or has just finished."""
    return [YarnContainer(str(c.get("id")), str(c.get("nodeId", "")), str(c.get("state", "")),
                          _exit_status(c.get("exitCode")), _int(c.get("totalMemoryNeededMB")),
                          str(c.get("diagnostics") or ""), dict(c))
            for c in _items(doc, "containers", "container")]


# -- HTTP ---------------------------------------------------------------------------------------------

def http_json(url: str, *, timeout: float = TIMEOUT_S) -> Any:
    """The JSON document at ``url`` (errors as :func:`http_call`'s)."""
    text = http_call(url, timeout=timeout)
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        raise YarnApiError(f"GET {url}: not JSON (not a YARN REST API?): {text[:120]!r}") from None


def http_call(url: str, *, method: str = "GET", body: Any = None, timeout: float = TIMEOUT_S) -> str:
    """What ``url`` answers to ``method`` (``body`` sent as JSON). :class:`YarnUnreachable` when nothing
    answers, :class:`YarnApiError` naming the status and YARN's message when it refuses. (A write's
    answer is not always JSON: a signal is acknowledged with the text ``signal success``.)"""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Accept": "application/json", "Content-Type": "application/json"})
    try:
        with _HTTP.open(req, timeout=timeout) as resp:
            text = resp.read().decode()
    except urllib.error.HTTPError as exc:
        raise YarnApiError(f"{method} {url}: HTTP {exc.code}: {_remote_message(exc)}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise YarnUnreachable(f"{method} {url}: no answer ({exc})") from None
    return text


def _remote_message(exc: urllib.error.HTTPError) -> str:
    """YARN's own one-line reason of an error answer (``RemoteException.message``), else the body's start."""
    try:
        text = exc.read().decode(errors="replace")
    except OSError:
        return exc.reason or ""
    try:
        remote = json.loads(text).get("RemoteException") or {}
        return str(remote.get("message") or remote.get("exception") or text[:200])
    except (ValueError, AttributeError):
        return text[:200].strip()


class ResourceManagerApi:
    """The REST API of one ResourceManager at ``address`` (``host:port`` of its web server)."""

    def __init__(self, address: str, user: str = "", timeout: float = TIMEOUT_S) -> None:
        self.address, self.timeout = address, timeout
        self.user = user  #: who the writes claim to be (YARN's simple authentication); "" for its static user
        self.base = f"http://{address}/ws/v1/cluster"

    def __repr__(self) -> str:
        return f"<ResourceManagerApi {self.base}>"

    def get(self, path: str) -> Any:
        """The JSON document at ``/ws/v1/cluster<path>``."""
        return http_json(self.base + path, timeout=self.timeout)

    def info(self) -> ClusterInfo:
        return parse_info(self.get("/info"))

    def nodes(self) -> list[YarnNode]:
        """Every NodeManager the RM knows, whatever its state (LOST ones too)."""
        return parse_nodes(self.get("/nodes?states=" + ",".join(_NODE_STATES)))

    def apps(self, states: Sequence[str] = (), tag: str = "") -> list[YarnApp]:
        """Applications, optionally only in ``states`` or carrying ``tag`` (``spark.yarn.tags``)."""
        query = "&".join(q for q in (f"states={','.join(states)}" if states else "",
                                     f"applicationTags={tag}" if tag else "") if q)
        return parse_apps(self.get("/apps" + (f"?{query}" if query else "")))

    def app(self, app_id: str) -> YarnApp:
        return parse_app(self.get(f"/apps/{app_id}"))

    def attempts(self, app_id: str) -> list[AppAttempt]:
        return parse_attempts(self.get(f"/apps/{app_id}/appattempts"))

    def containers(self, app_id: str, attempt_id: str) -> list[YarnContainer]:
        """The running containers of one attempt (the AM's among them)."""
        return parse_rm_containers(self.get(f"/apps/{app_id}/appattempts/{attempt_id}/containers"))

    def signal_container(self, container_id: str, command: str = "FORCEFUL_SHUTDOWN") -> None:
        """Ask YARN to signal a container (:data:`SIGNAL_COMMANDS`); the RM passes it to the container's
        NodeManager on its next heartbeat, which signals the container's process group."""
        if command not in SIGNAL_COMMANDS:
            raise ValueError(f"command={command!r}: YARN signals with one of {SIGNAL_COMMANDS}")
        http_call(f"{self.base}/containers/{container_id}/signal/{command}{self._as_user()}", method="POST",
                  timeout=self.timeout)

    def kill_app(self, app_id: str) -> None:
        """Ask YARN to kill an application (all its attempts and containers)."""
        http_call(f"{self.base}/apps/{app_id}/state{self._as_user()}", method="PUT", body={"state": "KILLED"},
                  timeout=self.timeout)

    def _as_user(self) -> str:
        return f"?user.name={self.user}" if self.user else ""


#: every state a node can be in (the RM lists only the live ones unless asked)
_NODE_STATES = ("NEW", "RUNNING", "UNHEALTHY", "DECOMMISSIONING", "DECOMMISSIONED", "LOST", "REBOOTED", "SHUTDOWN")


def nm_containers(http_address: str, timeout: float = TIMEOUT_S) -> list[YarnContainer]:
    """The containers a NodeManager runs or has just finished (its ``/ws/v1/node/containers``)."""
    return parse_nm_containers(http_json(f"http://{http_address}/ws/v1/node/containers", timeout=timeout))
