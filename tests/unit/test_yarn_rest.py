"""YARN's REST documents into records (stack/yarn/rest.py) and the watcher's events from them
(stack/yarn/watcher.py), on documents a real Hadoop 3.5.0 ResourceManager and NodeManager answered
(trimmed to the fields read; captured from the mini cluster)."""

from __future__ import annotations

import time

import pytest

from pytest_streamchaos.faults.scheduler import Recorder
from pytest_streamchaos.stack.yarn import rest
from pytest_streamchaos.stack.yarn.watcher import YarnWatcher

TS = 1795669256659
APP = f"application_{TS}_0001"

STORE = "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore"
INFO = {"clusterInfo": {"id": TS, "startedOn": TS, "state": "STARTED", "haState": "ACTIVE", "rmStateStoreName": STORE,
                        "resourceManagerVersion": "3.5.0", "hadoopVersion": "3.5.0"}}


def node(port: int, state: str = "RUNNING", containers: int = 0) -> dict:
    return {"rack": "/default-rack", "state": state, "id": f"localhost:{port}", "nodeHostName": "localhost",
            "nodeHTTPAddress": f"localhost:{port + 1}", "lastHealthUpdate": TS, "version": "3.5.0", "healthReport": "",
            "numContainers": containers, "usedMemoryMB": 896 * containers, "availMemoryMB": 4096 - 896 * containers}


def app(state: str = "RUNNING", final: str = "UNDEFINED") -> dict:
    return {"id": APP, "user": "root", "name": "batch_count", "queue": "root.default", "state": state,
            "finalStatus": final, "progress": 0.0, "diagnostics": "", "clusterId": TS, "applicationType": "SPARK",
            "applicationTags": "streamchaos-8794e60f2ac9", "startedTime": TS + 5434, "finishedTime": 0,
            "runningContainers": 1}


def attempt(n: int, finished: int = 0, state: str = "RUNNING", diagnostics: str = "") -> dict:
    return {"id": n, "startTime": TS + 5484, "finishedTime": finished,
            "containerId": f"container_{TS}_0001_{n:02d}_000001", "nodeHttpAddress": "localhost:20778",
            "nodeId": "localhost:23911", "blacklistedNodes": "", "appAttemptId": f"appattempt_{TS}_0001_{n:06d}",
            "appAttemptState": state, **({"diagnostics": diagnostics} if diagnostics else {})}


def test_cluster_info_and_nodes() -> None:
    info = rest.parse_info(INFO)
    assert (info.id, info.state, info.ha_state, info.version) == (TS, "STARTED", "ACTIVE", "3.5.0")
    nodes = rest.parse_nodes({"nodes": {"node": [node(23911), node(31757, "LOST")]}})
    assert [(n.id, n.state, n.http_address, n.available_mb) for n in nodes] == [
        ("localhost:23911", "RUNNING", "localhost:23912", 4096), ("localhost:31757", "LOST", "localhost:31758", 4096)]
    with pytest.raises(rest.YarnApiError, match="no clusterInfo"):
        rest.parse_info({"RemoteException": {"message": "x"}})


def test_a_node_serves_once_running_with_its_memory_announced() -> None:
    # registered (RUNNING) but its resources not in the RM's answer yet: nothing can be placed on it
    assert not rest.YarnNode("localhost:1", "RUNNING", "localhost:2", 0, 0, 0).serving
    assert rest.YarnNode("localhost:1", "RUNNING", "localhost:2", 0, 0, 4096).serving
    assert rest.YarnNode("localhost:1", "RUNNING", "localhost:2", 4, 4096, 0).serving  # full, still serving
    assert not rest.YarnNode("localhost:1", "LOST", "localhost:2", 0, 0, 4096).serving


def test_empty_and_single_element_collections() -> None:
    """YARN answers ``{"apps": {}}``, ``{}`` or ``{"apps": null}`` for none, and may send one element as an object."""
    assert rest.parse_apps({"apps": {}}) == rest.parse_apps({}) == rest.parse_apps({"apps": None}) == []
    assert rest.parse_rm_containers({}) == [] and rest.parse_nm_containers({"containers": {}}) == []
    assert [a.id for a in rest.parse_apps({"apps": {"app": app()}})] == [APP]


def test_applications_and_their_attempts() -> None:
    (a,) = rest.parse_apps({"apps": {"app": [app()]}})
    assert (a.id, a.state, a.final_status, a.live) == (APP, "RUNNING", "UNDEFINED", True)
    assert a.tags == ("streamchaos-8794e60f2ac9",)
    done = rest.parse_app({"app": app("FINISHED", "SUCCEEDED")})
    assert not done.live and done.final_status == "SUCCEEDED"
    attempts = rest.parse_attempts({"appAttempts": {"appAttempt": [attempt(2), attempt(1, TS + 9000, "FAILED", "x")]}})
    assert [(t.number, t.state, t.finished_time) for t in attempts] == [(1, "FAILED", TS + 9000), (2, "RUNNING", 0)]
    assert attempts[1].am_container_id == f"container_{TS}_0001_02_000001"
    assert attempts[1].attempt_id == f"appattempt_{TS}_0001_000002"


def test_container_ids_name_their_application_and_attempt_also_after_an_rm_restart() -> None:
    c = rest.YarnContainer(f"container_{TS}_0001_02_000003", "localhost:1", "RUNNING")
    assert (c.app_id, c.attempt_id, c.number) == (APP, f"appattempt_{TS}_0001_000002", 3)
    epoch = rest.YarnContainer(f"container_e01_{TS}_0001_01_000004", "localhost:1", "RUNNING")
    assert (epoch.app_id, epoch.attempt_id, epoch.number) == (APP, f"appattempt_{TS}_0001_000001", 4)


def test_signal_commands_are_checked_before_anything_is_sent() -> None:
    api = rest.ResourceManagerApi("127.0.0.1:1")
    with pytest.raises(ValueError, match="FORCEFUL_SHUTDOWN"):
        api.signal_container(f"container_{TS}_0001_01_000002", "SIGKILL")


def test_nothing_listening_is_unreachable_in_one_line() -> None:
    from pytest_streamchaos.machine.ports import PortRegistry

    with pytest.raises(rest.YarnUnreachable, match="no answer") as exc:
        rest.ResourceManagerApi(f"127.0.0.1:{PortRegistry().free()}", timeout=0.5).info()
    assert "\n" not in str(exc.value)


def test_running_containers_have_no_exit_status_and_the_wrapper_may_be_missing() -> None:
    """3.5.0 answers an attempt's containers as ``{"container": [...]}`` with ``containerExitStatus`` 0
    while they run; a NodeManager wraps them and writes -1000 (YARN's INVALID) for a running one."""
    rm = rest.parse_rm_containers({"container": [
        {"containerId": f"container_{TS}_0001_01_000001", "allocatedMB": 896, "assignedNodeId": "localhost:17882",
         "containerExitStatus": 0, "containerState": "RUNNING", "nodeId": "localhost:17882"},
        {"containerId": f"container_{TS}_0001_01_000002", "allocatedMB": 896, "assignedNodeId": "localhost:31826",
         "containerExitStatus": 137, "containerState": "COMPLETE", "nodeId": "localhost:31826"}]})
    assert [(c.number, c.node_id, c.exit_status) for c in rm] == [(1, "localhost:17882", None),
                                                                  (2, "localhost:31826", 137)]
    nm = rest.parse_nm_containers({"containers": {"container": [
        {"id": f"container_{TS}_0001_01_000002", "state": "RUNNING", "exitCode": -1000, "diagnostics": "",
         "user": "root", "totalMemoryNeededMB": 896, "nodeId": "localhost:31826"},
        {"id": f"container_{TS}_0001_01_000003", "state": "EXITED_WITH_FAILURE", "exitCode": 137,
         "diagnostics": "Container killed on request. Exit code is 137", "nodeId": "localhost:31826"}]}})
    assert [(c.state, c.exit_status) for c in nm] == [("RUNNING", None), ("EXITED_WITH_FAILURE", 137)]


class ScriptedYarn:
    """What the RM and NodeManagers answer at each step of a scripted history (set the fields, then poll)."""

    def __init__(self) -> None:
        self.rm_id, self.nodes_, self.app_state = TS, {"localhost:1": "RUNNING", "localhost:2": "RUNNING"}, "RUNNING"
        self.attempts_ = [rest.AppAttempt(1, f"appattempt_{TS}_0001_000001", cid(1, 1), "localhost:1", TS)]
        self.running: dict[str, list[rest.YarnContainer]] = {}  # attempt id -> running containers
        self.nm: dict[str, list[rest.YarnContainer]] = {}  # NodeManager web address -> its containers
        self.up = True

    def info(self) -> rest.ClusterInfo:
        if not self.up:
            raise rest.YarnUnreachable("down")
        return rest.ClusterInfo(self.rm_id, "STARTED", "ACTIVE", "3.5.0", self.rm_id)

    def nodes(self) -> list[rest.YarnNode]:
        return [rest.YarnNode(n, s, n.replace("localhost", "web"), 0, 0, 4096) for n, s in self.nodes_.items()]

    def app(self, app_id: str) -> rest.YarnApp:
        return rest.YarnApp(app_id, "job", self.app_state, "UNDEFINED")

    def attempts(self, app_id: str) -> list[rest.AppAttempt]:
        return list(self.attempts_)

    def containers(self, app_id: str, attempt_id: str) -> list[rest.YarnContainer]:
        return list(self.running.get(attempt_id, []))


def cid(attempt: int, n: int) -> str:
    return f"container_{TS}_0001_{attempt:02d}_{n:06d}"


def running(attempt: int, *numbers_nodes: tuple[int, str]) -> list[rest.YarnContainer]:
    return [rest.YarnContainer(cid(attempt, n), node, "RUNNING") for n, node in numbers_nodes]


def completed(rec: Recorder, container: str) -> list:
    return [e for e in rec.events() if e.kind == "yarn_container_completed" and e.target == container]


def test_watcher_turns_yarns_states_into_events_stamped_when_seen(monkeypatch) -> None:
    from pytest_streamchaos.stack.yarn import watcher as w

    yarn = ScriptedYarn()
    monkeypatch.setattr(w, "nm_containers", lambda addr, timeout=2.0: list(yarn.nm.get(addr, [])))
    att1 = f"appattempt_{TS}_0001_000001"
    yarn.running[att1] = running(1, (1, "localhost:1"), (2, "localhost:2"), (3, "localhost:2"))
    rec = Recorder()
    watcher = YarnWatcher(yarn, rec, app_ids=(APP,))  # type: ignore[arg-type]
    assert watcher.poll_once() == []  # the baseline: nothing recorded

    def step() -> list[tuple[str, str]]:
        return [(kind, target) for kind, target, _ in watcher.poll_once()]

    # an executor signalled: its NodeManager says it exited 137 while the RM still lists it, then it is gone
    yarn.nm["web:2"] = [rest.YarnContainer(cid(1, 2), "localhost:2", "EXITED_WITH_FAILURE", 137, diagnostics="killed")]
    assert step() == []
    between = time.time()
    yarn.running[att1] = running(1, (1, "localhost:1"), (3, "localhost:2"), (4, "localhost:1"))
    assert step() == [("yarn_container_started", cid(1, 4)), ("yarn_container_completed", cid(1, 2))]
    (done,) = completed(rec, cid(1, 2))
    assert done.detail["exit_status"] == 137 and done.detail["am"] is False
    assert done.t <= between, "stamped when its NodeManager first said so, not when the RM stopped listing it"
    # the node of container 3 is lost: the RM says LOST and no longer lists it; its exit status is unknown
    yarn.nodes_["localhost:2"], yarn.nm = "LOST", {}
    yarn.running[att1] = running(1, (1, "localhost:1"), (4, "localhost:1"))
    assert step() == [("yarn_node_lost", "localhost:2"), ("yarn_container_completed", cid(1, 3))]
    assert completed(rec, cid(1, 3))[0].detail["exit_status"] is None
    # the RM restarts: before the nodes register again it lists no container, and none counts as completed
    yarn.rm_id, yarn.nodes_, yarn.running[att1] = TS + 1, {}, []
    assert step() == [("yarn_rm_started", "resourcemanager")]
    yarn.nodes_ = {"localhost:1": "RUNNING"}
    yarn.running[att1] = running(1, (1, "localhost:1"), (4, "localhost:1"))
    assert step() == [("yarn_node_running", "localhost:1")]
    # the AM is lost: attempt 1 ends, attempt 2 starts, every container of attempt 1 completes
    yarn.attempts_ = [rest.AppAttempt(1, att1, cid(1, 1), "localhost:1", TS, TS + 9, "FAILED", "exitCode: 137"),
                      rest.AppAttempt(2, f"appattempt_{TS}_0001_000002", cid(2, 1), "localhost:1", TS + 10)]
    yarn.running = {f"appattempt_{TS}_0001_000002": running(2, (1, "localhost:1"))}
    got = step()
    assert got[:3] == [("yarn_attempt_ended", APP), ("yarn_attempt_started", APP),
                       ("yarn_container_started", cid(2, 1))]
    assert sorted(got[3:]) == [("yarn_container_completed", cid(1, 1)), ("yarn_container_completed", cid(1, 4))]
    assert completed(rec, cid(1, 1))[0].detail["am"] is True
    # the RM does not answer: nothing is made up
    yarn.up = False
    assert step() == []
